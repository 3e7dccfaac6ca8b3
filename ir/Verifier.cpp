#include "ir/Verifier.h"

#include <unordered_map>
#include <unordered_set>

#include "ir/OpTable.h"
#include "ir/ops/TypeVars.h"

namespace eph::ir {
namespace {

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string typeNames(std::span<const Type* const> ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + quoted(ts[i]->str());
  return s.empty() ? "()" : s;
}

std::string countText(int n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// The op's own location, else the nearest enclosing op's, else its function's.
Loc locOf(const Op& op) {
  for (const Op* o = &op; o; o = o->parentOp())
    if (o->loc().known()) return o->loc();
  const Function* f = op.parentFunction();
  return f ? f->loc() : Loc{};
}

// `code` is the kind of rule broken (docs/errors.md, V001..).
Error opError(const char* code, const Op& op, const std::string& msg) {
  return Error{locOf(op), quoted(op.name()) + ": " + msg, code};
}

Error fnError(const char* code, const Function& f, const std::string& msg) {
  return Error{f.loc(), "function '@" + f.name() + "': " + msg, code};
}

// The callee of a `call` (null when missing or unknown: the op's hook says so).
const Function* calleeOf(const Op& op) {
  const Attr* a = op.attr("callee");
  if (!a || a->kind != Attr::Kind::Symbol) return nullptr;
  return op.parentFunction()->module()->lookup(a->s);
}

// The first kernel-only op (a builtin such as global_id, a barrier, workgroup
// memory) that running `f` would execute, looking through the device functions
// it calls; null when there is none. Such functions only make sense inside a
// kernel's invocation, so host code may not call them.
const Op* firstKernelOnlyOp(const Function& f, std::unordered_set<const Function*>& seen) {
  if (!seen.insert(&f).second) return nullptr;
  const Op* found = nullptr;
  const_cast<Function&>(f).walk([&](Op* op) {
    if (found) return;
    if (op->info().has(kKernelOnly)) found = op;
    else if (const Function* callee = op->is(OpId::Call) ? calleeOf(*op) : nullptr;
             callee && callee->kind() == FunctionKind::Device)
      found = firstKernelOnlyOp(*callee, seen);
  });
  return found;
}

// Does `t` mention the box type anywhere (a member, an element, a parameter)?
bool mentionsBox(const Type* t) {
  if (t->isBox()) return true;
  if (t->elem() && mentionsBox(t->elem())) return true;
  for (const Type* m : t->members())
    if (mentionsBox(m)) return true;
  for (const Type* r : t->results())
    if (mentionsBox(r)) return true;
  return false;
}

// A device or workgroup buffer whose elements mention a box: box cells live in
// host memory, so device memory cannot hold them.
bool deviceBufferOfBox(const Type* t) {
  if (t->isBuffer() && t->space() != Space::Host && mentionsBox(t->elem())) return true;
  if (t->elem() && deviceBufferOfBox(t->elem())) return true;
  for (const Type* m : t->members())
    if (deviceBufferOfBox(m)) return true;
  for (const Type* r : t->results())
    if (deviceBufferOfBox(r)) return true;
  return false;
}

const char* const kBoxHostOnly = "box values (host heap cells) live only in host functions";

// Does region `outer` enclose region `inner` (or is it the same region)?
bool encloses(const Region* outer, const Region* inner) {
  for (const Region* r = inner; r; r = r->parentOp() ? r->parentOp()->parentRegion() : nullptr)
    if (r == outer) return true;
  return false;
}

class FunctionVerifier {
 public:
  explicit FunctionVerifier(const Function& f) : f_(f) {}

  Status run() {
    if (auto s = functionRules(); !s) return s;
    if (auto s = regionShape(f_.body(), nullptr, 0); !s) return s;
    if (auto s = structure(f_.body()); !s) return s;
    return types(f_.body());
  }

 private:
  // ---- 1. function rules ----------------------------------------------------
  Status functionRules() {
    std::vector<const Type*> args;
    for (Value* a : f_.body().args()) args.push_back(a->type());
    auto params = f_.paramTypes();
    if (!std::equal(args.begin(), args.end(), params.begin(), params.end()))
      return fnError("V001", f_, "body arguments " + typeNames(args) + " do not match its parameters " +
                             typeNames(params));
    if (auto s = boxRules(); !s) return s;
    if (!f_.isKernel()) return Status::ok();
    if (!f_.resultTypes().empty())
      return fnError("V002", f_, "kernels return nothing, but it returns " + typeNames(f_.resultTypes()));
    for (unsigned i = 0; i < params.size(); ++i)
      if (params[i]->isBuffer() && params[i]->space() != Space::Device)
        return fnError("V002", f_, "kernel parameter " + std::to_string(i) + " is a " +
                               std::string(spaceName(params[i]->space())) +
                               " buffer; kernels take device buffers");
    auto& w = f_.workgroupSize;
    std::string size = "(" + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", " +
                       std::to_string(w[2]) + ")";
    if (w[0] < 1 || w[1] < 1 || w[2] < 1)
      return fnError("V003", f_, "workgroup size " + size + " must be at least 1 in every dimension");
    uint64_t total = uint64_t(w[0]) * w[1] * w[2];
    if (total > kMaxWorkgroupInvocations)
      return fnError("V003", f_, "workgroup size " + size + " has " + std::to_string(total) +
                             " invocations, more than " + std::to_string(kMaxWorkgroupInvocations));
    return Status::ok();
  }

  // Box types only in host functions; no device buffer of boxes anywhere.
  Status boxRules() {
    auto params = f_.paramTypes();
    auto results = f_.resultTypes();
    for (unsigned r = 0; r < 2; ++r)
      for (unsigned i = 0; i < (r ? results : params).size(); ++i) {
        const Type* t = (r ? results : params)[i];
        std::string what = std::string(r ? "result " : "parameter ") + std::to_string(i) + " has type " +
                           quoted(t->str());
        if (!f_.isHost() && mentionsBox(t))
          return fnError("V004", f_, what + ", but " + kBoxHostOnly + " and @" + f_.name() + " is a " +
                                 std::string(functionKindName(f_.kind())) + " function");
        if (deviceBufferOfBox(t))
          return fnError("V004", f_, what + ": a device buffer cannot hold boxes (host heap cells)");
      }
    return Status::ok();
  }

  // The op's result and region argument types obey the box rules above.
  Status boxTypes(const Op& op) {
    auto check = [&](const Value* v) -> Status {
      const Type* t = v->type();
      if (!f_.isHost() && mentionsBox(t))
        return opError("V004", op, "a value of type " + quoted(t->str()) + " in @" + f_.name() + ", a " +
                               std::string(functionKindName(f_.kind())) + " function, but " + kBoxHostOnly);
      if (deviceBufferOfBox(t))
        return opError("V004", op, "type " + quoted(t->str()) + ": a device buffer cannot hold boxes (host heap cells)");
      return Status::ok();
    };
    for (const Value* v : op.results())
      if (auto s = check(v); !s) return s;
    for (unsigned i = 0; i < op.numRegions(); ++i)
      for (const Value* v : op.region(i).args())
        if (auto s = check(v); !s) return s;
    return Status::ok();
  }

  // ---- 2. structure -----------------------------------------------------------
  // Region `r` (region `index` of `parent`, or the function body when parent is
  // null) ends in exactly one terminator.
  Status regionShape(const Region& r, const Op* parent, unsigned index) {
    for (auto& op : r.ops())
      if (op.get() != r.back() && op->info().has(kTerminator))
        return opError("V005", *op, "a terminator must be the last op in its region");
    const Op* last = r.back();
    if (last && last->info().has(kTerminator)) return Status::ok();
    std::string what = last ? "ends with " + quoted(last->name()) : std::string("is empty");
    if (!parent) return fnError("V005", f_, "body must end with 'return', but it " + what);
    return opError("V005", *parent, "region " + std::to_string(index) +
                                " must end with a terminator, but it " + what);
  }

  Status counts(const Op& op) {
    const OpInfo& info = op.info();
    auto check = [&](int want, unsigned got, const char* noun) -> std::string {
      if (want == kVariadic || int(got) == want) return {};
      return "expects " + countText(want, noun) + ", got " + std::to_string(got);
    };
    for (auto msg : {check(info.numOperands, op.numOperands(), "operand"),
                     check(info.numResults, op.numResults(), "result"),
                     check(info.numRegions, op.numRegions(), "region")})
      if (!msg.empty()) return opError("V006", op, msg);
    return Status::ok();
  }

  Status placement(const Op& op) {
    std::string kind(functionKindName(f_.kind()));
    if (op.info().has(kHostOnly) && !f_.isHost())
      return opError("V007", op, "is only allowed in host functions, but @" + f_.name() + " is a " + kind +
                             " function");
    if (op.info().has(kKernelOnly) && f_.isHost())
      return opError("V007", op, "is only allowed in kernels and device functions, but @" + f_.name() +
                             " is a host function");
    if (op.is(OpId::Call) && f_.isHost()) {
      const Function* callee = calleeOf(op);
      std::unordered_set<const Function*> seen;
      const Op* inner = callee && callee->kind() == FunctionKind::Device
                            ? firstKernelOnlyOp(*callee, seen) : nullptr;
      if (inner)
        return opError("V007", op, "host function @" + f_.name() + " calls @" + callee->name() +
                               ", which uses " + quoted(inner->name()) + " at " +
                               inner->loc().str() + "; that only runs inside a kernel");
    }
    if (op.is(OpId::Call) && !f_.isHost()) {
      const Function* callee = calleeOf(op);
      if (callee && callee->kind() == FunctionKind::Host)
        return opError("V007", op, std::string(f_.isKernel() ? "a kernel" : "a device function") +
                               " may call only device functions, but @" + callee->name() +
                               " is a host function");
    }
    return Status::ok();
  }

  Status dominance(const Op& op) {
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      const Value* v = op.operand(i);
      if (visible_.count(v)) continue;
      std::string what = "operand " + std::to_string(i);
      if (!v->name().empty()) what += " (%" + v->name() + ")";
      const Region* home = v->parentRegion();
      const Function* owner = home ? home->parentFunction() : nullptr;
      if (!owner) return opError("V008", op, what + " is not defined in any function");
      if (owner != &f_) return opError("V008", op, what + " is defined in another function, @" + owner->name());
      if (encloses(home, op.parentRegion()))
        return opError("V008", op, what + " is used before its definition");
      return opError("V008", op, what + " is defined in a region that does not enclose this use");
    }
    return Status::ok();
  }

  Status structure(const Region& r) {
    for (Value* a : r.args()) visible_.insert(a);
    for (auto& p : r.ops()) {
      const Op& op = *p;
      if (auto s = counts(op); !s) return s;
      if (auto s = placement(op); !s) return s;
      if (auto s = boxTypes(op); !s) return s;
      if (auto s = dominance(op); !s) return s;
      // Which terminator may end which region is a structural rule: the
      // terminators' hooks check it (and their operand types) here.
      if (op.info().has(kTerminator) && op.info().verify)
        if (std::string msg = op.info().verify(op); !msg.empty()) return opError("V009", op, msg);
      for (unsigned i = 0; i < op.numRegions(); ++i) {
        if (auto s = regionShape(op.region(i), &op, i); !s) return s;
        if (auto s = structure(op.region(i)); !s) return s;
      }
      for (Value* v : op.results()) visible_.insert(v);
    }
    // Values of this region go out of scope for the regions that follow.
    for (Value* a : r.args()) visible_.erase(a);
    for (auto& p : r.ops())
      for (Value* v : p->results()) visible_.erase(v);
    return Status::ok();
  }

  // ---- 3. types -----------------------------------------------------------------
  Status types(const Region& r) {
    for (auto& p : r.ops()) {
      const Op& op = *p;
      // In a generic function, an op whose types mention a type variable is
      // checked after monomorphization, unless its rule handles variables.
      bool deferred = !op.info().has(kTypeVarAware) && opHasTypeVar(op);
      if (!op.info().has(kTerminator) && op.info().verify && !deferred)
        if (std::string msg = op.info().verify(op); !msg.empty()) return opError("V009", op, msg);
      for (unsigned i = 0; i < op.numRegions(); ++i)
        if (auto s = types(op.region(i)); !s) return s;
    }
    return Status::ok();
  }

  const Function& f_;
  std::unordered_set<const Value*> visible_;
};

// ---- recursion among device functions ---------------------------------------

struct CallEdge {
  const Op* call;
  const Function* callee;
};

void collectDeviceCalls(const Region& r, std::vector<CallEdge>& out) {
  for (auto& op : r.ops()) {
    if (op->is(OpId::Call))
      if (const Function* callee = calleeOf(*op); callee && !callee->isHost())
        out.push_back({op.get(), callee});
    for (unsigned i = 0; i < op->numRegions(); ++i) collectDeviceCalls(op->region(i), out);
  }
}

class RecursionCheck {
 public:
  explicit RecursionCheck(const Module& m) {
    for (auto& f : m.functions())
      if (!f->isHost()) collectDeviceCalls(f->body(), edges_[f.get()]);
  }

