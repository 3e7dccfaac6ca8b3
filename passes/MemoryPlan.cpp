// memplan: memory planning for host functions.
//
// Device buffers of static size whose lifetimes do not overlap share storage:
// each group of them becomes one arena allocation, and each buffer a view of
// the arena (buffer.view %arena, %offset, %count). The arena is freed once,
// right after the group's last use, so temporaries that a program frees late
// (or all at the end) stop holding memory once they are dead, and a chain of
// temporaries needs about two of them at a time instead of all.
//
// Candidates, per host function: an `alloc` at the top level of the body (not
// inside an if/for/while/match) of a `linear` device buffer whose count is a
// `const` above 0, freed exactly once by a `free` at the top level, whose
// every other use (and every use of a view of it, through views of views) is a
// dispatch, h2d, d2h, copy, buffer.len or buffer.view that borrows it, all
// before the free. A buffer that is returned, passed to a call, stored in an
// aggregate, yielded, freed inside a region, affine, or of a size known only
// at run time is left as it is.
//
// Lifetimes are intervals of top-level op positions: from the first use to the
// last use (a use nested in a region counts at the position of the top-level
// op that holds it, so a buffer used in a loop is live for the whole loop).
// Two buffers conflict when their intervals meet. Per element type and device,
// the candidates split into segments (maximal runs of intervals that chain by
// overlapping); each segment of two or more buffers is one arena: offsets are
// assigned greedily, largest buffer first, at the lowest offset that clears
// every conflicting buffer already placed (interval colouring, first fit).
// Offsets are aligned to 256 bytes, the largest minStorageBufferOffsetAlignment
// Vulkan allows, so views bind on every device. A segment is packed only when
// its arena is smaller than its buffers together (some storage is reused) and
// at most kMaxArenaBytes, and when it is no larger than the most its buffers
// held at once before (so planning never raises what they hold together).
//
// The rewrite: `%arena = alloc` (a u32 const count) before the segment's first
// use, each buffer's `alloc` replaced by `%b = buffer.view %arena, %off, %n :
// buffer<T, device, write>` before its own first use, the buffers' frees
// removed, and `free %arena` after the segment's last use. The result passes
// the verifier and the linearity pass (the views are borrows used only while
// the arena is live). Run linearity first: the pass checks what it relies on
// itself and skips what it cannot prove, but reports nothing.
#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ir/Builder.h"
#include "ir/Layout.h"
#include "ir/OpTable.h"
#include "passes/OpFacts.h"
#include "passes/PassManager.h"

namespace eph::passes {
namespace {

using ir::Op;
using ir::OpId;
using ir::Region;
using ir::Value;

// Every view's byte offset is a multiple of this (Vulkan's largest allowed
// minStorageBufferOffsetAlignment).
constexpr uint64_t kAlignBytes = 256;
// No arena larger than this (the smallest maxStorageBufferRange we meet,
// lavapipe's 128 MiB): a larger one could fail where its buffers would not.
constexpr uint64_t kMaxArenaBytes = uint64_t(128) << 20;

// One buffer that may live in an arena.
struct Candidate {
  Op* alloc = nullptr;
  Op* free = nullptr;
  uint64_t count = 0;         // elements
  size_t first = 0, last = 0; // lifetime: top-level positions of the first and last use
  uint64_t offset = 0;        // in the arena, in elements (assigned by placeInArena)
};

// Buffers that may share an arena: same element type, same device.
using GroupKey = std::pair<const ir::Type*, int64_t>;

// The top-level op of `body` that holds `op` (op itself when it is one).
Op* topLevelOp(Op* op, const Region& body) {
  while (op->parentRegion() != &body) op = op->parentOp();
  return op;
}

// The count of a `const` of integer type, when it is above 0.
bool staticCount(const Value* n, uint64_t& out) {
  const ir::Attr* a = constantAttr(n);
  if (!a || a->kind != ir::Attr::Kind::Int || !n->type()->isInt()) return false;
  if (n->type()->isSigned() && a->i <= 0) return false;
  out = static_cast<uint64_t>(a->i);
  return out > 0;
}

class Planner {
 public:
  explicit Planner(ir::Function& fn) : fn_(fn), body_(fn.body()) {
    for (auto& op : body_.ops()) {
      position_[op.get()] = top_.size();
      top_.push_back(op.get());
    }
  }

