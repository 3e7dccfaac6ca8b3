// Internal to targets/llvm: the state shared by the files that lower IR to
// LLVM IR. ModuleEmitter owns the llvm::Module being built and knows the
// types, trap sites and device functions; FunctionEmitter lowers the ops of
// one function *per invocation* (the semantics of a single invocation, with
// structured control flow flattened to basic blocks). KernelEmitter (in
// LowerKernel.cpp) splits kernels into runs and workgroup-level ops on top.
//
// Value layout (what LLVM computes with) vs storage layout (ir/Layout.h, the
// bytes in buffers and the parameter block):
//   type          value layout            storage layout
//   bool          i1                      u32 0/1
//   iN/uN, fN     iN, half/float/double   the same, naturally aligned
//   vec<T, N>     <N x T'>                N elements, vec3 padded to 16 bytes
//   struct        {T'...}                 fields at ir::fieldOffset
//   sum           {i32 tag, P0', P1'...}  u32 tag, one payload at ir::sumPayloadOffset
//   array<T, N>   [N x T']                elements at ir::storageStride(T)
//   buffer        {ptr base, i64 length}  (not storable)
//   (host code)   {HostBufferRecord*, 0} or {null, device handle}: HostAbi.h
//   function      ptr to host.f           (host code only)
// loadStorage/storeStorage convert between the two.
//
// Host functions (LowerHost.cpp) are lowered by the same FunctionEmitter in
// host mode (hostCtx set): traps return at once with an error in the
// context instead of setting trap bits, and host-only ops become runtime
// calls (HostAbi.h).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/ForeignAbi.h"
#include "ir/IR.h"
#include "ir/OpId.h"
#include "targets/llvm/BarrierCalls.h"
#include "targets/llvm/Llvm.h"

namespace eph::llvmtarget {

// Lowers a whole module; `run` fills `mod` or records `error`.
class ModuleEmitter {
 public:
  ModuleEmitter(llvm::LLVMContext& ctx, const ir::Module& m, const LowerOptions& opts);
  bool run();

  // Records the first error (at op's location, or the function's) and returns false.
  bool fail(const ir::Op* op, const ir::Function* f, std::string message);
  // The value-layout type of t; null after reporting an unsupported type.
  llvm::Type* valueType(const ir::Type* t, const ir::Op* where = nullptr);
  // A C library function of doubles, e.g. "exp" (one argument) or "pow" (two).
  llvm::FunctionCallee libm(const char* name, unsigned args);
  // The trap site number of an op (KernelAbi.h).
  unsigned siteOf(const ir::Op& op) const { return sites_.at(&op); }
  // Whether f calls, directly or not, a function with a barrier, or has one.
  bool hasBarrier(const ir::Op& op);

  llvm::LLVMContext& ctx;
  // The module's copy with calls to functions with barriers inlined
  // (BarrierCalls.h), when it has such calls; declared before irm.
  std::optional<BarrierInlined> inlined;
  // The module lowered: the copy, or else the module itself. Trap sites are
  // numbered as in the module itself.
  const ir::Module& irm;
  LowerOptions opts;
  std::unique_ptr<llvm::Module> mod;
  std::map<const ir::Function*, llvm::Function*> deviceFns;
  std::optional<Error> error;

  // Host lowering (LowerHost.cpp). While hostMode is on, function types
  // lower to ptr.
  bool hostMode = false;
  std::map<const ir::Function*, llvm::Function*> hostFns;
  std::unordered_map<const ir::Op*, unsigned> hostSiteIds;
  // Why host functions were not lowered (they run in the interpreter), and
  // the op or function it is about.
  std::optional<Error> hostError;
  const ir::Op* hostErrorOp = nullptr;
  const ir::Function* hostErrorFn = nullptr;
  // The op and function of `error`.
  const ir::Op* errorOp = nullptr;
  const ir::Function* errorFn = nullptr;
  // The function being declared or lowered (host lowering), for errors.
  const ir::Function* currentFunction = nullptr;
  // Entry wrappers: IR function name -> LLVM function name.
  std::map<std::string, std::string> hostEntries;
  // Box cells (LowerHostBoxes.cpp): the index of each hostBoxTypes entry.
  std::unordered_map<const ir::Type*, unsigned> boxTypeIds;
  // call.c (LowerHostFfi.cpp): the global caching each symbol's address.
  std::map<std::string, llvm::GlobalVariable*> ffiSymbols;
  // The runtime function `name` of HostAbi.h.
  llvm::FunctionCallee hostRuntime(const char* name, llvm::Type* ret, std::vector<llvm::Type*> params);

