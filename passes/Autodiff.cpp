// Reverse and forward mode automatic differentiation of device functions
// (passes/Autodiff.h, docs/autodiff.md).
//
// Both modes walk regions with an explicit stack of frames, so a 20,000-op
// function costs no native stack. Which values need derivatives is an
// activity analysis first ("varied": depends on a differentiated parameter,
// and is a float scalar or vector).
//
// Reverse mode: @f.vjp first runs a copy of f's body (the primal sweep), then
// visits f's ops from the last to the first, accumulating adjoints and asking
// each op's reverse rule for its operands' contributions. A structured op gets
// a reverse counterpart emitted where the primal sweep left off:
//   - if / match: the same op on the same condition; each branch re-runs the
//     primal branch (recompute, no tape), then sweeps it backwards, and yields
//     the adjoints of the outer values the branch used;
//   - for: a loop over k = N-1 .. 0 (N the trip count, computed at run time);
//     iteration k replays the primal loop for k iterations to get the
//     carried values at the start of iteration k (recompute: no tape, any trip
//     count, quadratic in the trip count), re-runs the body and sweeps it
//     backwards; carried adjoints and the outer values' adjoint sums are the
//     reverse loop's carried values.
// Calls to device functions call the callee's .vjp, generated in turn (a
// worklist, not recursion).
//
// Forward mode: @f.jvp runs the body once with a tangent beside each varied
// value; structured ops carry tangents as extra results / carried values.
#include "passes/Autodiff.h"

#include <deque>
#include <set>

#include "ir/Builder.h"
#include "passes/OpFacts.h"

