// Lowering of checked Ephapax to the IR: builtins (GPU ids, vectors and matrices, transfers, lists, strings).
// (Lowerer methods; see Lowerer.h for the other parts.)
#include "frontends/ephapax/Lowerer.h"

namespace eph::ephapax::lowering {

Value* Lowerer::splat(Value* s, const ir::Type* vt) {
  if (s->type() != vt->elem()) s = b_.cast(s, vt->elem());
  return b_.splat(s, vt);
}

bool Lowerer::isMatrix(const ir::Type* t) {
  return t->isStruct() && !t->members().empty() && t->members()[0]->isVector();
}

Value* Lowerer::column(Value* m, unsigned j) {
  return b_.structExtract(m, j);
}

// m * v = sum over columns j of m.j * v[j].
Value* Lowerer::matVec(Value* m, Value* v) {
  const ir::Type* vt = m->type()->members()[0];
  Value* acc = nullptr;
  for (unsigned j = 0; j < m->type()->members().size(); ++j) {
    Value* vj = b_.op("vec.extract", {v}, ctx_.f32(), {{"index", ir::Attr::integer(j)}});
    Value* term = b_.op("mul", {column(m, j), splat(vj, vt)}, vt);
    acc = acc ? b_.op("add", {acc, term}, vt) : term;
  }
  return acc;
}

// Applies f to each column and rebuilds the matrix.
Value* Lowerer::columnwise(Value* m, const std::function<Value*(Value* col, unsigned j)>& f) {
  std::vector<Value*> cols;
  for (unsigned j = 0; j < m->type()->members().size(); ++j) cols.push_back(f(column(m, j), j));
  return b_.op("struct.make", cols, m->type());
}

// Arithmetic on vectors and matrices: elementwise, scalars splat.
Value* Lowerer::lowerVecBinary(Expr& e) {
  Value* a = lowerExpr(*e.kids[0]);
  Value* b = lowerExpr(*e.kids[1]);
  setLoc(e.span);
  static const char* names[] = {"add", "sub", "mul", "div"};
  if (e.bop > BinOp::Div) {
    unsupported(e.span, "code generation supports only + - * / on vectors and matrices");
    return fabricate(lowerTy(e.ty));
  }
  const char* name = names[static_cast<int>(e.bop)];
  const ir::Type* ta = a->type();
  const ir::Type* tb = b->type();
  if (ta->isVector() && tb->isVector() && ta == tb) return b_.op(name, {a, b}, ta);
  if (ta->isVector() && tb->isScalar()) return b_.op(name, {a, splat(b, ta)}, ta);
  if (ta->isScalar() && tb->isVector()) return b_.op(name, {splat(a, tb), b}, tb);
  if (isMatrix(ta) && isMatrix(tb) && ta == tb) {
    if (e.bop == BinOp::Add || e.bop == BinOp::Sub)
      return columnwise(a, [&](Value* col, unsigned j) { return b_.op(name, {col, column(b, j)}, col->type()); });
    if (e.bop == BinOp::Mul) return columnwise(b, [&](Value* col, unsigned) { return matVec(a, col); });
  }
  if (isMatrix(ta) && tb->isVector() && e.bop == BinOp::Mul && ta->members()[0] == tb) return matVec(a, b);
  if (isMatrix(ta) && tb->isScalar() && (e.bop == BinOp::Mul || e.bop == BinOp::Div))
    return columnwise(a, [&](Value* col, unsigned) { return b_.op(name, {col, splat(b, col->type())}, col->type()); });
  if (ta->isScalar() && isMatrix(tb) && e.bop == BinOp::Mul)
    return columnwise(b, [&](Value* col, unsigned) { return b_.op(name, {splat(a, col->type()), col}, col->type()); });
  unsupported(e.span, "code generation does not support " + ta->str() + " " + name + " " + tb->str());
  return fabricate(lowerTy(e.ty));
}

Value* Lowerer::idBuiltin(const char* op, int64_t dim, const ir::Type* rt) {
  Value* v = b_.builtin(op, static_cast<int>(dim));
  if (rt != ctx_.u32() && rt->isNumeric()) v = b_.cast(v, rt);
  return v;
}

Value* Lowerer::lowerBuiltin(Expr& e) {
  std::vector<Expr*> args;
  for (size_t i = 1; i < e.kids.size(); ++i) args.push_back(e.kids[i].get());
  const ir::Type* rt = lowerTy(e.ty);
  auto need = [&](size_t n) {
    if (args.size() >= n) return true;
    unsupported(e.span, "internal error: builtin with too few arguments");
    return false;
  };
  switch (e.builtin) {
    case Expr::GlobalIdOf:
    case Expr::LocalIdOf:
    case Expr::GroupIdOf:
    case Expr::NumGroupsOf:
    case Expr::GroupSizeOf: {
      if (!need(1)) return fabricate(rt);
      if (args[0]->kind != ExprKind::IntLit || args[0]->ival < 0 || args[0]->ival > 2) {
        unsupported(args[0]->span, "the dimension must be the literal 0, 1 or 2");
        return fabricate(rt);
      }
      static const char* ops[] = {"global_id", "local_id", "workgroup_id", "num_workgroups", "workgroup_size"};
      setLoc(e.span);
      return idBuiltin(ops[e.builtin - Expr::GlobalIdOf], args[0]->ival, rt);
    }
    case Expr::Barrier:
      setLoc(e.span);
      b_.barrier();
      return unit();
    case Expr::AtomicAdd:
    case Expr::AtomicMin:
    case Expr::AtomicMax:
    case Expr::AtomicXchg:
    case Expr::AtomicCas: {
      bool cas = e.builtin == Expr::AtomicCas;
      if (!need(cas ? 4 : 3)) return fabricate(rt);
      Value* buf = lowerBorrowOf(*args[0]);
      Value* i = lowerExpr(*args[1]);
      if (!buf->type()->isBuffer()) {
        unsupported(e.span, "an atomic needs a buffer");
        return fabricate(rt);
      }
      const ir::Type* et = buf->type()->elem();
      std::vector<Value*> ops = {buf, i, coerce(lowerExpr(*args[2]), et, args[2]->span)};
      if (cas) ops.push_back(coerce(lowerExpr(*args[3]), et, args[3]->span));
      setLoc(e.span);
      static const char* names[] = {"atomic.add", "atomic.min", "atomic.max", "atomic.xchg", "atomic.cmpxchg"};
      return b_.op(names[e.builtin - Expr::AtomicAdd], ops, et);
    }
    case Expr::Sqrt: case Expr::Exp: case Expr::Log: case Expr::Sin: case Expr::Cos: case Expr::Tan:
    case Expr::Tanh: case Expr::Floor: case Expr::Ceil: case Expr::Abs: {
      if (!need(1)) return fabricate(rt);
      static const char* names[] = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "abs"};
      Value* a = coerce(lowerExpr(*args[0]), rt, args[0]->span);
      setLoc(e.span);
      return b_.op(names[e.builtin - Expr::Sqrt], {a}, rt);
    }
    case Expr::FloatMath1: case Expr::FloatMath2: case Expr::Fma: {  // the IR op has the callee's name
      size_t n = e.builtin == Expr::FloatMath1 ? 1 : e.builtin == Expr::FloatMath2 ? 2 : 3;
      if (!need(n)) return fabricate(rt);
      std::vector<Value*> ops;
      for (size_t i = 0; i < n; ++i) ops.push_back(coerce(lowerExpr(*args[i]), rt, args[i]->span));
      setLoc(e.span);
      return b_.op(e.kids[0]->name, ops, rt);
    }
    case Expr::Pow:
    case Expr::Min:
    case Expr::Max: {
      if (!need(2)) return fabricate(rt);
      Value* a = lowerExpr(*args[0]);
      Value* b = lowerExpr(*args[1]);
      setLoc(e.span);
      if (rt->isVector() && a->type()->isScalar()) a = splat(a, rt);
      if (rt->isVector() && b->type()->isScalar()) b = splat(b, rt);
      a = coerce(a, rt, args[0]->span);
      b = coerce(b, rt, args[1]->span);
      static const char* names[] = {"pow", "min", "max"};
      return b_.op(names[e.builtin - Expr::Pow], {a, b}, rt);
    }
    case Expr::Dot:
    case Expr::Cross: {
      if (!need(2)) return fabricate(rt);
      Value* a = lowerExpr(*args[0]);
      Value* b = lowerExpr(*args[1]);
      setLoc(e.span);
      return b_.op(e.builtin == Expr::Dot ? "dot" : "cross", {a, b}, rt);
    }
    case Expr::Length:
    case Expr::Normalize: {
      if (!need(1)) return fabricate(rt);
      Value* a = lowerExpr(*args[0]);
      setLoc(e.span);
      return b_.op(e.builtin == Expr::Length ? "length" : "normalize", {a}, rt);
    }
    case Expr::MakeVec: {
      std::vector<Value*> parts;
      for (Expr* a : args) {
        Value* v = lowerExpr(*a);
        if (v->type()->isVector()) {
          for (unsigned j = 0; j < v->type()->count(); ++j)
            parts.push_back(b_.vecExtract(v, j));
        } else {
          parts.push_back(v->type() == ctx_.f32() ? v : b_.cast(v, ctx_.f32()));
        }
      }
      setLoc(e.span);
      if (!rt->isVector() || (parts.size() != 1 && parts.size() != rt->count())) {
        unsupported(e.span, "code generation cannot build " + rt->str() + " from " + std::to_string(parts.size()) + " values");
        return fabricate(rt);
      }
      if (parts.size() == 1) return splat(parts[0], rt);
      return b_.op("vec.make", parts, rt);
    }
    case Expr::MakeMat: {
      std::vector<Value*> vals;
      for (Expr* a : args) vals.push_back(lowerExpr(*a));
      setLoc(e.span);
      if (!isMatrix(rt)) return fabricate(rt);
      const ir::Type* ct = rt->members()[0];
      if (vals.size() == 1 && vals[0]->type()->isScalar()) {  // s on the diagonal
        Value* s = vals[0]->type() == ctx_.f32() ? vals[0] : b_.cast(vals[0], ctx_.f32());
        Value* zero = b_.constFloat(ctx_.f32(), 0);
        std::vector<Value*> cols;
        for (unsigned j = 0; j < rt->members().size(); ++j) {
          std::vector<Value*> lanes(ct->count(), zero);
          lanes[j] = s;
          cols.push_back(b_.op("vec.make", lanes, ct));
        }
        return b_.op("struct.make", cols, rt);
      }
      if (vals.size() != rt->members().size()) {
        unsupported(e.span, "a matN takes N columns or one scalar");
        return fabricate(rt);
      }
      for (size_t j = 0; j < vals.size(); ++j) vals[j] = coerce(vals[j], ct, args[j]->span);
      return b_.op("struct.make", vals, rt);
    }
    case Expr::Cast: {
      if (!need(1)) return fabricate(rt);
      Value* a = lowerExpr(*args[0]);
      setLoc(e.span);
      if (a->type() == rt) return a;
      return b_.cast(a, rt);
    }
    case Expr::Len: {
      if (!need(1)) return fabricate(rt);
      Value* temp = nullptr;
      Value* b = lowerBorrowOrTemp(*args[0], temp);
      setLoc(e.span);
      if (!b->type()->isBuffer()) {
        unsupported(e.span, "len needs a buffer or a list");
        return fabricate(rt);
      }
      Value* n = device_ ? b_.bufferLen(b, ctx_.i32()) : hostLen(b);
      if (rt->isInt() && rt != n->type()) n = b_.cast(n, rt);
      if (temp) dropValue(temp);
      return n;
    }
    case Expr::H2D: {
      if (!need(1)) return fabricate(rt);
      Value* temp = nullptr;
      Value* src = lowerBorrowOrTemp(*args[0], temp);
      setLoc(e.span);
      if (!src->type()->isBuffer() || src->type()->space() != ir::Space::Host || !rt->isBuffer()) {
        unsupported(e.span, "h2d copies a list to the device");
        return fabricate(rt);
      }
      const ir::Type* dt = ctx_.bufferType(src->type()->elem(), ir::Space::Device, rt->ownership());
      Value* n = b_.bufferLen(src, ctx_.i32());
      Value* d = b_.alloc(n, dt);
      b_.h2d(d, src);
      if (temp) dropValue(temp);
      return coerce(d, rt, e.span);
    }
    case Expr::D2H: {
      if (!need(1)) return fabricate(rt);
      bool borrowed = args[0]->kind == ExprKind::Borrow;
      Value* src = borrowed ? lowerBorrowOf(*args[0]->kids[0]) : lowerExpr(*args[0]);
      setLoc(e.span);
      if (!src->type()->isBuffer() || src->type()->space() != ir::Space::Device) {
        unsupported(e.span, "d2h copies a GPU buffer to the host");
        dropValue(src);
        return fabricate(rt);
      }
      Value* n = hostLen(src);
      Value* h = b_.alloc(n, ctx_.bufferType(src->type()->elem(), ir::Space::Host, ir::Ownership::Affine));
      b_.d2h(h, src);
      if (!borrowed) dropValue(src);
      return freshList(h);
    }
    case Expr::Array: {  // array(n, f): a fresh list [f(0), .., f(n-1)]
      if (!need(2)) return fabricate(rt);
      if (device_) {
        unsupported(e.span, "`array` is host code; it cannot appear in kernel code", "E212");
        return fabricate(rt);
      }
      Value* n = coerce(lowerExpr(*args[0]), ctx_.i32(), args[0]->span);
      Value* f = lowerExpr(*args[1]);
      setLoc(e.span);
      const ir::Type* elem = listTy(e.ty) ? listBufferTy(e.ty, ir::Ownership::Affine)->elem() : ctx_.i32();
      if (owns(elem) || owns(f->type())) {
        unsupported(e.span, "code generation does not support `array` of values that own memory");
        dropValue(f);
        return fabricate(rt);
      }
      Value* buf = b_.alloc(n, ctx_.bufferType(elem, ir::Space::Host, ir::Ownership::Affine));
      Value* zero = b_.constInt(ctx_.i32(), 0);
      Value* one = b_.constInt(ctx_.i32(), 1);
      b_.forOp(zero, n, one, [&](ir::Builder& b, Value* i, const ir::Values&) {
        i->setName("i");
        Value* v = f->type()->isFunction() ? b.callIndirect(f, {i})[0] : apply(f, args[1]->ty, i);
        b.store(buf, i, coerce(v, elem, e.span));
      });
      return freshList(buf);
    }
    case Expr::FreeGpu: {
      if (!need(1)) return fabricate(rt);
      Value* b = lowerExpr(*args[0]);
      setLoc(e.span);
      dropValue(b);
      return unit();
    }
    case Expr::ReadGpu:
    case Expr::WriteGpu: return lowerElementAccess(e, args, rt);
    case Expr::DeviceCount:
      setLoc(e.span);
      return b_.op("device.count", {}, ctx_.i32());
    case Expr::ToDevice: {  // alloc (len b) {device = k}; copy; free b
      if (!need(2)) return fabricate(rt);
      Value* src = lowerExpr(*args[1]);
      setLoc(e.span);
      if (!src->type()->isBuffer() || src->type()->space() != ir::Space::Device) {
        unsupported(e.span, "to_device moves a GPU buffer to another device");
        dropValue(src);
        return fabricate(rt);
      }
      Value* n = hostLen(src);
      Value* d = b_.op("alloc", {n}, src->type(), {{"device", ir::Attr::integer(args[0]->ival)}});
      b_.copy(d, src);
      dropValue(src);
      return coerce(d, rt, e.span);
    }
    default: break;
  }
  unsupported(e.span, "code generation does not support this builtin");
  return fabricate(rt);
}