  llvm::Type* i1;
  llvm::Type* i8;
  llvm::Type* i32;
  llvm::Type* i64;
  llvm::Type* f64;
  llvm::PointerType* ptr;
  llvm::StructType* bufferTy;  // {ptr, i64}

 private:
  bool declareDevice(const ir::Function& f);
  std::unordered_map<const ir::Op*, unsigned> sites_;
  // A kernel compiled alone (LowerOptions::kernels names only it, no host
  // code): only the device functions it reaches are lowered, and trap sites
  // are numbered by trapSites(kernel).
  bool soleKernel_ = false;
  std::unordered_set<std::string> reached_;  // names: irm may be a copy of the module
  std::unordered_map<const ir::Type*, llvm::Type*> types_;
  std::map<const ir::Function*, bool> barrierFns_;
};

// The builtin values of the invocation being emitted.
struct InvocationIds {
  llvm::Value* local[3] = {};      // local_id
  llvm::Value* group[3] = {};      // workgroup_id
  llvm::Value* numGroups[3] = {};  // num_workgroups
  llvm::Value* size[3] = {};       // workgroup_size
};

class FunctionEmitter {
 public:
  FunctionEmitter(ModuleEmitter& M, llvm::Function* fn, const ir::Function& f);

  ModuleEmitter& M;
  llvm::Function* fn;
  const ir::Function& irf;
  llvm::IRBuilder<> b;
  // The TrapScratch (KernelAbi.h) accumulating trap bits, its first field (an
  // alloca in kernels, a parameter in device functions).
  llvm::Value* trapMask = nullptr;
  InvocationIds ids;
  // Kernels, inside an invocation loop: the linear invocation index, and
  // per-invocation arrays (i32 site, i64 index, i64 length) where each
  // invocation keeps its first access out of bounds: stores indexed by the
  // invocation keep the loop vectorisable, where one shared record would not.
  llvm::Value* lin = nullptr;
  llvm::Value *oobSites = nullptr, *oobIndices = nullptr, *oobLengths = nullptr;
  std::unordered_map<const ir::Value*, llvm::Value*> vals;
  // Host mode: the HostContext* argument, and the block that returns at once
  // after an error (made on first use).
  llvm::Value* hostCtx = nullptr;
  llvm::BasicBlock* bailBlock = nullptr;
  // Accesses known to be in bounds where they are being emitted (a versioned
  // invocation loop checked them up front): no bounds check.
  std::unordered_set<const ir::Op*> unchecked;

  llvm::Value* get(const ir::Value* v) const;
  void set(const ir::Value* v, llvm::Value* x) { vals[v] = x; }
  bool fail(const ir::Op& op, std::string message) { return M.fail(&op, &irf, std::move(message)); }

  // Emits a region's ops (not its terminator) with its arguments bound to
  // `args`; returns the terminator, or null after an error.
  const ir::Op* emitBody(const ir::Region& r, const std::vector<llvm::Value*>& args);
  // Emits one op for the current invocation.
  bool emitOp(const ir::Op& op);

  // The lowering of each built-in op, indexed by OpId (null: none yet, see
  // lowersOp in Llvm.h); &FunctionEmitter::emitUnsupported marks an op that
  // is explicitly not on this target. Host mode lowers host-only ops (and
  // host variants of some others) in emitHostOp before the table.
  using EmitFn = bool (FunctionEmitter::*)(const ir::Op&);
  using EmitTable = ir::PerOp<EmitFn>;
  static const EmitTable& table();
  static void addArithLowerings(EmitTable& t);      // LowerValues.cpp
  static void addAggregateLowerings(EmitTable& t);  // LowerValues.cpp
  static void addMemoryLowerings(EmitTable& t);     // LowerMemory.cpp
  static void addControlLowerings(EmitTable& t);    // LowerControl.cpp
  // Reports "op 'NAME' is not supported on target cpu" at the op.
  bool emitUnsupported(const ir::Op& op);