  Status run(const Module& m) {
    for (auto& f : m.functions())
      if (!f->isHost() && state_[f.get()] == State::New)
        if (auto s = visit(f.get()); !s) return s;
    return Status::ok();
  }

 private:
  enum class State { New, OnPath, Done };

  Status visit(const Function* f) {
    state_[f] = State::OnPath;
    path_.push_back(f);
    for (const CallEdge& e : edges_[f]) {
      if (state_[e.callee] == State::OnPath) {
        std::string cycle;
        auto start = std::find(path_.begin(), path_.end(), e.callee);
        for (auto it = start; it != path_.end(); ++it) cycle += "@" + (*it)->name() + " calls ";
        cycle += "@" + e.callee->name();
        return opError("V010", *e.call, "recursion is not allowed in kernels and device functions: " + cycle);
      }
      if (state_[e.callee] == State::New)
        if (auto s = visit(e.callee); !s) return s;
    }
    path_.pop_back();
    state_[f] = State::Done;
    return Status::ok();
  }

  std::unordered_map<const Function*, std::vector<CallEdge>> edges_;
  std::unordered_map<const Function*, State> state_;
  std::vector<const Function*> path_;
};

}  // namespace

Status verify(const Module& m) {
  std::unordered_set<std::string_view> names;
  for (auto& f : m.functions()) {
    if (!names.insert(f->name()).second) return fnError("V011", *f, "is defined twice");
    if (auto s = FunctionVerifier(*f).run(); !s) return s;
  }
  return RecursionCheck(m).run(m);
}

}  // namespace eph::ir