// read_gpu(b, i) -> (b, b[i]) and write_gpu(b, i, v) -> b, through a
// one-invocation kernel and a one-element transfer.
Value* Lowerer::lowerElementAccess(Expr& e, const std::vector<Expr*>& args, const ir::Type* rt) {
  bool read = e.builtin == Expr::ReadGpu;
  if (args.size() < (read ? 2u : 3u)) return fabricate(rt);
  Value* buf = lowerExpr(*args[0]);
  Value* i = coerce(lowerExpr(*args[1]), ctx_.i32(), args[1]->span);
  Value* v = read ? nullptr : lowerExpr(*args[2]);
  setLoc(e.span);
  if (!buf->type()->isBuffer() || buf->type()->space() != ir::Space::Device) {
    unsupported(e.span, "read_gpu / write_gpu need a GPU buffer");
    dropValue(buf);
    return fabricate(rt);
  }
  const ir::Type* et = buf->type()->elem();
  ir::Function* k = elementCopyKernel(m_, et, read, curLoc_);
  Value* one = b_.constInt(ctx_.u32(), 1);
  Value* oneI = b_.constInt(ctx_.i32(), 1);
  Value* zero = b_.constInt(ctx_.i32(), 0);
  const ir::Type* devT = ctx_.bufferType(et, ir::Space::Device, ir::Ownership::Linear);
  const ir::Type* hostT = ctx_.bufferType(et, ir::Space::Host, ir::Ownership::Linear);
  Value* tmp = b_.alloc(oneI, devT);
  Value* host = b_.alloc(oneI, hostT);
  if (read) {
    b_.dispatch(*k, {one, one, one}, {buf, i, tmp});
    b_.d2h(host, tmp);
    Value* x = b_.op("load", {host, zero}, et);
    b_.free(tmp);
    b_.free(host);
    return coerce(b_.op("struct.make", {buf, x}, ctx_.structType({buf->type(), et})), rt, e.span);
  }
  b_.store(host, zero, coerce(v, et, args[2]->span));
  b_.h2d(tmp, host);
  b_.free(host);
  b_.dispatch(*k, {one, one, one}, {tmp, i, buf});
  b_.free(tmp);
  return coerce(buf, rt, e.span);
}

}  // namespace eph::ephapax::lowering
