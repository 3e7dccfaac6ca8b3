// Builds IR from C++: an insertion point (a region, and optionally an op to
// insert before), a location for new ops, and a typed helper per op family.
// The IR built is the same as parsing the equivalent text (docs/ir.md,
// "Building IR from C++", has a complete program).
//
//   Builder b(ctx, fn->body());
//   Value* two = b.constInt(ctx.i32(), 2);
//   Value* sum = b.add(fn->param(0), two);          // i32 + i32 : i32
//   Value* big = b.gt(sum, two);                    // : bool
//   Op* r = b.ifOp(big, {ctx.i32()},
//                  [&](Builder& b) { return b.mul(sum, two); },
//                  [&](Builder&) { return sum; });
//   b.ret({r->result(0)});
//
// Result types are inferred where the op's typing rule fixes them (arithmetic
// keeps its operands' type, a comparison gives bool, a load the element type);
// otherwise they are given. The helpers check nothing: ir::verify does.
#pragma once

#include <array>
#include <concepts>
#include <functional>
#include <type_traits>

#include "ir/OpTable.h"

namespace eph::ir {

class Builder;
using Values = std::vector<Value*>;

// The body of a region built by a structured helper (ifOp, forOp, whileOp,
// matchOp): called with the builder, positioned at the end of the region, and
// the region's arguments; what it returns becomes the region's terminator's
// operands. It may return a std::vector<Value*>, one Value*, or nothing.
template <class... Args>
class BodyFn {
 public:
  BodyFn() = default;
  template <class F>
    requires(std::invocable<F&, Builder&, Args...> && !std::same_as<std::remove_cvref_t<F>, BodyFn>)
  BodyFn(F f)  // NOLINT: implicit, so that lambdas pass directly
      : fn_([f = std::move(f)](Builder& b, Args... args) mutable -> Values {
          using R = std::invoke_result_t<F&, Builder&, Args...>;
          if constexpr (std::is_void_v<R>) {
            f(b, args...);
            return {};
          } else if constexpr (std::is_convertible_v<R, Value*>) {
            return {f(b, args...)};
          } else {
            return Values(f(b, args...));
          }
        }) {}
  explicit operator bool() const { return static_cast<bool>(fn_); }
  Values operator()(Builder& b, Args... args) const { return fn_ ? fn_(b, args...) : Values{}; }

 private:
  std::function<Values(Builder&, Args...)> fn_;
};

class Builder {
 public:
  Builder(Context& ctx, Region& region, Op* before = nullptr)
      : ctx_(&ctx), region_(&region), before_(before) {}

  Context& context() const { return *ctx_; }
  Region& region() const { return *region_; }
  Op* insertionOp() const { return before_; }  // null: the end of region()
  const Loc& loc() const { return loc_; }

  // Subsequent ops go at the end of `region` (or before `before`).
  void setInsertionPoint(Region& region, Op* before = nullptr) {
    region_ = &region;
    before_ = before;
  }
  void setInsertionPointBefore(Op& op) { setInsertionPoint(*op.parentRegion(), &op); }
  void setInsertionPointAfter(Op& op) { setInsertionPoint(*op.parentRegion(), op.nextOp()); }
  // Location given to subsequent ops.
  void setLoc(Loc loc) { loc_ = loc; }

  // Saves the insertion point and location; restores them when it goes out
  // of scope:  { Builder::InsertionGuard g(b); b.setInsertionPoint(r); ... }
  class InsertionGuard {
   public:
    explicit InsertionGuard(Builder& b) : b_(b), region_(b.region_), before_(b.before_), loc_(b.loc_) {}
    ~InsertionGuard() {
      b_.region_ = region_;
      b_.before_ = before_;
      b_.loc_ = loc_;
    }
    InsertionGuard(const InsertionGuard&) = delete;
    InsertionGuard& operator=(const InsertionGuard&) = delete;

   private:
    Builder& b_;
    Region* region_;
    Op* before_;
    Loc loc_;
  };

  // ---- any op, by name ------------------------------------------------------
  // Creates an op; regions are added empty (fill them with a Builder).
  Op* create(std::string_view name, Values operands = {}, std::vector<const Type*> resultTypes = {},
             std::map<std::string, Attr> attrs = {}, unsigned numRegions = 0) {
    return region_->insertBefore(before_, Op::create(OpTable::get()[name], std::move(operands),
                                                     std::move(resultTypes), std::move(attrs),
                                                     numRegions, loc_));
  }
  // Like create, for ops with exactly one result: returns that result.
  Value* op(std::string_view name, Values operands, const Type* resultType,
            std::map<std::string, Attr> attrs = {}) {
    return create(name, std::move(operands), {resultType}, std::move(attrs))->result(0);
  }