namespace eph::passes {
namespace {

using namespace ir;
using V = Value*;
using Vs = std::vector<Value*>;

enum class Mode { Reverse, Forward };

bool isDiff(const Type* t) { return (t->isFloat() || t->isVector()) && t->scalar()->isFloat(); }

V zeroOf(Builder& b, const Type* t) {
  V s = b.constFloat(t->scalar(), 0);
  return t->isVector() ? b.op("vec.make", Vs(t->count(), s), t) : s;
}

std::vector<const Type*> typesOf(const Vs& vs) {
  std::vector<const Type*> ts;
  for (V v : vs) ts.push_back(v->type());
  return ts;
}

// Is `r` nested (at any depth) in a region of `s`?
bool inside(const Region* r, const Op* s) {
  for (const Op* p = r ? r->parentOp() : nullptr; p; p = p->parentOp())
    if (p == s) return true;
  return false;
}

// The pass's errors have the codes P007-P013 (ir/ErrorCodes.cpp, docs/errors.md).
Error opError(const char* code, const Op& op, const Function& f, const std::string& what) {
  return makeError(op.loc(), "autodiff: '" + std::string(op.name()) + "' " + what + " (differentiating @" +
                                 f.name() + ")", code);
}

// ---- activity ----------------------------------------------------------------

using ValueSet = std::set<const Value*>;

// Marks every float value that depends on a varied parameter, to a fixpoint
// (loop-carried values may become varied through their yield).
void analyze(Function& f, const std::vector<bool>& wrt, ValueSet& varied) {
  for (unsigned i = 0; i < wrt.size(); ++i)
    if (wrt[i]) varied.insert(f.param(i));
  bool changed = true;
  auto mark = [&](const Value* v) {
    if (isDiff(v->type()) && varied.insert(v).second) changed = true;
  };
  while (changed) {
    changed = false;
    f.walk([&](Op* op) {
      if (op->info().has(kTerminator)) {
        Op* p = op->parentOp();
        if (!p) return;
        bool cond = op->is(OpId::Condition);
        for (unsigned j = 0; j < op->numOperands(); ++j) {
          if (!varied.count(op->operand(j))) continue;
          if (p->is(OpId::For)) {
            mark(p->result(j));
            mark(p->region(0).arg(j + 1));
          } else if (p->is(OpId::While)) {
            if (cond && j > 0) {
              mark(p->result(j - 1));
              mark(p->region(1).arg(j - 1));
            } else if (!cond) {
              mark(p->region(0).arg(j));
            }
          } else if (j < p->numResults()) {
            mark(p->result(j));
          }
        }
        return;
      }
      if (op->numRegions() > 0) {
        unsigned first = op->is(OpId::For) ? 3 : 0;
        if (op->is(OpId::For) || op->is(OpId::While))
          for (unsigned j = first; j < op->numOperands(); ++j)
            if (varied.count(op->operand(j))) mark(op->region(0).arg(j - first + (first ? 1 : 0)));
        return;
      }
      for (V v : op->operands())
        if (varied.count(v)) {
          for (V r : op->results()) mark(r);
          break;
        }
    });
  }
}

// Ops the mode cannot differentiate through, on varied values: an error for the
// first one found.
Status checkActive(Module& m, Function& f, const ValueSet& varied, Mode mode) {
  std::optional<Error> err;
  f.walk([&](Op* op) {
    if (err || op->info().has(kTerminator)) return;
    if (op->is(OpId::While)) {
      bool any = false;
      for (V r : op->results()) any |= varied.count(r) > 0;
      for (unsigned k = 0; k < op->numRegions(); ++k)
        for (V a : op->region(k).args()) any |= varied.count(a) > 0;
      if (any) err = opError("P010", *op, f, "loops are not differentiated; use 'for'");
      return;
    }
    if (op->numRegions() > 0) return;
    bool any = false;
    for (V v : op->operands()) any |= varied.count(v) > 0;
    if (!any) return;
    if (op->is(OpId::Call)) {
      Function* callee = m.lookup(op->symbolAttr("callee"));
      if (!callee || callee->kind() != FunctionKind::Device)
        err = opError("P009", *op, f,
                      "to @" + op->symbolAttr("callee") + ": only calls to device functions are differentiated");
      return;
    }
    const DerivativeRules* r = op->info().derivative;
    if (r && (mode == Mode::Reverse ? r->reverse != nullptr : r->forward != nullptr)) return;
    bool used = op->numResults() == 0;
    for (V res : op->results()) used |= res->hasUses();
    if (used)
      err = opError("P009", *op, f, std::string("has no ") + (mode == Mode::Reverse ? "reverse" : "forward") +
                                        " derivative rule, and its operands depend on a differentiated parameter");
  });
  if (err) return *err;
  return Status::ok();
}

// Removes pure ops (and effect-free structured ops) whose results are unused.
void pruneDead(Function& g) {
  bool changed = true;
  while (changed) {
    changed = false;
    std::vector<Region*> stack{&g.body()};
    while (!stack.empty()) {
      Region* r = stack.back();
      stack.pop_back();
      for (Op* op = r->back(); op;) {
        Op* prev = op->prevOp();
        bool used = false;
        for (V v : op->results()) used |= v->hasUses();
        bool removable = op->numRegions() > 0 ? isEffectFree(*op) : op->info().has(kPure);
        if (!used && removable && !op->info().has(kTerminator) && !movesOwnership(*op)) {
          op->erase();
          changed = true;
        } else {
          for (unsigned k = 0; k < op->numRegions(); ++k) stack.push_back(&op->region(k));
        }
        op = prev;
      }
    }
  }
}

// ---- the session: the functions to build, by worklist ------------------------

struct Job {
  Function* primal;
  Function* out;
  std::vector<bool> wrt;
  Mode mode;
};

class Session {
 public:
  explicit Session(Module& m) : m_(m), ctx_(m.context()) {}
  Module& module() { return m_; }
  Context& ctx() { return ctx_; }

  // The derivative function of `f` (created as a declaration and queued, or
  // one that exists already with the right type).
  Expected<Function*> request(Function& f, std::vector<bool> wrt, Mode mode);
  // The derivative of a callee: with respect to all of its float parameters.
  Expected<Function*> requestCallee(Function& f, Mode mode) {
    std::vector<bool> all;
    for (const Type* t : f.paramTypes()) all.push_back(isDiff(t));
    return request(f, all, mode);
  }
  Status drain();
  void rollback() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) m_.eraseFunction(*it);
    created_.clear();
  }

 private:
  Module& m_;
  Context& ctx_;
  std::deque<Job> work_;
  std::vector<Function*> created_;
};

