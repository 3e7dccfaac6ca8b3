#include "ir/interp/Exec.h"

#include <bit>
#include <cassert>

#include "ir/OpTable.h"
#include "ir/ops/TypeVars.h"
#include "ir/interp/Dispatch.h"
#include "ir/interp/Fiber.h"
#include "ir/interp/OutOfBounds.h"

namespace eph::interp {
namespace {
// Stack a region or call must have left before it starts; below this the
// interpreter reports an error instead of overflowing its fiber stack.
constexpr size_t kStackReserve = 64 * 1024;
}  // namespace

Error genericFunctionError(const ir::Function& f, Loc at) {
  std::vector<const ir::Type*> vars;
  ir::collectTypeVars(f.type(), vars);
  return Error{at, "@" + f.name() + " is generic (its signature mentions " + vars.front()->str() +
                       "); run the monomorphize pass before running it"};
}

std::string allocatedAt(const BufferData& b) {
  return b.allocSite.known() ? " allocated at " + b.allocSite.str() : "";
}

Exec::Exec(Memory* mem, const Invocation* inv, Workgroup* wg) : mem_(mem), inv_(inv), wg_(wg) {
  frames_.emplace_back();  // values of ops evaluated outside any call (evalPure)
}

// ---- values -----------------------------------------------------------------

size_t Exec::Frame::home(const ir::Value* v) const {
  return size_t((uint64_t(reinterpret_cast<uintptr_t>(v)) * 0x9E3779B97F4A7C15ull) >> shift_);  // Fibonacci hashing
}

const RtValue* Exec::Frame::find(const ir::Value* v) const {
  if (slots_.empty()) return nullptr;
  for (size_t i = home(v), mask = slots_.size() - 1;; i = (i + 1) & mask) {
    if (slots_[i].key == v) return &value(slots_[i].index);
    if (!slots_[i].key) return nullptr;
  }
}

void Exec::Frame::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 32 : old.size() * 2, Slot{});
  shift_ = 64 - unsigned(std::countr_zero(slots_.size()));
  for (const Slot& s : old)
    if (s.key)
      for (size_t i = home(s.key), mask = slots_.size() - 1;; i = (i + 1) & mask)
        if (!slots_[i].key) {
          slots_[i] = s;
          break;
        }
}

RtValue& Exec::Frame::at(const ir::Value* v) {
  if (2 * (size_t(count_) + 1) > slots_.size()) grow();
  size_t i = home(v);
  for (size_t mask = slots_.size() - 1; slots_[i].key && slots_[i].key != v; i = (i + 1) & mask) {
  }
  if (!slots_[i].key) {
    if ((count_ >> kChunkBits) == chunks_.size()) chunks_.push_back(std::make_unique<RtValue[]>(size_t(1) << kChunkBits));
    slots_[i] = Slot{v, count_++};
  }
  return value(slots_[i].index);
}

const RtValue& Exec::get(const ir::Value* v) const {
  const RtValue* x = frames_.back().find(v);
  assert(x && "value used before it was computed (unverified IR?)");
  static const RtValue missing;
  return x ? *x : missing;
}

void Exec::set(const ir::Value* v, RtValue x) { frames_.back().at(v) = std::move(x); }

const RtValue& Exec::operand(const ir::Op& op, unsigned i) const {
  if (&op == overrideOp_) return overrideVals_[i];
  return get(op.operand(i));
}

std::vector<RtValue> Exec::operands(const ir::Op& op, unsigned from) const {
  std::vector<RtValue> vs;
  for (unsigned i = from; i < op.numOperands(); ++i) vs.push_back(operand(op, i));
  return vs;
}

bool Exec::setResult(const ir::Op& op, RtValue x, unsigned i) {
  set(op.result(i), std::move(x));
  return true;
}

bool Exec::setResults(const ir::Op& op, std::vector<RtValue> xs) {
  assert(xs.size() == op.numResults());
  for (unsigned i = 0; i < xs.size(); ++i) set(op.result(i), std::move(xs[i]));
  return true;
}

void Exec::overrideOperands(const ir::Op& op, std::span<const RtValue> vals) {
  overrideOp_ = &op;
  overrideVals_ = vals;
}

// ---- errors -----------------------------------------------------------------

bool Exec::fail(const ir::Op& op, std::string msg) { return fail(Error{op.loc(), std::move(msg)}); }

bool Exec::fail(Error e) {
  if (!error_) error_ = std::move(e);
  return false;
}

// ---- control ----------------------------------------------------------------

bool Exec::runRegion(const ir::Region& r, std::span<const RtValue> args,
                     std::vector<RtValue>& results) {
  if (stackHeadroom() < kStackReserve) {
    Loc at = r.parentOp() ? r.parentOp()->loc()
                          : r.parentFunction() ? r.parentFunction()->loc() : Loc{};
    return fail(Error{at, "interpreter stack exhausted: regions and calls are nested too deeply"});
  }
  assert(args.size() == r.numArgs());
  for (unsigned i = 0; i < r.numArgs(); ++i) set(r.arg(i), args[i]);
  for (const auto& up : r.ops()) {
    const ir::Op& op = *up;
    ir::InterpFn fn = op.info().interp;
    if (!fn) return fail(op, "'" + std::string(op.name()) + "' has no interpreter semantics");
    if (!fn(*this, op)) return false;
  }
  results = std::move(terminated_);
  terminated_.clear();
  return true;
}

