// Box cells of compiled host code (HostAbi.h): the arena they live in (freed
// with the context, when the run ends) and their conversion to interpreter
// cells (results that hold boxes) and back (arguments that hold boxes).
//
// A cell's value is read and written through the codecs the compiled module
// exports (eph.box.read / eph.box.make: the value as slots), so this file
// needs no knowledge of LLVM's value layout. Conversions are memoised in
// both directions, so a cell shared by several values stays one cell, and a
// cell that came in as an argument goes back as the same interpreter cell.
// Chains of cells (a list of 100000 elements is 100000 nested cells) are
// converted children first with an explicit work list, never recursively.
#include <cstring>

#include "runtime/cpu/HostContext.h"

namespace eph::runtime {
namespace {

using llvmtarget::HostBoxCell;

static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= llvmtarget::kHostBoxAlign,
              "arena chunks from operator new[] must be aligned for box cells");

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The cells a value of type t in slots points to (only the active variant
// of a sum counts), advancing p.
void boxesInSlots(const ir::Type* t, const uint64_t*& p, std::vector<const HostBoxCell*>& out) {
  switch (t->kind()) {
    case ir::TypeKind::Box:
      if (*p) out.push_back(reinterpret_cast<const HostBoxCell*>(*p));
      ++p;
      return;
    case ir::TypeKind::Vector: p += t->count(); return;
    case ir::TypeKind::Array:
      for (unsigned k = 0; k < t->count(); ++k) boxesInSlots(t->elem(), p, out);
      return;
    case ir::TypeKind::Struct:
      for (const ir::Type* m : t->members()) boxesInSlots(m, p, out);
      return;
    case ir::TypeKind::Sum: {
      uint64_t tag = *p++;
      for (unsigned k = 0; k < t->members().size(); ++k) {
        if (k == tag) boxesInSlots(t->members()[k], p, out);
        else p += llvmtarget::hostSlotCount(t->members()[k]);
      }
      return;
    }
    default: ++p; return;
  }
}

// The interpreter cells a value holds directly (not those inside them).
void boxesIn(const interp::RtValue& v, std::vector<std::shared_ptr<const interp::BoxCell>>& out) {
  if (v.box) out.push_back(v.box);
  for (const interp::RtValue& e : v.elems) boxesIn(e, out);
}

}  // namespace

void HostContext::setBoxTypes(const ir::Module& m) {
  boxTypeList = llvmtarget::hostBoxTypes(m);
  for (uint32_t i = 0; i < boxTypeList.size(); ++i) boxTypeIndex[boxTypeList[i]] = i;
  boxTypes = boxTypeList.data();
}

std::byte* HostContext::allocBox(size_t bytes) {
  bytes = roundUp(bytes, llvmtarget::kHostBoxAlign);
  if (arenaNext && size_t(arenaEnd - arenaNext) >= bytes) {
    std::byte* p = arenaNext;
    arenaNext += bytes;
    return p;
  }
  arena.bytes += bytes;
  if (bytes > BoxArena::kChunkBytes / 4) {
    // A large cell gets its own chunk; the current one stays in use.
    arena.chunks.emplace_back(new std::byte[bytes]);
    return arena.chunks.back().get();
  }
  arena.chunks.emplace_back(new std::byte[BoxArena::kChunkBytes]);
  std::byte* chunk = arena.chunks.back().get();
  arenaNext = chunk + bytes;
  arenaEnd = chunk + BoxArena::kChunkBytes;
  return chunk;
}

std::shared_ptr<const interp::BoxCell> HostContext::toInterpCell(const HostBoxCell* root) {
  if (!root) return nullptr;
  if (auto it = interpCells.find(root); it != interpCells.end()) return it->second;
  struct Item {
    const HostBoxCell* cell;
    bool childrenPushed;
  };
  std::vector<Item> work = {{root, false}};
  std::vector<uint64_t> slots;
  std::vector<const HostBoxCell*> children;
  while (!work.empty()) {
    const HostBoxCell* cell = work.back().cell;
    if (interpCells.count(cell)) {
      work.pop_back();
      continue;
    }
    auto k = boxTypeIndex.find(cell->type);
    if (k == boxTypeIndex.end() || !boxRead) {
      // Every cell compiled code makes has a table type, and every other
      // cell came from the interpreter (and is in interpCells).
      interpCells[cell] = nullptr;
      work.pop_back();
      continue;
    }
    const ir::Type* t = cell->type;
    slots.assign(llvmtarget::hostSlotCount(t), 0);
    boxRead(k->second, cell, slots.data());
    if (!work.back().childrenPushed) {
      work.back().childrenPushed = true;
      children.clear();
      const uint64_t* p = slots.data();
      boxesInSlots(t, p, children);
      for (const HostBoxCell* child : children)
        if (!interpCells.count(child)) work.push_back({child, false});
      continue;
    }
    work.pop_back();
    const uint64_t* p = slots.data();
    interp::RtValue value = fromSlots(t, p);  // its cells are converted already
    interpCells[cell] = std::make_shared<const interp::BoxCell>(std::move(value));
  }
  return interpCells.at(root);
}

HostBoxCell* HostContext::toCompiledCell(const std::shared_ptr<const interp::BoxCell>& root) {
  if (!root) return nullptr;
  if (auto it = compiledCells.find(root.get()); it != compiledCells.end()) return it->second;
  struct Item {
    std::shared_ptr<const interp::BoxCell> cell;
    bool childrenPushed;
  };
  std::vector<Item> work = {{root, false}};
  std::vector<std::shared_ptr<const interp::BoxCell>> children;
  std::vector<uint64_t> slots;
  while (!work.empty()) {
    const interp::BoxCell* raw = work.back().cell.get();
    if (compiledCells.count(raw)) {
      work.pop_back();
      continue;
    }
    if (!work.back().childrenPushed) {
      work.back().childrenPushed = true;
      children.clear();
      boxesIn(raw->value, children);
      for (auto& child : children)
        if (!compiledCells.count(child.get())) work.push_back({std::move(child), false});
      continue;
    }
    std::shared_ptr<const interp::BoxCell> cell = std::move(work.back().cell);
    work.pop_back();
    const ir::Type* t = cell->value.type;
    HostBoxCell* made = nullptr;
    auto k = t ? boxTypeIndex.find(t) : boxTypeIndex.end();
    if (k != boxTypeIndex.end() && boxMake) {
      slots.clear();
      toSlots(cell->value, t, slots);  // its cells are converted already
      made = boxMake(this, k->second, slots.data());
    } else {
      // No box.get of this module reads this type: compiled code only ever
      // looks at the cell's type (to report a mismatch), and the value goes
      // back as the interpreter's own cell.
      made = reinterpret_cast<HostBoxCell*>(allocBox(llvmtarget::kHostBoxValueOffset));
      made->type = t;
    }
    compiledCells[cell.get()] = made;
    interpCells[made] = std::move(cell);
  }
  return compiledCells.at(root.get());
}

}  // namespace eph::runtime