Expected<Function*> Session::request(Function& f, std::vector<bool> wrt, Mode mode) {
  if (f.kind() != FunctionKind::Device)
    return makeError(f.loc(), "autodiff: @" + f.name() + " is a " + std::string(functionKindName(f.kind())) +
                                  " function; only device functions are differentiated",
                     "P007");
  auto params = f.paramTypes();
  wrt.resize(params.size(), false);
  for (unsigned i = 0; i < params.size(); ++i) {
    if (params[i]->isLinear() || params[i]->isAffine())
      return makeError(f.loc(), "autodiff: parameter " + std::to_string(i) + " of @" + f.name() + " has type '" +
                                    params[i]->str() + "', which cannot be used twice",
                       "P008");
    if (wrt[i] && !isDiff(params[i]))
      return makeError(f.loc(), "autodiff: parameter " + std::to_string(i) + " of @" + f.name() + " has type '" +
                                    params[i]->str() + "'; only float scalars and float vectors are differentiated",
                       "P008");
  }
  const Op* ret = f.body().terminator();
  if (!ret || !ret->is(OpId::Return)) return makeError(f.loc(), "autodiff: @" + f.name() + " has no body", "P007");
  std::vector<const Type*> in(params.begin(), params.end()), fields;
  for (const Type* r : f.resultTypes()) fields.push_back(r);
  if (mode == Mode::Reverse) {
    for (const Type* r : f.resultTypes())
      if (isDiff(r)) in.push_back(r);
    for (unsigned i = 0; i < params.size(); ++i)
      if (wrt[i]) fields.push_back(params[i]);
  } else {
    for (unsigned i = 0; i < params.size(); ++i)
      if (wrt[i]) in.push_back(params[i]);
    for (const Type* r : f.resultTypes())
      if (isDiff(r)) fields.push_back(r);
  }
  const Type* type = ctx_.functionType(in, {ctx_.structType(fields)});
  std::string name = f.name() + (mode == Mode::Reverse ? ".vjp" : ".jvp");
  if (Function* e = m_.lookup(name)) {
    if (e->type() == type && e->kind() == FunctionKind::Device) return e;
    return makeError(f.loc(), "autodiff: @" + name + " exists already with type '" + e->type()->str() +
                                  "', not '" + type->str() + "'",
                     "P012");
  }
  Function* g = m_.addFunction(name, FunctionKind::Device, type, f.loc());
  created_.push_back(g);
  work_.push_back({&f, g, std::move(wrt), mode});
  return g;
}

// ---- reverse mode --------------------------------------------------------------

class Reverse {
 public:
  Reverse(Session& s, const Job& job, const ValueSet& varied)
      : s_(s), ctx_(s.ctx()), job_(job), f_(*job.primal), g_(*job.out), varied_(varied) {}
  Status run();

 private:
  struct Frame {
    Region* primal;
    Op* cursor;  // the next primal op to visit (backwards); null: done
    Builder b;
    Op* owner = nullptr;  // the primal structured op this region belongs to
    Op* rev = nullptr;    // its reverse counterpart
    unsigned region = 0;
    Vs free, saved;                 // outer values whose adjoints the region yields
    std::vector<unsigned> carried;  // for: carried values with adjoints
  };

  V p(const Value* v) {
    auto it = prim_.find(v);
    return it == prim_.end() ? const_cast<V>(v) : it->second;
  }
  V adjOf(const Value* v) {
    auto it = adj_.find(v);
    return it == adj_.end() ? nullptr : it->second;
  }
  void setAdj(const Value* v, V a) {
    if (a) adj_[v] = a;
    else adj_.erase(v);
  }
  void addAdj(Builder& b, const Value* v, V c) {
    if (!c || !varied_.count(v)) return;
    V cur = adjOf(v);
    adj_[v] = cur ? b.op("add", {cur, c}, v->type()) : c;
  }
  V adjOr0(Builder& b, const Value* v) {
    V a = adjOf(v);
    return a ? a : zeroOf(b, v->type());
  }
  // Copies `from`'s ops but its terminator to the end of `to`.
  void recompute(Region& from, Region& to) {
    for (auto& op : from.ops())
      if (!op->info().has(kTerminator)) to.append(op->clone(prim_));
  }
  Vs freeVaried(Op* s) {
    Vs out;
    ValueSet seen;
    s->walk([&](Op* o) {
      if (o == s) return;
      for (V v : o->operands())
        if (varied_.count(v) && !inside(v->parentRegion(), s) && seen.insert(v).second) out.push_back(v);
    });
    return out;
  }