bool Exec::terminate(const ir::Op& op) {
  terminated_ = operands(op);
  return true;
}

bool Exec::callFunction(const ir::Op* site, const ir::Function& f, std::vector<RtValue> args,
                        std::vector<RtValue>& results) {
  Loc at = site ? site->loc() : f.loc();
  if (callDepth() >= kMaxCallDepth)
    return fail(Error{at, "call depth limit of " + std::to_string(kMaxCallDepth) +
                              " exceeded calling @" + f.name() + " (unbounded recursion?)"});
  if (ir::isGeneric(f)) return fail(genericFunctionError(f, at));
  if (args.size() != f.paramTypes().size())
    return fail(Error{at, "@" + f.name() + " takes " + std::to_string(f.paramTypes().size()) +
                              " arguments, got " + std::to_string(args.size())});
  for (unsigned i = 0; i < args.size(); ++i) {
    const ir::Type* want = f.paramTypes()[i];
    const ir::Type* got = args[i].type;
    bool ok = got == want || (got && got->isBuffer() && want->isBuffer() && got->elem() == want->elem());
    if (!ok)
      return fail(Error{at, "argument " + std::to_string(i) + " of @" + f.name() + " has type " +
                                (got ? got->str() : "?") + ", expected " + want->str()});
    args[i].type = want;  // a buffer lent as a borrow takes the parameter's type
  }
  frames_.emplace_back();
  bool ok = runRegion(f.body(), args, results);
  frames_.pop_back();
  return ok;
}

// ---- memory -----------------------------------------------------------------

BufferData* Exec::buffer(const ir::Op& op, const RtValue& handle) {
  BufferData* b = mem_ ? mem_->get(handle.buffer) : nullptr;
  if (!b) {
    fail(op, mem_ ? "use of an invalid buffer handle" : "no memory to access here");
    return nullptr;
  }
  if (b->freed) {
    fail(op, "use of a freed buffer" + allocatedAt(*b));
    return nullptr;
  }
  return b;
}

size_t viewLength(const RtValue& handle, const BufferData& b) {
  return handle.isView() ? static_cast<size_t>(handle.viewCount) : b.elems.size();
}

bool Exec::checkIndex(const ir::Op& op, const RtValue& index, size_t length, size_t& out,
                      const char* what) {
  bool negative = index.type->isSigned() && index.i < 0;
  uint64_t u = static_cast<uint64_t>(index.i);
  if (negative || u >= length)
    return fail(op, outOfBoundsMessage(format(index), length, what));
  out = static_cast<size_t>(u);
  return true;
}

bool Exec::readElement(const ir::Op& op, const RtValue& handle, const RtValue& index, RtValue& out) {
  BufferData* b = buffer(op, handle);
  size_t i = 0;
  if (!b || !checkIndex(op, index, viewLength(handle, *b), i, "a buffer")) return false;
  i += handle.viewOffset;
  if (!b->written[i]) {
    std::string origin = b->copiedFrom.known() ? " allocated at " + b->copiedFrom.str() +
                                                     (b->allocSite.known() ? " (copied at " + b->allocSite.str() + ")" : "")
                                               : allocatedAt(*b);
    return fail(op, "read of uninitialised element " + std::to_string(i) + " of a buffer of " +
                        std::to_string(b->elems.size()) + origin);
  }
  out = b->elems[i];
  return true;
}

bool Exec::writeElement(const ir::Op& op, const RtValue& handle, const RtValue& index,
                        RtValue value) {
  BufferData* b = buffer(op, handle);
  size_t i = 0;
  if (!b || !checkIndex(op, index, viewLength(handle, *b), i, "a buffer")) return false;
  i += handle.viewOffset;
  value.type = b->elemType;
  b->elems[i] = std::move(value);
  b->written[i] = true;
  return true;
}

// ---- kernels ----------------------------------------------------------------

bool Exec::barrier(const ir::Op& op) {
  if (!wg_) return fail(op, "'barrier' outside a kernel invocation");
  return wg_->barrier(*this, op);
}

bool Exec::subgroupCollective(const ir::Op& op, RtValue& out) {
  if (!wg_) return fail(op, "'" + std::string(op.name()) + "' outside a kernel invocation");
  return wg_->collective(*this, op, out);
}

bool Exec::workgroupBuffer(const ir::Op& op, RtValue& out) {
  if (!wg_) return fail(op, "'workgroup.alloc' outside a kernel invocation");
  out = RtValue{};
  out.type = op.result(0)->type();
  out.buffer = wg_->sharedBuffer(op);
  return true;
}

bool Exec::dispatch(const ir::Op& op, const ir::Function& kernel, std::array<uint32_t, 3> groups,
                    std::vector<RtValue> args) {
  if (!mem_) return fail(op, "no memory to dispatch with");
  Status s = runKernel(*mem_, kernel, groups, std::move(args));
  if (!s) return fail(s.error());
  return true;
}

}  // namespace eph::interp