  // ---- constants --------------------------------------------------------------
  Value* constInt(const Type* t, int64_t v) { return op("const", {}, t, {{"value", Attr::integer(v)}}); }
  Value* constFloat(const Type* t, double v) { return op("const", {}, t, {{"value", Attr::floating(v)}}); }
  Value* constBool(bool v) { return op("const", {}, ctx_->boolType(), {{"value", Attr::boolean(v)}}); }
  // The unit value: struct.make with no fields, of type struct<>.
  Value* unit() { return op("struct.make", {}, ctx_->unitType()); }

  // ---- arithmetic, bitwise and math: the result has the first operand's type --
  Value* unary(std::string_view name, Value* a) { return op(name, {a}, a->type()); }
  Value* binary(std::string_view name, Value* a, Value* b) { return op(name, {a, b}, a->type()); }
  Value* add(Value* a, Value* b) { return binary("add", a, b); }
  Value* sub(Value* a, Value* b) { return binary("sub", a, b); }
  Value* mul(Value* a, Value* b) { return binary("mul", a, b); }
  Value* div(Value* a, Value* b) { return binary("div", a, b); }
  Value* rem(Value* a, Value* b) { return binary("rem", a, b); }
  Value* min(Value* a, Value* b) { return binary("min", a, b); }
  Value* max(Value* a, Value* b) { return binary("max", a, b); }
  Value* and_(Value* a, Value* b) { return binary("and", a, b); }
  Value* or_(Value* a, Value* b) { return binary("or", a, b); }
  Value* xor_(Value* a, Value* b) { return binary("xor", a, b); }
  Value* shl(Value* a, Value* b) { return binary("shl", a, b); }
  Value* shr(Value* a, Value* b) { return binary("shr", a, b); }
  Value* pow(Value* a, Value* b) { return binary("pow", a, b); }
  Value* atan2(Value* y, Value* x) { return binary("atan2", y, x); }
  Value* copysign(Value* a, Value* b) { return binary("copysign", a, b); }
  Value* neg(Value* a) { return unary("neg", a); }
  Value* abs(Value* a) { return unary("abs", a); }
  Value* not_(Value* a) { return unary("not", a); }
  Value* sqrt(Value* a) { return unary("sqrt", a); }
  Value* rsqrt(Value* a) { return unary("rsqrt", a); }
  Value* exp(Value* a) { return unary("exp", a); }
  Value* exp2(Value* a) { return unary("exp2", a); }
  Value* expm1(Value* a) { return unary("expm1", a); }
  Value* log(Value* a) { return unary("log", a); }
  Value* log2(Value* a) { return unary("log2", a); }
  Value* log1p(Value* a) { return unary("log1p", a); }
  Value* sin(Value* a) { return unary("sin", a); }
  Value* cos(Value* a) { return unary("cos", a); }
  Value* tan(Value* a) { return unary("tan", a); }
  Value* asin(Value* a) { return unary("asin", a); }
  Value* acos(Value* a) { return unary("acos", a); }
  Value* atan(Value* a) { return unary("atan", a); }
  Value* sinh(Value* a) { return unary("sinh", a); }
  Value* cosh(Value* a) { return unary("cosh", a); }
  Value* tanh(Value* a) { return unary("tanh", a); }
  Value* asinh(Value* a) { return unary("asinh", a); }
  Value* acosh(Value* a) { return unary("acosh", a); }
  Value* atanh(Value* a) { return unary("atanh", a); }
  Value* erf(Value* a) { return unary("erf", a); }
  Value* floor(Value* a) { return unary("floor", a); }
  Value* ceil(Value* a) { return unary("ceil", a); }
  Value* round(Value* a) { return unary("round", a); }
  Value* trunc(Value* a) { return unary("trunc", a); }
  Value* sign(Value* a) { return unary("sign", a); }
  Value* fma(Value* a, Value* b, Value* c) { return op("fma", {a, b, c}, a->type()); }