  Status visit(Op* op);
  Status applyRule(Frame& fr, Op* op);
  Status call(Frame& fr, Op* op);
  void beginBranches(Op* s);
  void pushBranch(Op* s, Op* rev, unsigned r, const Vs& free);
  void beginLoop(Op* s);
  void finishFrame();

  Session& s_;
  Context& ctx_;
  const Job& job_;
  Function& f_;
  Function& g_;
  const ValueSet& varied_;
  std::map<const Value*, Value*> prim_;  // primal value -> its copy in g
  std::map<const Value*, Value*> adj_;   // primal value -> its adjoint so far (where visible)
  std::vector<Frame> frames_;
};

Status Reverse::run() {
  Region& body = g_.body();  // its arguments: f's parameters, then the seeds
  unsigned np = static_cast<unsigned>(f_.paramTypes().size()), next = np;
  for (unsigned i = 0; i < np; ++i) {
    prim_[f_.param(i)] = body.arg(i);
    body.arg(i)->setName(f_.param(i)->name());
  }
  Vs seeds;
  for (const Type* r : f_.resultTypes()) {
    seeds.push_back(isDiff(r) ? body.arg(next++) : nullptr);
    if (seeds.back()) seeds.back()->setName("seed");
  }
  recompute(f_.body(), body);
  Op* ret = f_.body().terminator();
  Builder b(ctx_, body);
  for (unsigned j = 0; j < ret->numOperands(); ++j) addAdj(b, ret->operand(j), seeds[j]);
  frames_.push_back(Frame{&f_.body(), ret->prevOp(), b});
  while (!frames_.empty()) {
    if (!frames_.back().cursor) {
      finishFrame();
      continue;
    }
    Op* op = frames_.back().cursor;
    frames_.back().cursor = op->prevOp();
    if (Status st = visit(op); !st) return st;
  }
  Vs fields;
  for (V v : ret->operands()) fields.push_back(p(v));
  for (unsigned i = 0; i < job_.wrt.size(); ++i)
    if (job_.wrt[i]) fields.push_back(adjOr0(b, f_.param(i)));
  b.setLoc(ret->loc());
  V out = b.op("struct.make", fields, g_.resultTypes()[0]);
  b.ret({out});
  return Status::ok();
}

Status Reverse::visit(Op* op) {
  bool hasAdj = false;
  for (V r : op->results()) hasAdj |= adjOf(r) != nullptr;
  if (!hasAdj) return Status::ok();
  Frame& fr = frames_.back();
  fr.b.setLoc(op->loc());
  if (op->is(OpId::For)) {
    beginLoop(op);
    return Status::ok();
  }
  if (op->numRegions() > 0) {  // if, match (while was refused by checkActive)
    beginBranches(op);
    return Status::ok();
  }
  bool any = false;
  for (V v : op->operands()) any |= varied_.count(v) > 0;
  if (!any) return Status::ok();
  if (op->is(OpId::Call)) return call(fr, op);
  return applyRule(fr, op);
}

Status Reverse::applyRule(Frame& fr, Op* op) {
  const DerivativeRules* rules = op->info().derivative;
  if (!rules || !rules->reverse) return opError("P009", *op, f_, "has no reverse derivative rule");
  Vs operands, results, radj;
  for (V v : op->operands()) operands.push_back(p(v));
  for (V r : op->results()) {
    results.push_back(p(r));
    radj.push_back(adjOf(r));
  }
  Vs contrib = rules->reverse(DiffContext{fr.b, *op, operands, results}, radj);
  if (contrib.size() != op->numOperands())
    return opError("P011", *op, f_, "has a reverse rule that returned " + std::to_string(contrib.size()) +
                                        " adjoints for " + std::to_string(op->numOperands()) + " operands");
  for (unsigned i = 0; i < contrib.size(); ++i) {
    if (contrib[i] && contrib[i]->type() != op->operand(i)->type())
      return opError("P011", *op, f_,
                     "has a reverse rule that returned '" + contrib[i]->type()->str() + "' for operand " +
                         std::to_string(i) + " of type '" + op->operand(i)->type()->str() + "'");
    addAdj(fr.b, op->operand(i), contrib[i]);
  }
  return Status::ok();
}

