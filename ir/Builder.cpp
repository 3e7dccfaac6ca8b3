#include "ir/Builder.h"

namespace eph::ir {
namespace {

std::vector<const Type*> typesOf(const Values& vs) {
  std::vector<const Type*> ts;
  for (Value* v : vs) ts.push_back(v->type());
  return ts;
}

}  // namespace

Value* Builder::compare(std::string_view name, Value* a, Value* b) {
  const Type* t = a->type();
  const Type* r = t->isVector() ? ctx_->vectorType(ctx_->boolType(), t->count()) : ctx_->boolType();
  return op(name, {a, b}, r);
}

Value* Builder::vecMake(Values elems) {
  const Type* t = ctx_->vectorType(elems.at(0)->type(), static_cast<unsigned>(elems.size()));
  return op("vec.make", std::move(elems), t);
}

Value* Builder::structMake(Values fields) {
  const Type* t = ctx_->structType(typesOf(fields));
  return op("struct.make", std::move(fields), t);
}

Values Builder::structUnpack(Value* s) {
  auto m = s->type()->members();
  return create("struct.unpack", {s}, {m.begin(), m.end()})->results();
}

Value* Builder::arrayMake(Values elems) {
  const Type* t = ctx_->arrayType(elems.at(0)->type(), static_cast<unsigned>(elems.size()));
  return op("array.make", std::move(elems), t);
}

Value* Builder::atomic(std::string_view kind, Value* buf, Value* i, Value* v) {
  return op("atomic." + std::string(kind), {buf, i, v}, buf->type()->elem());
}

Value* Builder::workgroupAlloc(const Type* elem, int64_t size) {
  return op("workgroup.alloc", {}, ctx_->bufferType(elem, Space::Workgroup, Ownership::Write),
            {{"size", Attr::integer(size)}});
}

Value* Builder::builtin(std::string_view name, int dim, const Type* t) {
  std::map<std::string, Attr> attrs;
  if (dim >= 0) attrs["dim"] = Attr::integer(dim);
  return op(name, {}, t ? t : ctx_->u32(), std::move(attrs));
}

Value* Builder::alloc(Value* n, const Type* bufferType, int device) {
  std::map<std::string, Attr> attrs;
  if (device >= 0) attrs["device"] = Attr::integer(device);
  return op("alloc", {n}, bufferType, std::move(attrs));
}

Op* Builder::dispatch(std::string_view kernel, std::array<Value*, 3> groups, Values args) {
  Values operands(groups.begin(), groups.end());
  operands.insert(operands.end(), args.begin(), args.end());
  return create("dispatch", std::move(operands), {}, {{"kernel", Attr::symbol(std::string(kernel))}});
}

Values Builder::call(const Function& callee, Values args) {
  auto rs = callee.resultTypes();
  return call(callee.name(), std::move(args), {rs.begin(), rs.end()});
}

Values Builder::call(std::string_view callee, Values args, std::vector<const Type*> resultTypes) {
  return create("call", std::move(args), std::move(resultTypes),
                {{"callee", Attr::symbol(std::string(callee))}})
      ->results();
}

Values Builder::callIndirect(Value* fn, Values args) {
  auto rs = fn->type()->results();
  args.insert(args.begin(), fn);
  return create("call.indirect", std::move(args), {rs.begin(), rs.end()})->results();
}

Values Builder::callC(std::string_view symbol, Values args, std::vector<const Type*> resultTypes) {
  return create("call.c", std::move(args), std::move(resultTypes), {{"symbol", Attr::string(std::string(symbol))}})
      ->results();
}

Op* Builder::condition(Value* c, Values forwarded) {
  forwarded.insert(forwarded.begin(), c);
  return create("condition", std::move(forwarded));
}

// Each region starts at the op's location. The terminator goes at the end of
// the region, wherever the body left the insertion point, at the location the
// body left. The callers' guards restore the insertion point and location.
template <class... Args>
void Builder::fill(Op* op, unsigned r, std::string_view terminator, const BodyFn<Args...>& body,
                   Args... args) {
  setInsertionPoint(op->region(r));
  loc_ = op->loc();
  Values results = body(*this, args...);
  setInsertionPoint(op->region(r));
  create(terminator, std::move(results));
}

Op* Builder::ifOp(Value* cond, std::vector<const Type*> resultTypes, const BodyFn<>& then,
                  const BodyFn<>& otherwise) {
  Op* op = create("if", {cond}, std::move(resultTypes), {}, 2);
  InsertionGuard g(*this);
  fill(op, 0, "yield", then);
  fill(op, 1, "yield", otherwise);
  return op;
}

Op* Builder::forOp(Value* lo, Value* hi, Value* step, Values inits,
                   const BodyFn<Value*, const Values&>& body) {
  std::vector<const Type*> types = typesOf(inits);
  Values operands = {lo, hi, step};
  operands.insert(operands.end(), inits.begin(), inits.end());
  Op* op = create("for", std::move(operands), types, {}, 1);
  Region& r = op->region(0);
  Value* iv = r.addArg(lo->type());
  Values carried;
  for (const Type* t : types) carried.push_back(r.addArg(t));
  InsertionGuard g(*this);
  fill<Value*, const Values&>(op, 0, "yield", body, iv, carried);
  return op;
}

Op* Builder::whileOp(Values inits, const BodyFn<const Values&>& before, const BodyFn<const Values&>& after) {
  std::vector<const Type*> types = typesOf(inits);
  return whileOp(std::move(inits), types, before, after);
}

Op* Builder::whileOp(Values inits, std::vector<const Type*> forwardedTypes, const BodyFn<const Values&>& before,
                     const BodyFn<const Values&>& after) {
  std::vector<const Type*> initTypes = typesOf(inits);
  Op* op = create("while", std::move(inits), forwardedTypes, {}, 2);
  Values a, v;
  for (const Type* t : initTypes) a.push_back(op->region(0).addArg(t));
  for (const Type* t : forwardedTypes) v.push_back(op->region(1).addArg(t));
  InsertionGuard g(*this);
  fill<const Values&>(op, 0, "condition", before, a);
  fill<const Values&>(op, 1, "yield", after, v);
  return op;
}

Op* Builder::matchOp(Value* sum, std::vector<const Type*> resultTypes, const BodyFn<unsigned, Value*>& body) {
  auto variants = sum->type()->members();
  Op* op = create("match", {sum}, std::move(resultTypes), {}, static_cast<unsigned>(variants.size()));
  InsertionGuard g(*this);
  for (unsigned k = 0; k < variants.size(); ++k) {
    Value* payload = op->region(k).addArg(variants[k]);
    fill<unsigned, Value*>(op, k, "yield", body, k, payload);
  }
  return op;
}

}  // namespace eph::ir
