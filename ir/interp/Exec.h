// The execution context of one interpreter activity: the host program, one
// kernel invocation, or a single constant-folding evaluation. Op semantics
// (the `.interp` hooks of the op table, ir/ops/*.cpp) receive an Exec and use
// it to read operands, set results, run nested regions, call functions,
// access memory and synchronise with their workgroup.
//
// Errors are values: fail() records the first Error (at the op's location)
// and returns false; every caller returns false up the chain. Nothing throws,
// so code on a fiber unwinds normally.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/interp/Interp.h"

namespace eph::interp {

class Workgroup;

// Where one kernel invocation sits in its dispatch.
struct Invocation {
  std::array<uint32_t, 3> globalId{}, localId{}, workgroupId{}, numWorkgroups{}, workgroupSize{};
  uint32_t localIndex = 0;  // linear index within the workgroup (x fastest)
};

class Exec {
 public:
  // Calls nested deeper than this are an error (runaway recursion in host code).
  static constexpr unsigned kMaxCallDepth = 1000;

  // `mem` may be null (constant folding: any memory access fails). `inv` and
  // `wg` are set for kernel invocations only.
  explicit Exec(Memory* mem, const Invocation* inv = nullptr, Workgroup* wg = nullptr);

  // ---- values -------------------------------------------------------------
  const RtValue& get(const ir::Value* v) const;
  void set(const ir::Value* v, RtValue x);
  const RtValue& operand(const ir::Op& op, unsigned i) const;
  // Operands from..end, copied.
  std::vector<RtValue> operands(const ir::Op& op, unsigned from = 0) const;
  // Set result i of op (returns true so hooks can `return ex.setResult(...)`).
  bool setResult(const ir::Op& op, RtValue x, unsigned i = 0);
  bool setResults(const ir::Op& op, std::vector<RtValue> xs);
  // Makes operand(op, i) read vals[i] (evalPure evaluates an op detached from
  // the values that feed it).
  void overrideOperands(const ir::Op& op, std::span<const RtValue> vals);

  // ---- errors -------------------------------------------------------------
  // Records "msg" at op's location (if no error is recorded yet); returns false.
  bool fail(const ir::Op& op, std::string msg);
  bool fail(Error e);
  bool failed() const { return error_.has_value(); }
  const std::optional<Error>& error() const { return error_; }

  // ---- control ------------------------------------------------------------
  // Binds the region's arguments to `args`, runs its ops and returns the
  // operands of its terminator in `results`.
  bool runRegion(const ir::Region& r, std::span<const RtValue> args, std::vector<RtValue>& results);
  // Terminators (yield, condition, return) hand their operands to runRegion.
  bool terminate(const ir::Op& op);
  // Runs f's body in a new frame. `site` (the call op, or null for an entry
  // call) locates depth-limit errors.
  bool callFunction(const ir::Op* site, const ir::Function& f, std::vector<RtValue> args,
                    std::vector<RtValue>& results);
  // Calls in progress (0 outside any function).
  unsigned callDepth() const { return static_cast<unsigned>(frames_.size() - 1); }

  // ---- memory -------------------------------------------------------------
  Memory* memory() const { return mem_; }
  // Where device work goes (null: this interpreter runs it). See DeviceHooks.
  DeviceHooks* deviceHooks() const { return device_; }
  void setDeviceHooks(DeviceHooks* d) { device_ = d; }
  // The live buffer behind a handle; null after reporting an error (no
  // memory, unknown handle, freed buffer).
  BufferData* buffer(const ir::Op& op, const RtValue& handle);
  // An index value checked against a length; false after reporting an error.
  bool checkIndex(const ir::Op& op, const RtValue& index, size_t length, size_t& out,
                  const char* what);
  // Element `index` of buffer `handle` (it must have been written).
  bool readElement(const ir::Op& op, const RtValue& handle, const RtValue& index, RtValue& out);
  bool writeElement(const ir::Op& op, const RtValue& handle, const RtValue& index, RtValue value);

  // ---- kernels ------------------------------------------------------------
  const Invocation* invocation() const { return inv_; }
  // Waits until the whole workgroup reached this barrier; false if the
  // workgroup was aborted (another invocation failed or diverged).
  bool barrier(const ir::Op& op);
  // A subgroup collective (ir/ops/Subgroup.cpp): waits like a barrier for
  // the whole workgroup, then `out` is this invocation's result.
  bool subgroupCollective(const ir::Op& op, RtValue& out);
  // The workgroup's buffer for a `workgroup.alloc` op (fresh, unwritten
  // memory for each workgroup).
  bool workgroupBuffer(const ir::Op& op, RtValue& out);
  // Runs a kernel grid to completion (host `dispatch`).
  bool dispatch(const ir::Op& op, const ir::Function& kernel, std::array<uint32_t, 3> groups,
                std::vector<RtValue> args);

 private:
  // One call's values, keyed by the ir::Value's address: an open-addressing
  // table of (key, index) over chunks that never move, so that a reference
  // from get() stays valid while later values are set (as with the
  // unordered_map this replaces, whose node allocations and division per
  // lookup took half of the run time of a kernel under the interpreter).
  // Values are only added or overwritten; the frame goes with its call.
  class Frame {
   public:
    const RtValue* find(const ir::Value* v) const;
    RtValue& at(const ir::Value* v);  // inserted (default) when absent

   private:
    static constexpr unsigned kChunkBits = 6;
    struct Slot {
      const ir::Value* key = nullptr;
      uint32_t index = 0;
    };
    size_t home(const ir::Value* v) const;
    RtValue& value(uint32_t index) const { return chunks_[index >> kChunkBits][index & ((1u << kChunkBits) - 1)]; }
    void grow();
    std::vector<Slot> slots_;  // a power of two, at most half full
    unsigned shift_ = 64;
    uint32_t count_ = 0;
    std::vector<std::unique_ptr<RtValue[]>> chunks_;
  };
  Memory* mem_;
  DeviceHooks* device_ = nullptr;
  const Invocation* inv_;
  Workgroup* wg_;
  std::vector<Frame> frames_;
  std::vector<RtValue> terminated_;  // operands of the terminator just run
  std::optional<Error> error_;
  const ir::Op* overrideOp_ = nullptr;
  std::span<const RtValue> overrideVals_;
};

// "@f is generic ...; run the monomorphize pass": the interpreter runs only
// functions without type variables in their signature.
Error genericFunctionError(const ir::Function& f, Loc at);

// " allocated at file:line:col" for buffers with a known allocation site.
std::string allocatedAt(const BufferData& b);

}  // namespace eph::interp