Status Reverse::call(Frame& fr, Op* op) {
  Function* callee = s_.module().lookup(op->symbolAttr("callee"));
  auto d = s_.requestCallee(*callee, Mode::Reverse);
  if (!d) return d.error();
  Vs args;
  for (V v : op->operands()) args.push_back(p(v));
  for (unsigned j = 0; j < op->numResults(); ++j)
    if (isDiff(callee->resultTypes()[j])) args.push_back(adjOr0(fr.b, op->result(j)));
  const Type* st = (*d)->resultTypes()[0];
  V s = fr.b.call((*d)->name(), args, {st})[0];
  unsigned field = op->numResults();
  for (unsigned i = 0; i < op->numOperands(); ++i) {
    if (!isDiff(callee->paramTypes()[i])) continue;
    V gi = fr.b.op("struct.extract", {s}, st->members()[field], {{"index", Attr::integer(field)}});
    ++field;
    addAdj(fr.b, op->operand(i), gi);
  }
  return Status::ok();
}

void Reverse::beginBranches(Op* s) {
  Frame& outer = frames_.back();
  Vs free = freeVaried(s);
  Vs operands;
  for (V v : s->operands()) operands.push_back(p(v));
  Op* rev = outer.b.create(s->name(), operands, typesOf(free), s->attrs(), s->numRegions());
  for (unsigned r = 0; r < s->numRegions(); ++r)
    for (V a : s->region(r).args()) rev->region(r).addArg(a->type(), a->name());
  pushBranch(s, rev, 0, free);
}

void Reverse::pushBranch(Op* s, Op* rev, unsigned r, const Vs& free) {
  Region& pr = s->region(r);
  Region& rr = rev->region(r);
  for (unsigned k = 0; k < pr.numArgs(); ++k) prim_[pr.arg(k)] = rr.arg(k);
  recompute(pr, rr);
  Op* y = pr.terminator();
  Frame fr{&pr, y->prevOp(), Builder(ctx_, rr), s, rev, r, free};
  fr.b.setLoc(s->loc());
  for (V v : free) {
    fr.saved.push_back(adjOf(v));
    setAdj(v, nullptr);
  }
  for (unsigned j = 0; j < y->numOperands(); ++j) addAdj(fr.b, y->operand(j), adjOf(s->result(j)));
  frames_.push_back(std::move(fr));
}

// The trip count of `for lo, hi, step` (0 when the loop does not run).
V tripCount(Builder& b, V lo, V hi, V step) {
  const Type* t = lo->type();
  V one = b.constInt(t, 1), zero = b.constInt(t, 0);
  auto bin = [&](std::string_view n, V x, V y) { return b.op(n, {x, y}, t); };
  auto gt = [&](V x, V y) { return b.op("gt", {x, y}, b.context().boolType()); };
  if (!t->isSigned()) {
    V n = bin("div", bin("sub", bin("add", bin("sub", hi, lo), step), one), step);
    return b.op("select", {gt(hi, lo), n, zero}, t);
  }
  V sgn = b.op("select", {gt(step, zero), one, b.constInt(t, -1)}, t);
  V n = bin("div", bin("sub", bin("add", bin("sub", hi, lo), step), sgn), step);
  return bin("max", n, zero);
}

void Reverse::beginLoop(Op* s) {
  Frame& outer = frames_.back();
  Builder& b = outer.b;
  V lo = p(s->operand(0)), hi = p(s->operand(1)), step = p(s->operand(2));
  const Type* t = lo->type();
  V n = tripCount(b, lo, hi, step);
  Region& pr = s->region(0);
  std::vector<unsigned> carried;
  for (unsigned c = 0; c < s->numResults(); ++c)
    if (varied_.count(pr.arg(c + 1))) carried.push_back(c);
  Vs free = freeVaried(s);
  Vs init;
  for (unsigned c : carried) init.push_back(adjOr0(b, s->result(c)));
  for (V v : free) init.push_back(zeroOf(b, v->type()));
  V zero = b.constInt(t, 0), one = b.constInt(t, 1);
  Vs operands = {zero, n, one};
  operands.insert(operands.end(), init.begin(), init.end());
  Op* rev = b.create("for", operands, typesOf(init), {}, 1);
  Region& rr = rev->region(0);
  V j = rr.addArg(t, "j");
  for (V v : init) rr.addArg(v->type(), "adj");
  Builder rb(ctx_, rr);
  rb.setLoc(s->loc());
  // Iteration k = n-1-j runs with iv = lo + k*step; its carried values come
  // from replaying the primal loop for k iterations.
  V k = rb.op("sub", {rb.op("sub", {n, one}, t), j}, t);
  V ivk = rb.op("add", {lo, rb.op("mul", {k, step}, t)}, t);
  prim_[pr.arg(0)] = ivk;
  if (s->numResults() > 0) {
    Vs keep;
    for (V r : s->results()) keep.push_back(p(r));
    Op* replay = rr.append(s->clone(prim_));
    replay->setOperand(1, ivk);
    for (unsigned c = 0; c < s->numResults(); ++c) {
      prim_[pr.arg(c + 1)] = replay->result(c);
      prim_[s->result(c)] = keep[c];
    }
  }
  recompute(pr, rr);
  Op* y = pr.terminator();
  Frame fr{&pr, y->prevOp(), rb, s, rev, 0, free, {}, carried};
  for (unsigned i = 0; i < free.size(); ++i) {
    fr.saved.push_back(adjOf(free[i]));
    setAdj(free[i], rr.arg(1 + carried.size() + i));
  }
  for (unsigned idx = 0; idx < carried.size(); ++idx) addAdj(fr.b, y->operand(carried[idx]), rr.arg(1 + idx));
  frames_.push_back(std::move(fr));
}