  // ---- comparisons (bool, or a bool vector for vector operands), select, casts --
  Value* compare(std::string_view name, Value* a, Value* b);
  Value* eq(Value* a, Value* b) { return compare("eq", a, b); }
  Value* ne(Value* a, Value* b) { return compare("ne", a, b); }
  Value* lt(Value* a, Value* b) { return compare("lt", a, b); }
  Value* le(Value* a, Value* b) { return compare("le", a, b); }
  Value* gt(Value* a, Value* b) { return compare("gt", a, b); }
  Value* ge(Value* a, Value* b) { return compare("ge", a, b); }
  Value* select(Value* c, Value* a, Value* b) { return op("select", {c, a, b}, a->type()); }
  Value* cast(Value* v, const Type* to) { return op("cast", {v}, to); }
  Value* bitcast(Value* v, const Type* to) { return op("bitcast", {v}, to); }

  // ---- aggregates ---------------------------------------------------------------
  // vec<T, n> of n elements of type T.
  Value* vecMake(Values elems);
  // vecType with every element `s`.
  Value* splat(Value* s, const Type* vecType) { return op("vec.make", Values(vecType->count(), s), vecType); }
  Value* vecExtract(Value* v, unsigned i) { return op("vec.extract", {v}, v->type()->elem(), index(i)); }
  Value* vecInsert(Value* v, unsigned i, Value* x) { return op("vec.insert", {v, x}, v->type(), index(i)); }
  Value* dot(Value* a, Value* b) { return op("dot", {a, b}, a->type()->elem()); }
  Value* cross(Value* a, Value* b) { return binary("cross", a, b); }
  Value* length(Value* v) { return op("length", {v}, v->type()->elem()); }
  Value* normalize(Value* v) { return unary("normalize", v); }
  // struct<types of fields...>.
  Value* structMake(Values fields);
  Value* structExtract(Value* s, unsigned i) { return op("struct.extract", {s}, s->type()->members()[i], index(i)); }
  Value* structInsert(Value* s, unsigned i, Value* v) { return op("struct.insert", {s, v}, s->type(), index(i)); }
  Values structUnpack(Value* s);
  Value* sumMake(const Type* sumType, int64_t tag, Value* payload) {
    return op("sum.make", {payload}, sumType, {{"tag", Attr::integer(tag)}});
  }
  Value* sumTag(Value* s, const Type* t = nullptr) { return op("sum.tag", {s}, t ? t : ctx_->u32()); }
  // array<T, n> of n (at least one) elements of type T; or of the given array type.
  Value* arrayMake(Values elems);
  Value* arrayMake(const Type* arrayType, Values elems) { return op("array.make", std::move(elems), arrayType); }
  Value* arrayGet(Value* a, Value* i) { return op("array.get", {a, i}, a->type()->elem()); }
  Value* arraySet(Value* a, Value* i, Value* v) { return op("array.set", {a, i, v}, a->type()); }

  // ---- memory, atomics, workgroup memory, barrier -------------------------------
  Value* load(Value* buf, Value* i) { return op("load", {buf, i}, buf->type()->elem()); }
  Op* store(Value* buf, Value* i, Value* v) { return create("store", {buf, i, v}); }
  // The element count, as `t` (default u32).
  Value* bufferLen(Value* buf, const Type* t = nullptr) { return op("buffer.len", {buf}, t ? t : ctx_->u32()); }
  // Atomics return the old value. `kind` is add, min, max or xchg.
  Value* atomic(std::string_view kind, Value* buf, Value* i, Value* v);
  Value* atomicAdd(Value* buf, Value* i, Value* v) { return atomic("add", buf, i, v); }
  Value* atomicMin(Value* buf, Value* i, Value* v) { return atomic("min", buf, i, v); }
  Value* atomicMax(Value* buf, Value* i, Value* v) { return atomic("max", buf, i, v); }
  Value* atomicXchg(Value* buf, Value* i, Value* v) { return atomic("xchg", buf, i, v); }
  Value* atomicCmpXchg(Value* buf, Value* i, Value* expected, Value* desired) {
    return op("atomic.cmpxchg", {buf, i, expected, desired}, buf->type()->elem());
  }
  // buffer<elem, workgroup, write> of `size` elements (top level of a kernel).
  Value* workgroupAlloc(const Type* elem, int64_t size);
  Op* barrier() { return create("barrier"); }
  // vec<T, n> of elements n·i .. n·i+n-1 of a buffer of T (n is 2 or 4).
  Value* vecLoad(Value* buf, Value* i, unsigned n) {
    return op("vec.load", {buf, i}, ctx_->vectorType(buf->type()->elem(), n));
  }
  // Writes vec<T, n> v to elements n·i .. n·i+n-1.
  Op* vecStore(Value* buf, Value* i, Value* v) { return create("vec.store", {buf, i, v}); }

