// Internal to runtime/cpu: the context compiled host code runs in (its
// header fields first, HostAbi.h in targets/llvm), its host buffers, its box
// arena, and the conversions between interpreter values and the slots of
// the entry ABI (boxes included: HostBoxes.cpp).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "ir/interp/ForeignCall.h"
#include "ir/interp/Interp.h"
#include "targets/llvm/HostAbi.h"

namespace eph::runtime {

// A host buffer of compiled host code: the record compiled code reads, the
// storage behind it, and what error messages need.
struct HostBuffer : llvmtarget::HostBufferRecord {
  const ir::Type* elem = nullptr;
  size_t stride = 1;
  uint64_t length = 0;  // elements (the record's count is 0 once freed)
  Loc allocSite;
  bool freed = false;
  uint64_t memoryId = 0;  // the interpreter buffer it came from, else 0
  std::vector<std::byte> bytes;
  std::vector<uint8_t> flags;

  // Sizes the storage for `n` elements, none written.
  void reset(const ir::Type* elemType, uint64_t n, Loc site);
  void release();
  // As the interpreter holds it (unwritten elements have no value), and back.
  interp::BufferData toBufferData() const;
  void fromBufferData(const interp::BufferData& d);
};

// The memory of box cells: chunks handed out by bumping
// HostContextHeader::arenaNext, all freed with the context (when the run
// ends). Cells larger than a quarter of a chunk get a chunk of their own.
struct BoxArena {
  static constexpr size_t kChunkBytes = size_t(1) << 20;
  std::vector<std::unique_ptr<std::byte[]>> chunks;
  size_t bytes = 0;  // allocated so far
};

struct HostContext : llvmtarget::HostContextHeader {
  // interp's limit on one allocation.
  static constexpr uint64_t kMaxElements = uint64_t(1) << 26;

  interp::DeviceHooks* hooks = nullptr;
  const ir::Module* module = nullptr;
  std::vector<const ir::Op*> sites;               // hostSites(module)
  std::vector<const ir::Function*> functions;     // JitModule::hostLowered(module)
  std::span<void* const> functionAddrs;           // their compiled code, same order
  std::optional<Error> error;
  std::deque<HostBuffer> buffers;                 // stable addresses
  interp::Memory* memory = nullptr;               // the entry's buffers, and where results go
  // The extern call in progress (HostAbi.cpp's ffi_enter / ffi_leave).
  interp::ForeignCall foreignCall;
  std::optional<interp::ForeignCallScope> foreignScope;
  std::unordered_map<uint64_t, HostBuffer*> imported;  // by interpreter buffer id
  // Boxes: hostBoxTypes(module) and each one's index, the codecs of the
  // compiled module, the arena, and the cells converted so far in each
  // direction (so that shared cells stay shared).
  std::vector<const ir::Type*> boxTypeList;
  std::unordered_map<const ir::Type*, uint32_t> boxTypeIndex;
  llvmtarget::HostBoxReadFn boxRead = nullptr;
  llvmtarget::HostBoxMakeFn boxMake = nullptr;
  BoxArena arena;
  std::unordered_map<const llvmtarget::HostBoxCell*, std::shared_ptr<const interp::BoxCell>> interpCells;
  std::unordered_map<const interp::BoxCell*, llvmtarget::HostBoxCell*> compiledCells;

  const ir::Op& op(uint32_t site) const { return *sites[site]; }
  // Records the first error; returns false.
  bool fail(const ir::Op& op, std::string message) { return fail(Error{op.loc(), std::move(message)}); }
  bool fail(Error e) {
    if (!error) error = std::move(e);
    failed = 1;
    return false;
  }
  HostBuffer& newBuffer(const ir::Type* elem, uint64_t n, Loc site);
  // The function whose compiled code is at `code`, or null.
  const ir::Function* functionAt(void* code) const;
  // A value of type t read from slots (advancing `p`), and written as slots.
  interp::RtValue fromSlots(const ir::Type* t, const uint64_t*& p);
  void toSlots(const interp::RtValue& v, const ir::Type* t, std::vector<uint64_t>& out);
  // The buffer of an interpreter buffer id (made on first use), and the
  // interpreter buffer id of a host buffer (added to `memory` if it has none).
  HostBuffer& importBuffer(uint64_t id);
  uint64_t exportBuffer(HostBuffer& b);
  // Boxes (HostBoxes.cpp): the table for compiled code, arena memory, and a
  // compiled cell as an interpreter cell and back (deep chains of cells are
  // converted without recursion).
  void setBoxTypes(const ir::Module& m);
  std::byte* allocBox(size_t bytes);
  std::shared_ptr<const interp::BoxCell> toInterpCell(const llvmtarget::HostBoxCell* cell);
  llvmtarget::HostBoxCell* toCompiledCell(const std::shared_ptr<const interp::BoxCell>& cell);
};

}  // namespace eph::runtime