void Reverse::finishFrame() {
  Frame fr = std::move(frames_.back());
  frames_.pop_back();
  if (!fr.owner) return;
  Vs yields;
  bool loop = fr.owner->is(OpId::For);
  if (loop)
    for (unsigned c : fr.carried) yields.push_back(adjOr0(fr.b, fr.primal->arg(c + 1)));
  for (V v : fr.free) yields.push_back(adjOr0(fr.b, v));
  fr.b.yield(yields);
  for (unsigned i = 0; i < fr.free.size(); ++i) setAdj(fr.free[i], fr.saved[i]);
  if (!loop && fr.region + 1 < fr.owner->numRegions()) {
    pushBranch(fr.owner, fr.rev, fr.region + 1, fr.free);
    return;
  }
  Builder& ob = frames_.back().b;
  unsigned at = 0;
  if (loop)
    for (unsigned c : fr.carried) addAdj(ob, fr.owner->operand(3 + c), fr.rev->result(at++));
  for (V v : fr.free) addAdj(ob, v, fr.rev->result(at++));
}

// ---- forward mode --------------------------------------------------------------

class Forward {
 public:
  Forward(Session& s, const Job& job, const ValueSet& varied)
      : s_(s), ctx_(s.ctx()), job_(job), f_(*job.primal), g_(*job.out), varied_(varied) {}
  Status run();

 private:
  struct Frame {
    Region* primal;
    Op* cursor;  // the next primal op to visit; its terminator ends the frame
    Region* out;
    Builder b;
    Op* owner = nullptr;
    Op* neu = nullptr;
    unsigned region = 0;
    std::vector<unsigned> dres;  // owner results (for: carried values) with tangents
  };

  V p(const Value* v) {
    auto it = prim_.find(v);
    return it == prim_.end() ? const_cast<V>(v) : it->second;
  }
  V tanOr0(Builder& b, const Value* v) {
    auto it = tan_.find(v);
    return it != tan_.end() && it->second ? it->second : zeroOf(b, v->type());
  }
  bool active(Op* op) {
    for (V v : op->operands())
      if (varied_.count(v)) return true;
    for (V r : op->results())
      if (varied_.count(r)) return true;
    return false;
  }
  Status visit(Frame& fr, Op* op);
  void pushRegion(Op* s, Op* neu, unsigned r, std::vector<unsigned> dres);
  void finish(Op* terminator);

  Session& s_;
  Context& ctx_;
  const Job& job_;
  Function& f_;
  Function& g_;
  const ValueSet& varied_;
  std::map<const Value*, Value*> prim_, tan_;
  std::vector<Frame> frames_;
};

Status Forward::run() {
  Region& body = g_.body();  // its arguments: f's parameters, then the tangents
  unsigned np = static_cast<unsigned>(f_.paramTypes().size()), next = np;
  for (unsigned i = 0; i < np; ++i) {
    prim_[f_.param(i)] = body.arg(i);
    body.arg(i)->setName(f_.param(i)->name());
  }
  for (unsigned i = 0; i < job_.wrt.size(); ++i)
    if (job_.wrt[i]) {
      tan_[f_.param(i)] = body.arg(next);
      body.arg(next++)->setName("d" + f_.param(i)->name());
    }
  frames_.push_back(Frame{&f_.body(), f_.body().front(), &body, Builder(ctx_, body)});
  while (!frames_.empty()) {
    Op* op = frames_.back().cursor;
    if (op->info().has(kTerminator)) {
      finish(op);
      continue;
    }
    frames_.back().cursor = op->nextOp();
    if (Status st = visit(frames_.back(), op); !st) return st;
  }
  return Status::ok();
}