  // ---- subgroup collectives (kernels): the result has x's type -------------------
  // `kind` is reduce_add/min/max, scan_add/min/max or exscan_add/min/max.
  Value* subgroup(std::string_view kind, Value* x) { return op("subgroup." + std::string(kind), {x}, x->type()); }
  Value* subgroupReduceAdd(Value* x) { return subgroup("reduce_add", x); }
  Value* subgroupReduceMin(Value* x) { return subgroup("reduce_min", x); }
  Value* subgroupReduceMax(Value* x) { return subgroup("reduce_max", x); }
  Value* subgroupScanAdd(Value* x) { return subgroup("scan_add", x); }
  Value* subgroupScanMin(Value* x) { return subgroup("scan_min", x); }
  Value* subgroupScanMax(Value* x) { return subgroup("scan_max", x); }
  Value* subgroupExscanAdd(Value* x) { return subgroup("exscan_add", x); }
  Value* subgroupExscanMin(Value* x) { return subgroup("exscan_min", x); }
  Value* subgroupExscanMax(Value* x) { return subgroup("exscan_max", x); }
  // x of lane `lane` (a 32-bit integer): the same lane for the whole subgroup
  // (broadcast) or any lane per invocation (shuffle).
  Value* subgroupBroadcast(Value* x, Value* lane) { return op("subgroup.broadcast", {x, lane}, x->type()); }
  Value* subgroupShuffle(Value* x, Value* lane) { return op("subgroup.shuffle", {x, lane}, x->type()); }

  // ---- cooperative matrices (kernels): matrixType is a coopmat<T, R, C> -----------
  Value* coopFill(Value* x, const Type* matrixType) { return op("coop.fill", {x}, matrixType); }
  // Element (r, c) from buf[offset + r·stride + c] (colMajor: offset + c·stride + r).
  Value* coopLoad(Value* buf, Value* offset, Value* stride, const Type* matrixType, bool colMajor = false) {
    return op("coop.load", {buf, offset, stride}, matrixType, colMajorAttr(colMajor));
  }
  Op* coopStore(Value* buf, Value* offset, Value* stride, Value* m, bool colMajor = false) {
    return create("coop.store", {buf, offset, stride, m}, {}, colMajorAttr(colMajor));
  }
  // a·b + c, of c's type.
  Value* coopMulAdd(Value* a, Value* b, Value* c) { return op("coop.muladd", {a, b, c}, c->type()); }
  // Each element of float matrix m converted: m's shape, scope and use in matrixType's elements.
  Value* coopConvert(Value* m, const Type* matrixType) { return op("coop.convert", {m}, matrixType); }

  // ---- invocation ids: `t` is u32 unless given (i32 also verifies) ---------------
  Value* builtin(std::string_view name, int dim, const Type* t = nullptr);
  Value* globalId(int dim, const Type* t = nullptr) { return builtin("global_id", dim, t); }
  Value* localId(int dim, const Type* t = nullptr) { return builtin("local_id", dim, t); }
  Value* workgroupId(int dim, const Type* t = nullptr) { return builtin("workgroup_id", dim, t); }
  Value* numWorkgroups(int dim, const Type* t = nullptr) { return builtin("num_workgroups", dim, t); }
  Value* workgroupSize(int dim, const Type* t = nullptr) { return builtin("workgroup_size", dim, t); }
  Value* subgroupSize(const Type* t = nullptr) { return builtin("subgroup_size", -1, t); }
  Value* subgroupId(const Type* t = nullptr) { return builtin("subgroup_id", -1, t); }
  Value* subgroupLocalId(const Type* t = nullptr) { return builtin("subgroup_local_id", -1, t); }