  // An alloca at the top of the entry block.
  llvm::AllocaInst* entryAlloca(llvm::Type* t, const llvm::Twine& name = "");
  // Sets op's trap bit when `bad` (i1, or a vector of i1) is true.
  void trapIf(const ir::Op& op, llvm::Value* bad);
  // An access out of bounds when `bad` (i1): traps, and keeps the index and
  // length (i64) with the invocation when it is the workgroup's first.
  void trapOutOfBounds(const ir::Op& op, llvm::Value* bad, llvm::Value* index, llvm::Value* length);
  // Keeps an access as the invocation's first out of bounds, in a block where
  // it is out of bounds; sets no trap bit. `none`: noOutOfBoundsYet(), taken
  // before branching there.
  llvm::Value* noOutOfBoundsYet();
  void recordOutOfBounds(const ir::Op& op, llvm::Value* index, llvm::Value* length, llvm::Value* none);
  llvm::Value* oobField(size_t offset);  // a field of the TrapScratch's OutOfBounds
  llvm::BasicBlock* newBlock(const llvm::Twine& name);

  // Host mode (LowerHost.cpp): host-only ops, host buffers, calls; handled
  // false for ops lowered as in kernels.
  bool emitHostOp(const ir::Op& op, bool& handled);
  llvm::BasicBlock* bail();
  // box.new / box.get (LowerHostBoxes.cpp), call.c (LowerHostFfi.cpp).
  bool emitBoxOp(const ir::Op& op);
  bool emitFfiCall(const ir::Op& op);
  // The C call itself, through fnPtr, with the result set (LowerHostFfi.cpp).
  void emitForeignCall(const ir::Op& op, llvm::Value* fnPtr, const ir::ForeignSignature& sig);
  // A new box cell holding v of box table type k (HostAbi.h).
  llvm::Value* makeBoxCell(unsigned k, const ir::Type* t, llvm::Value* v);
  // Returns at once when the context has failed.
  void checkFailed();
  llvm::Value* siteOf(const ir::Op& op);

  // Storage layout (LowerMemory.cpp).
  llvm::Value* loadStorage(const ir::Type* t, llvm::Value* p);
  void storeStorage(const ir::Type* t, llvm::Value* p, llvm::Value* v);

 private:
  // LowerValues.cpp
  bool emitConst(const ir::Op& op);
  bool emitSelect(const ir::Op& op);
  bool emitCompare(const ir::Op& op);
  bool emitCast(const ir::Op& op);
  bool emitBitcast(const ir::Op& op);
  bool emitBinary(const ir::Op& op);
  bool emitFma(const ir::Op& op);
  bool emitUnary(const ir::Op& op);
  llvm::Value* binary(const ir::Op& op, ir::OpId n, const ir::Type* t, llvm::Value* a, llvm::Value* c);
  llvm::Value* unary(ir::OpId n, const ir::Type* t, llvm::Value* a);
  llvm::Value* compare(ir::OpId n, const ir::Type* t, llvm::Value* a, llvm::Value* c);
  llvm::Value* cast(const ir::Type* from, const ir::Type* to, llvm::Value* a);
  llvm::Value* viaDouble(const ir::Type* t, llvm::Value* a, llvm::Value* c, ir::OpId n);
  // e^x of f32 (scalars or vectors) in f32 arithmetic that vectorises.
  llvm::Value* expF32(llvm::Value* x);
  llvm::Value* erfF32(llvm::Value* x);
  llvm::Value* constant(const ir::Op& op);
  // LowerValues.cpp: vectors, structs, sums and arrays
  bool emitAggregate(const ir::Op& op);
  // LowerMemory.cpp
  bool emitBufferLen(const ir::Op& op);
  bool emitWorkgroupAlloc(const ir::Op& op);
  bool emitAccess(const ir::Op& op);
  llvm::Value* accessAt(const ir::Op& op, const ir::Type* elem, llvm::Value* p);
  // LowerControl.cpp
  bool emitBarrier(const ir::Op& op);
  bool emitBuiltin(const ir::Op& op);
  bool emitTerminator(const ir::Op& op);
  bool emitIf(const ir::Op& op);
  bool emitFor(const ir::Op& op);
  bool emitWhile(const ir::Op& op);
  bool emitMatch(const ir::Op& op);
  bool emitCall(const ir::Op& op);