Status Forward::visit(Frame& fr, Op* op) {
  fr.b.setLoc(op->loc());
  if (!active(op)) {
    fr.out->append(op->clone(prim_));
    return Status::ok();
  }
  if (op->numRegions() > 0) {  // if, match, for (while was refused by checkActive)
    bool loop = op->is(OpId::For);
    Region& r0 = op->region(0);
    std::vector<unsigned> dres;
    for (unsigned j = 0; j < op->numResults(); ++j)
      if (varied_.count(loop ? r0.arg(j + 1) : op->result(j))) dres.push_back(j);
    Vs operands;
    for (V v : op->operands()) operands.push_back(p(v));
    std::vector<const Type*> types;
    for (V r : op->results()) types.push_back(r->type());
    for (unsigned j : dres) {
      types.push_back(op->result(j)->type());
      if (loop) operands.push_back(tanOr0(fr.b, op->operand(3 + j)));
    }
    Op* neu = fr.b.create(op->name(), operands, types, op->attrs(), op->numRegions());
    for (unsigned r = 0; r < op->numRegions(); ++r)
      for (V a : op->region(r).args()) neu->region(r).addArg(a->type(), a->name());
    if (loop)
      for (unsigned j : dres) neu->region(0).addArg(op->result(j)->type(), "d");
    pushRegion(op, neu, 0, std::move(dres));
    return Status::ok();
  }
  if (op->is(OpId::Call)) {
    Function* callee = s_.module().lookup(op->symbolAttr("callee"));
    auto d = s_.requestCallee(*callee, Mode::Forward);
    if (!d) return d.error();
    Vs args;
    for (V v : op->operands()) args.push_back(p(v));
    for (unsigned i = 0; i < op->numOperands(); ++i)
      if (isDiff(callee->paramTypes()[i])) args.push_back(tanOr0(fr.b, op->operand(i)));
    const Type* st = (*d)->resultTypes()[0];
    V s = fr.b.call((*d)->name(), args, {st})[0];
    auto field = [&](unsigned k) {
      return fr.b.op("struct.extract", {s}, st->members()[k], {{"index", Attr::integer(k)}});
    };
    unsigned k = op->numResults();
    for (unsigned j = 0; j < op->numResults(); ++j) {
      prim_[op->result(j)] = field(j);
      if (isDiff(op->result(j)->type())) tan_[op->result(j)] = field(k++);
    }
    return Status::ok();
  }
  const DerivativeRules* rules = op->info().derivative;
  if (!rules || !rules->forward) return opError("P009", *op, f_, "has no forward derivative rule");
  Op* c = fr.out->append(op->clone(prim_));
  Vs operands, tans;
  for (V v : op->operands()) {
    operands.push_back(p(v));
    auto it = tan_.find(v);
    tans.push_back(it == tan_.end() ? nullptr : it->second);
  }
  Vs results = c->results();
  Vs out = rules->forward(DiffContext{fr.b, *op, operands, results}, tans);
  if (out.size() != op->numResults())
    return opError("P011", *op, f_,
                   "has a forward rule that returned " + std::to_string(out.size()) + " tangents for " +
                       std::to_string(op->numResults()) + " results");
  for (unsigned j = 0; j < out.size(); ++j) {
    if (!out[j] || !varied_.count(op->result(j))) continue;
    if (out[j]->type() != op->result(j)->type())
      return opError("P011", *op, f_,
                     "has a forward rule that returned '" + out[j]->type()->str() + "' for result " +
                         std::to_string(j) + " of type '" + op->result(j)->type()->str() + "'");
    tan_[op->result(j)] = out[j];
  }
  return Status::ok();
}