  // ---- host ops -------------------------------------------------------------------
  // A buffer of type bufferType with n elements; device >= 0 adds {device = k}.
  Value* alloc(Value* n, const Type* bufferType, int device = -1);
  // A borrow of elements [offset, offset + count) of a host or device buffer:
  // buffer<T, its space, ownership> (ownership Read or Write).
  Value* bufferView(Value* buf, Value* offset, Value* count, Ownership ownership = Ownership::Read) {
    const Type* t = buf->type();
    return op("buffer.view", {buf, offset, count}, ctx_->bufferType(t->elem(), t->space(), ownership));
  }
  Op* free(Value* buf) { return create("free", {buf}); }
  Op* h2d(Value* deviceDst, Value* hostSrc) { return create("h2d", {deviceDst, hostSrc}); }
  Op* d2h(Value* hostDst, Value* deviceSrc) { return create("d2h", {hostDst, deviceSrc}); }
  Op* copy(Value* deviceDst, Value* deviceSrc) { return create("copy", {deviceDst, deviceSrc}); }
  Op* dispatch(const Function& kernel, std::array<Value*, 3> groups, Values args) {
    return dispatch(kernel.name(), groups, std::move(args));
  }
  // Dispatches @kernel by name (a kernel made later, or not in this module yet).
  Op* dispatch(std::string_view kernel, std::array<Value*, 3> groups, Values args);
  Op* wait() { return create("wait"); }
  Value* deviceCount(const Type* t = nullptr) { return op("device.count", {}, t ? t : ctx_->i32()); }
  Value* boxNew(Value* v) { return op("box.new", {v}, ctx_->boxType()); }
  Value* boxGet(Value* box, const Type* t) { return op("box.get", {box}, t); }

  // ---- calls and function values --------------------------------------------------
  // Calls `callee` (not generic): the results have its result types.
  Values call(const Function& callee, Values args);
  // Calls @callee by name with the given result types (a generic or later function).
  Values call(std::string_view callee, Values args, std::vector<const Type*> resultTypes);
  Value* funcRef(const Function& f) { return funcRef(f.name(), f.type()); }
  // A reference to @callee by name, of function type fnType.
  Value* funcRef(std::string_view callee, const Type* fnType) {
    return op("func.ref", {}, fnType, {{"callee", Attr::symbol(std::string(callee))}});
  }
  Values callIndirect(Value* fn, Values args);
  // Calls the C function `symbol` of the process (host code; ir/ForeignAbi.h
  // says which signatures cross) with the given result types (none or one).
  Values callC(std::string_view symbol, Values args, std::vector<const Type*> resultTypes);

  // ---- terminators ------------------------------------------------------------------
  Op* ret(Values values = {}) { return create("return", std::move(values)); }
  Op* yield(Values values = {}) { return create("yield", std::move(values)); }
  Op* condition(Value* c, Values forwarded = {});

  // ---- structured control flow ------------------------------------------------------
  // Each creates the op at the insertion point, fills its regions by calling
  // the bodies with this builder positioned inside them, ends each region
  // with the terminator of what the body returned, and leaves the insertion
  // point and location as they were before.
  //
  // if %c : resultTypes { then } { otherwise }  (no `otherwise`: an empty else
  // region, for an `if` without results).
  Op* ifOp(Value* cond, std::vector<const Type*> resultTypes, const BodyFn<>& then,
           const BodyFn<>& otherwise = {});
  // for %lo, %hi, %step, %inits... { |%iv, %carried...| body; yield next... }:
  // the results have the inits' types.
  Op* forOp(Value* lo, Value* hi, Value* step, Values inits,
            const BodyFn<Value*, const Values&>& body);
  Op* forOp(Value* lo, Value* hi, Value* step, const BodyFn<Value*, const Values&>& body) {
    return forOp(lo, hi, step, {}, body);
  }
  // while %inits... { |%a...| before; condition c, fwd... } { |%v...| after; yield a'... }:
  // `before` returns the condition followed by the forwarded values (which
  // become the results); `after` gets those and returns the next carried
  // values. The forwarded values have the inits' types unless given.
  Op* whileOp(Values inits, const BodyFn<const Values&>& before, const BodyFn<const Values&>& after);
  Op* whileOp(Values inits, std::vector<const Type*> forwardedTypes, const BodyFn<const Values&>& before,
              const BodyFn<const Values&>& after);
  // match %sum : resultTypes { |%payload0| ... } ...: `body` runs once per
  // variant k with its payload.
  Op* matchOp(Value* sum, std::vector<const Type*> resultTypes, const BodyFn<unsigned, Value*>& body);

 private:
  static std::map<std::string, Attr> index(unsigned i) { return {{"index", Attr::integer(i)}}; }
  static std::map<std::string, Attr> colMajorAttr(bool colMajor) {
    if (!colMajor) return {};
    return {{"col_major", Attr::integer(1)}};
  }
  // Runs `body` in region r of op and ends the region with `terminator`.
  template <class... Args>
  void fill(Op* op, unsigned r, std::string_view terminator, const BodyFn<Args...>& body, Args... args);

  Context* ctx_;
  Region* region_;
  Op* before_;
  Loc loc_;
};

}  // namespace eph::ir