  bool run() {
    // Groups in order of their first candidate, so that the output does not
    // depend on where types live in memory.
    std::vector<std::pair<GroupKey, std::vector<Candidate>>> groups;
    for (auto& op : body_.ops()) {
      Candidate c;
      GroupKey key;
      if (!candidate(*op, c, key)) continue;
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
      it->second.push_back(c);
    }
    bool changed = false;
    for (auto& [key, cands] : groups) {
      std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
        return std::tie(a.first, a.last) < std::tie(b.first, b.last);
      });
      // Segments: maximal runs whose intervals chain by meeting.
      size_t begin = 0;
      while (begin < cands.size()) {
        size_t end = begin + 1, reach = cands[begin].last;
        while (end < cands.size() && cands[end].first <= reach) reach = std::max(reach, cands[end++].last);
        if (end - begin >= 2) {
          std::vector<Candidate> segment(cands.begin() + begin, cands.begin() + end);
          changed |= packSegment(key, segment);
        }
        begin = end;
      }
    }
    // Only now do the packed allocs and frees go: positions name the original ops.
    for (Op* f : deadFrees_) f->erase();
    for (auto& [old, view] : replaced_) {
      old->replaceAllUsesWith(view);
      old->definingOp()->erase();
    }
    return changed;
  }

 private:
  ir::Function& fn_;
  Region& body_;
  std::vector<Op*> top_;                            // the body's ops before the rewrite
  std::unordered_map<const Op*, size_t> position_;  // their positions
  std::vector<std::pair<Value*, Value*>> replaced_;  // an alloc's buffer and its view
  std::vector<Op*> deadFrees_;                      // the packed buffers' frees

  size_t positionOf(Op* op) const { return position_.at(topLevelOp(op, body_)); }

  bool candidate(Op& alloc, Candidate& c, GroupKey& key) {
    if (!alloc.is(OpId::Alloc)) return false;
    const ir::Type* t = alloc.result(0)->type();
    if (!t->isBuffer() || t->space() != ir::Space::Device || t->ownership() != ir::Ownership::Linear) return false;
    if (!ir::isStorable(t->elem()) || !staticCount(alloc.operand(0), c.count)) return false;
    size_t stride = ir::storageStride(t->elem());
    if (stride == 0 || c.count > kMaxArenaBytes / stride) return false;  // no arena would take it
    c.alloc = &alloc;
    c.first = std::numeric_limits<size_t>::max();
    c.last = 0;
    if (!collectUses(alloc.result(0), c, /*isView=*/false)) return false;
    if (!c.free || c.free->parentRegion() != &body_) return false;
    size_t at = position_.at(&alloc);
    if (c.first == std::numeric_limits<size_t>::max()) c.first = c.last = at;  // never used
    if (position_.at(c.free) <= c.last) return false;                         // a use after the free
    key = {t->elem(), alloc.attr("device") ? alloc.intAttr("device") : 0};
    return true;
  }

  // Every use of `v` (the buffer, or a view of it) borrows it through an op
  // that works on a view too; the one free (of the buffer itself) is noted.
  bool collectUses(Value* v, Candidate& c, bool isView) {
    for (const ir::Use& use : v->uses()) {
      Op* user = use.user;
      switch (user->id()) {
        case OpId::Free:
          if (isView || c.free) return false;
          c.free = user;
          continue;
        case OpId::BufferView:
          if (use.index != 0 || !collectUses(user->result(0), c, /*isView=*/true)) return false;
          break;
        case OpId::Dispatch:
        case OpId::H2D:
        case OpId::D2H:
        case OpId::Copy:
        case OpId::BufferLen:
          if (user->info().effect(*user, use.index) == ir::Effect::Consume) return false;
          break;
        default: return false;
      }
      size_t at = positionOf(user);
      c.first = std::min(c.first, at);
      c.last = std::max(c.last, at);
    }
    return true;
  }