 public:
  // Shared with KernelEmitter: the loop condition and next value of a `for`.
  llvm::Value* forCondition(const ir::Type* t, llvm::Value* iv, llvm::Value* hi, llvm::Value* step);
  // Adds step; `overflow` is set when the next value would wrap (the loop ends).
  llvm::Value* forNext(const ir::Type* t, llvm::Value* iv, llvm::Value* step, llvm::Value*& overflow);
  // i1: the step is not 0 (sets op's trap bit otherwise).
  llvm::Value* forStepOk(const ir::Op& op, llvm::Value* step);
  llvm::Value* builtin(const ir::Op& op);
};

// Lowers a kernel into its workgroup function and its range function.
bool emitKernel(ModuleEmitter& M, const ir::Function& k);
// A workgroup-level loop's counter: its IR value and its first and last
// values (of the counter's type; the last valid only when the loop runs).
struct LoopCounter {
  const ir::Value* iv;
  llvm::Value* first;
  llvm::Value* last;
};
// The accesses among `candidates` (load, store, atomics, vec.load,
// vec.store in the loop) whose index grows with the invocation ids and the
// counter from values defined before the loop: into `proven`; returns the
// i1 that says they are all in bounds on every trip of every invocation
// (null: none proven). `uniform`: the values the same for the whole
// workgroup at the loop (LoopBounds.cpp).
llvm::Value* accessesInBounds(FunctionEmitter& F, const LoopCounter& loop,
                              const std::unordered_set<const ir::Value*>& uniform, const unsigned size[3],
                              const std::vector<const ir::Op*>& candidates, std::vector<const ir::Op*>& proven);
// A subgroup collective at workgroup level (LowerSubgroup.cpp): reads every
// invocation's operand from `src` (and lane from `lanes`, for broadcast and
// shuffle), [n x T] arrays indexed by the linear invocation index, and
// writes the results to `dst`.
bool emitSubgroupCollective(FunctionEmitter& F, const ir::Op& op, llvm::AllocaInst* src, llvm::AllocaInst* lanes,
                            llvm::AllocaInst* dst, unsigned n);
// Lowers a device function's body (declared by ModuleEmitter).
bool emitDeviceFunction(ModuleEmitter& M, const ir::Function& f);
// Lowers the host functions (and the device functions they reach) with the
// host ABI; on failure M.error says why (the caller keeps the kernels).
bool emitHostFunctions(ModuleEmitter& M);

// Host slots (HostAbi.h): stores v of type t from base[i] on / loads it,
// advancing i (LowerHost.cpp).
void storeHostSlots(FunctionEmitter& F, const ir::Type* t, llvm::Value* v, llvm::Value* base, unsigned& i);
llvm::Value* loadHostSlots(FunctionEmitter& F, const ir::Type* t, llvm::Value* base, unsigned& i);
// Numbers the box types and emits the box codecs eph.box.read and
// eph.box.make (LowerHostBoxes.cpp); `any` is a host function of the module
// (for error locations).
void emitBoxCodecs(ModuleEmitter& M, const ir::Function& any);

// Device functions take, after their parameters, these builtins (i32 each)
// and the trap mask pointer.
constexpr unsigned kHiddenIdArgs = 12;  // local[3], group[3], numGroups[3], size[3]

}  // namespace eph::llvmtarget