void Forward::pushRegion(Op* s, Op* neu, unsigned r, std::vector<unsigned> dres) {
  Region& pr = s->region(r);
  Region& nr = neu->region(r);
  for (unsigned k = 0; k < pr.numArgs(); ++k) prim_[pr.arg(k)] = nr.arg(k);
  if (s->is(OpId::For))
    for (unsigned idx = 0; idx < dres.size(); ++idx) tan_[pr.arg(dres[idx] + 1)] = nr.arg(pr.numArgs() + idx);
  frames_.push_back(Frame{&pr, pr.front(), &nr, Builder(ctx_, nr), s, neu, r, std::move(dres)});
}

void Forward::finish(Op* y) {
  Frame fr = std::move(frames_.back());
  frames_.pop_back();
  fr.b.setLoc(y->loc());
  Vs vals;
  for (V v : y->operands()) vals.push_back(p(v));
  if (!fr.owner) {  // the function's return
    for (unsigned j = 0; j < y->numOperands(); ++j)
      if (isDiff(f_.resultTypes()[j])) vals.push_back(tanOr0(fr.b, y->operand(j)));
    V out = fr.b.op("struct.make", vals, g_.resultTypes()[0]);
    fr.b.ret({out});
    return;
  }
  for (unsigned j : fr.dres) vals.push_back(tanOr0(fr.b, y->operand(j)));
  fr.b.yield(vals);
  Op* s = fr.owner;
  if (!s->is(OpId::For) && fr.region + 1 < s->numRegions()) {
    pushRegion(s, fr.neu, fr.region + 1, fr.dres);
    return;
  }
  for (unsigned j = 0; j < s->numResults(); ++j) prim_[s->result(j)] = fr.neu->result(j);
  for (unsigned idx = 0; idx < fr.dres.size(); ++idx)
    tan_[s->result(fr.dres[idx])] = fr.neu->result(s->numResults() + idx);
}

Status Session::drain() {
  while (!work_.empty()) {
    Job job = work_.front();
    work_.pop_front();
    ValueSet varied;
    analyze(*job.primal, job.wrt, varied);
    if (Status st = checkActive(m_, *job.primal, varied, job.mode); !st) return st;
    Status st = job.mode == Mode::Reverse ? Reverse(*this, job, varied).run() : Forward(*this, job, varied).run();
    if (!st) return st;
    pruneDead(*job.out);
  }
  return Status::ok();
}

Expected<Function*> derive(Module& m, Function& f, const std::vector<bool>& wrt, Mode mode) {
  Session s(m);
  auto g = s.request(f, wrt, mode);
  if (!g) return g.error();
  if (Status st = s.drain(); !st) {
    s.rollback();
    return st.error();
  }
  return *g;
}

bool runAutodiff(Module& m, Diagnostics& diag) {
  std::vector<Function*> todo;
  for (auto& fn : m.functions()) todo.push_back(fn.get());
  bool changed = false;
  for (Function* f : todo) {
    auto it = f->attrs.find("autodiff");
    if (it == f->attrs.end()) continue;
    const std::string& how = it->second.s;
    if (it->second.kind != Attr::Kind::String || (how != "reverse" && how != "forward" && how != "both")) {
      diag.error(f->loc(), "autodiff: @" + f->name() + ": attribute 'autodiff' must be \"reverse\", \"forward\" or \"both\"",
                 "P013");
      continue;
    }
    std::vector<bool> all;
    for (const Type* t : f->paramTypes()) all.push_back(isDiff(t));
    for (Mode mode : {Mode::Reverse, Mode::Forward}) {
      if (how != "both" && (how == "reverse") != (mode == Mode::Reverse)) continue;
      auto g = derive(m, *f, all, mode);
      if (!g) diag.errors.push_back(g.error());
      else changed = true;
    }
  }
  return changed;
}

}  // namespace

Expected<ir::Function*> reverseDerivative(ir::Module& m, ir::Function& f, const std::vector<bool>& wrt) {
  return derive(m, f, wrt, Mode::Reverse);
}

Expected<ir::Function*> forwardDerivative(ir::Module& m, ir::Function& f, const std::vector<bool>& wrt) {
  return derive(m, f, wrt, Mode::Forward);
}

Pass autodiffPass() {
  return Pass{"autodiff",
              "add @f.vjp / @f.jvp (reverse / forward derivatives) for device functions marked "
              "autodiff = \"reverse\" | \"forward\" | \"both\"",
              runAutodiff};
}

}  // namespace eph::passes