  // Largest first, each at the lowest aligned offset clear of the placed
  // buffers whose lifetimes meet its own. Returns the arena's element count.
  static uint64_t placeInArena(std::vector<Candidate>& segment, uint64_t align) {
    std::vector<size_t> order(segment.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return segment[a].count > segment[b].count; });
    std::vector<size_t> placed;
    uint64_t size = 0;
    for (size_t i : order) {
      Candidate& c = segment[i];
      std::vector<const Candidate*> conflicts;
      for (size_t j : placed)
        if (segment[j].first <= c.last && c.first <= segment[j].last) conflicts.push_back(&segment[j]);
      std::sort(conflicts.begin(), conflicts.end(),
                [](const Candidate* a, const Candidate* b) { return a->offset < b->offset; });
      uint64_t offset = 0;
      for (const Candidate* p : conflicts) {
        if (offset + c.count <= p->offset) break;
        offset = std::max(offset, (p->offset + p->count + align - 1) / align * align);
      }
      c.offset = offset;
      size = std::max(size, offset + c.count);
      placed.push_back(i);
    }
    return size;
  }

  // The most elements the segment's buffers held at once before planning
  // (each from its alloc to its free).
  uint64_t heldAtOnce(const std::vector<Candidate>& segment) const {
    std::vector<std::pair<size_t, int64_t>> events;  // position, elements gained or released
    for (const Candidate& c : segment) {
      events.emplace_back(position_.at(c.alloc), static_cast<int64_t>(c.count));
      events.emplace_back(position_.at(c.free), -static_cast<int64_t>(c.count));
    }
    std::sort(events.begin(), events.end());
    int64_t held = 0, most = 0;
    for (auto& [at, delta] : events) most = std::max(most, held += delta);
    return static_cast<uint64_t>(most);
  }

  bool packSegment(const GroupKey& key, std::vector<Candidate>& segment) {
    const ir::Type* elem = key.first;
    uint64_t stride = ir::storageStride(elem);
    if (stride == 0) return false;
    uint64_t align = std::lcm(kAlignBytes, stride) / stride;  // in elements
    uint64_t total = 0;
    for (const Candidate& c : segment) total += c.count;
    uint64_t size = placeInArena(segment, align);
    if (size >= total || size > heldAtOnce(segment) || size * stride > kMaxArenaBytes) return false;

    ir::Context& ctx = fn_.module()->context();
    const ir::Type* u32 = ctx.u32();
    const std::vector<Op*>& top = top_;
    size_t first = segment.front().first, last = 0;
    for (const Candidate& c : segment) last = std::max(last, c.last);

    // The arena, before the segment's first use.
    ir::Builder b(ctx, body_, top[first]);
    Op* firstAlloc = segment.front().alloc;
    for (const Candidate& c : segment)
      if (position_.at(c.alloc) < position_.at(firstAlloc)) firstAlloc = c.alloc;
    b.setLoc(firstAlloc->loc());
    Value* n = b.constInt(u32, static_cast<int64_t>(size));
    n->setName("arena.size");
    const ir::Type* arenaType = ctx.bufferType(elem, ir::Space::Device, ir::Ownership::Linear);
    Value* arena = b.alloc(n, arenaType, firstAlloc->attr("device") ? static_cast<int>(key.second) : -1);
    arena->setName("arena");

    // Each buffer a view, before its own first use (segment is in order of first use).
    Op* lastFree = segment.front().free;
    for (Candidate& c : segment) {
      b.setInsertionPoint(body_, top[c.first]);
      b.setLoc(c.alloc->loc());
      Value* old = c.alloc->result(0);
      Value* off = b.constInt(u32, static_cast<int64_t>(c.offset));
      if (!old->name().empty()) off->setName(old->name() + ".offset");
      Value* view = b.bufferView(arena, off, c.alloc->operand(0), ir::Ownership::Write);
      view->setName(old->name());
      replaced_.emplace_back(old, view);
      deadFrees_.push_back(c.free);
      if (position_.at(c.free) > position_.at(lastFree)) lastFree = c.free;
    }

    // One free of the arena, after the segment's last use.
    b.setInsertionPointAfter(*top[last]);
    b.setLoc(lastFree->loc());
    b.free(arena);
    return true;
  }
};

bool runMemoryPlan(ir::Module& m, Diagnostics&) {
  bool changed = false;
  for (auto& fn : m.functions())
    if (fn->isHost()) changed |= Planner(*fn).run();
  return changed;
}

}  // namespace

Pass memoryPlanPass() {
  return Pass{"memplan",
              "share one arena among device buffers of static size whose lifetimes do not overlap "
              "(buffer views at aligned offsets; the arena is freed after its last use)",
              runMemoryPlan};
}

}  // namespace eph::passes
