#include "frontends/tensor/Lower.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <functional>
#include <optional>

#include "ir/Verifier.h"
#include "passes/OpFacts.h"

namespace eph::tensor {

namespace {

// The cache key of an operand: dtype, shape, strides, offset.
std::string layoutKey(DType dt, const Shape& shape, const std::vector<int64_t>& strides, int64_t offset) {
  std::string k(dtypeName(dt));
  k += shapeText(shape);
  for (int64_t s : strides) k += "," + std::to_string(s);
  return k + "+" + std::to_string(offset);
}

// ... and of a fused operand: what it computes from which layouts.
std::string operandKey(const Operand& o) {
  if (!o.fused) return layoutKey(o.dtype, o.shape, o.strides, o.offset);
  std::string k = "(" + o.fused->node->op + "{" + o.fused->node->attrs.key() + "}" + std::string(dtypeName(o.dtype)) +
                  shapeText(o.shape);
  if (o.fused->accumulator) return k + " accumulator)";
  for (const Operand& in : o.fused->in) k += " " + operandKey(in);
  return k + ")";
}

size_t leafCount(const Operand& o) {
  if (!o.fused) return 1;
  if (o.fused->accumulator) return 0;
  size_t n = 0;
  for (const Operand& in : o.fused->in) n += leafCount(in);
  return n;
}

const ir::Type* deviceBuffer(ir::Context& ctx, DType dt, ir::Ownership own) {
  return ctx.bufferType(irType(ctx, dt), ir::Space::Device, own);
}

// max(n · perRow, 1): the elements of a buffer of n rows (a buffer has at least one).
ir::Value* rowsCount(ir::Builder& host, ir::Value* n, int64_t perRow) {
  ir::Context& ctx = host.context();
  return host.max(host.mul(n, host.constInt(ctx.u32(), perRow)), host.constInt(ctx.u32(), 1));
}

std::string kernelName(const std::string& prefix, const std::string& op, size_t n) {
  std::string s = prefix + std::to_string(n) + "_";
  for (char c : op) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

}  // namespace

std::vector<Operand> leafOperands(std::span<const Operand> in) {
  std::vector<Operand> out;
  for (const Operand& o : in) {
    if (!o.fused) {
      out.push_back(o);
      continue;
    }
    if (o.fused->accumulator) continue;
    for (Operand& leaf : leafOperands(o.fused->in)) out.push_back(std::move(leaf));
  }
  return out;
}

KernelInputs kernelInputs(std::span<const Operand> in) {
  KernelInputs ki;
  for (const Operand& o : in) ki.key += "|" + operandKey(o);
  ki.leaves = leafOperands(in);
  for (size_t i = 0; i < ki.leaves.size(); ++i) {
    auto it = std::find_if(ki.distinct.begin(), ki.distinct.end(),
                           [&](size_t d) { return ki.leaves[d].buf == ki.leaves[i].buf; });
    ki.slot.push_back(size_t(it - ki.distinct.begin()));
    if (it == ki.distinct.end()) ki.distinct.push_back(i);
    ki.key += (i ? "," : "|slots ") + std::to_string(ki.slot[i]);
  }
  return ki;
}

size_t Kernel::start(size_t k) const {
  size_t s = 0;
  for (size_t i = 0; i < k; ++i) s += leafCount(ins_[i]);
  return s;
}

ir::Value* Kernel::constant(DType dt, double v) {
  const ir::Type* t = computeType(ctx, dt);
  if (t->isBool()) return b.constBool(v != 0);
  if (t->isFloat()) return b.constFloat(t, v);
  return b.constInt(t, int64_t(v));
}

ir::Value* Kernel::offsetOf(size_t k, const std::vector<ir::Value*>& idx) {
  const Operand& o = ins_[k];
  ir::Value* off = nullptr;
  for (size_t d = 0; d < o.shape.size(); ++d) {
    if (o.shape[d] == 1 || o.strides[d] == 0) continue;
    ir::Value* term = o.strides[d] == 1 ? idx[d] : b.mul(idx[d], i32(o.strides[d]));
    off = off ? b.add(off, term) : term;
  }
  if (!off) return i32(o.offset);
  return o.offset ? b.add(off, i32(o.offset)) : off;
}

ir::Value* Kernel::load(size_t k, const std::vector<ir::Value*>& idx) {
  const Operand& o = ins_[k];
  // Element `linear` of an input laid out as the output: read there.
  bool asOutput = linear && o.shape == shape && idx.size() == index.size();
  for (size_t d = 0; asOutput && d < idx.size(); ++d) asOutput = idx[d] == index[d] || o.shape[d] == 1;
  if (o.fused && o.fused->accumulator) {
    // The epilogue's own element (the planner fuses only readers of the
    // accumulator's shape that read it elementwise: idx is this element's).
    assert(accumulator && "an accumulator operand outside its epilogue");
    return o.dtype == DType::F16 ? b.cast(b.cast(accumulator, ctx.floatType(16)), ctx.f32()) : accumulator;
  }
  if (o.fused) {
    // Compute the fused node's element at idx from its own inputs, rounded
    // as storing it would round it.
    size_t s = start(k);
    Kernel sub(b, ctx, o.fused->in,
               std::vector<ir::Value*>(bufs_.begin() + ptrdiff_t(s), bufs_.begin() + ptrdiff_t(s + leafCount(o))));
    sub.index = idx;
    sub.accumulator = accumulator;
    if (asOutput) sub.linear = linear, sub.shape = shape;
    ir::Value* v = o.fused->def->element(sub, *o.fused->node, o.fused->in);
    if (o.dtype == DType::F16) v = b.cast(b.cast(v, ctx.floatType(16)), ctx.f32());
    return v;
  }
  const bool contiguous = asOutput && o.strides == contiguousStrides(o.shape);
  ir::Value* at = contiguous ? (o.offset ? b.add(linear, i32(o.offset)) : linear) : offsetOf(k, idx);
  ir::Value* v = b.load(bufs_[start(k)], at);
  if (o.dtype == DType::F16) v = b.cast(v, ctx.f32());
  return v;
}

ir::Value* Kernel::loadBroadcast(size_t k) {
  const Operand& o = ins_[k];
  std::vector<ir::Value*> idx(o.shape.size());
  size_t shift = index.size() - o.shape.size();
  for (size_t d = 0; d < o.shape.size(); ++d) idx[d] = o.shape[d] == 1 ? i32(0) : index[d + shift];
  return load(k, idx);
}

ir::Value* Kernel::loadLinear(size_t k, ir::Value* pos) {
  const Operand& o = ins_[k];
  std::vector<ir::Value*> idx(o.shape.size());
  std::vector<int64_t> cs = contiguousStrides(o.shape);
  // Unravelled in unsigned arithmetic (pos >= 0), as Lowering::map does: a
  // power-of-two extent is a shift and a mask, and no sign fix-ups keep the
  // cpu target from vectorising the copy.
  const ir::Type* u32 = ctx.u32();
  ir::Value* upos = b.bitcast(pos, u32);
  for (size_t d = 0; d < o.shape.size(); ++d) {
    ir::Value* q = cs[d] == 1 ? upos : b.div(upos, b.constInt(u32, cs[d]));
    idx[d] = b.bitcast(d == 0 ? q : b.rem(q, b.constInt(u32, o.shape[d])), ctx.i32());
  }
  return load(k, idx);
}

ir::Value* Kernel::convert(ir::Value* v, DType from, DType to) {
  const ir::Type* ft = computeType(ctx, from);
  const ir::Type* tt = computeType(ctx, to);
  if (ft == tt) return v;
  if (tt->isBool()) {
    ir::Value* zero = ft->isFloat() ? b.constFloat(ft, 0) : b.constInt(ft, 0);
    return b.ne(v, zero);
  }
  if (ft->isBool()) {
    ir::Value* one = tt->isFloat() ? b.constFloat(tt, 1) : b.constInt(tt, 1);
    ir::Value* zero = tt->isFloat() ? b.constFloat(tt, 0) : b.constInt(tt, 0);
    return b.select(v, one, zero);
  }
  return b.cast(v, tt);
}

ir::Value* Lowering::alloc(DType dt, int64_t count) {
  ir::Value* n = rows ? rowsCount(host, rows, count) : host.constInt(ctx.u32(), std::max<int64_t>(count, 1));
  ir::Value* buf = host.alloc(n, deviceBuffer(ctx, dt, ir::Ownership::Linear));
  if (rows) rowStride[buf] = count;
  return buf;
}

std::pair<ir::Value*, bool> Lowering::derivedConstant(const std::string& key,
                                                     const std::function<HostTensor()>& compute) {
  if (!compiled || !main || rows) return {nullptr, false};
  auto [it, fresh] = derived_.try_emplace(key, compiled->derived.size());
  if (fresh) {
    auto value = std::make_shared<const HostTensor>(compute());
    const ir::Space io = compiled->deviceIO ? ir::Space::Device : ir::Space::Host;
    const ir::Type* t = ctx.bufferType(irType(ctx, value->dtype), io, ir::Ownership::Read);
    std::vector<const ir::Type*> params(main->paramTypes().begin(), main->paramTypes().end());
    std::vector<const ir::Type*> results(main->resultTypes().begin(), main->resultTypes().end());
    params.push_back(t);
    main->setType(ctx.functionType(params, results));
    main->body().addArg(t, "d" + std::to_string(it->second));
    compiled->derived.push_back(std::move(value));
  }
  const size_t first = main->paramTypes().size() - compiled->derived.size();  // the first derived parameter
  ir::Value* param = main->param(unsigned(first + it->second));
  if (compiled->deviceIO) return {param, false};  // the caller's, read-only
  const HostTensor& h = *compiled->derived[it->second];
  ir::Value* buf = host.alloc(host.constInt(ctx.u32(), std::max<int64_t>(h.size(), 1)),
                              deviceBuffer(ctx, h.dtype, ir::Ownership::Linear));
  host.h2d(buf, param);
  return {buf, true};
}

void Lowering::dispatch(const ir::Function& kernel, std::array<ir::Value*, 3> groups, const ir::Values& args) {
  if (rows) {
    const ir::Attr* z = passes::constantAttr(groups[2]);
    std::vector<int64_t> strides;
    for (ir::Value* a : args) strides.push_back(rowStride.count(a) ? rowStride.at(a) : 0);
    auto [it, fresh] = batched_.emplace(&kernel, strides);
    if (!z || z->i != 1)
      rowsError = "its kernel " + kernel.name() + " has a grid along z already";
    else if (Status st = fresh ? batchKernel(ctx, const_cast<ir::Function&>(kernel), strides) : Status::ok(); !st)
      rowsError = st.error().message;
    else if (it->second != strides)
      rowsError = "its kernel " + kernel.name() + " runs on buffers of different rows";
    groups[2] = rows;
  }
  host.dispatch(kernel, groups, args);
}

ir::Value* Lowering::map(const Node& n, std::span<const Operand> in, const KernelBody& body, const std::string& key) {
  return map(n.op, n.dtype, n.shape, in, body, n.attrs.key() + "|" + key);
}

ir::Value* Lowering::map(const std::string& op, DType dtype, const Shape& shape, std::span<const Operand> in,
                         const KernelBody& body, const std::string& key) {
  // With the dynamic first dimension (N rows at run time: `extent`), the
  // grid is computed on the host and the kernel stops at its output's length.
  const bool dynamic = isDynamic(shape) && extent && !rows;
  const int64_t total = dynamic ? INT32_MAX : numel(shape);
  const int64_t wg = opts.workgroupSize;
  // Each invocation computes E elements, wg apart (LowerOptions::elementsPerInvocation).
  const int64_t E = std::max<int64_t>(1, std::min<int64_t>(opts.elementsPerInvocation, (total + wg - 1) / wg));
  const int64_t groups = (total + wg * E - 1) / (wg * E);
  const auto [gx, gy] = dynamic ? std::array<int64_t, 2>{opts.maxGroupsX, 2} : grid(groups);
  const KernelInputs ki = kernelInputs(in);
  std::string full = op + "|" + key + "|" + layoutKey(dtype, shape, contiguousStrides(shape), 0) + "|gx" +
                     std::to_string(gx) + "|e" + std::to_string(E) + (dynamic ? "|N" : "") + ki.key;

  const ir::Function*& kern = kernels_[full];
  if (!kern) {
    std::vector<const ir::Type*> params;
    for (size_t d : ki.distinct) params.push_back(deviceBuffer(ctx, ki.leaves[d].dtype, ir::Ownership::Read));
    params.push_back(deviceBuffer(ctx, dtype, ir::Ownership::Write));
    ir::Function* f = module.addFunction(kernelName(namePrefix, op, kernels_.size()), ir::FunctionKind::Kernel,
                                         ctx.functionType(params, {}));
    f->workgroupSize = {unsigned(wg), 1, 1};
    for (size_t i = 0; i < ki.distinct.size(); ++i) f->param(unsigned(i))->setName("in" + std::to_string(i));
    f->param(unsigned(ki.distinct.size()))->setName("out");
    ir::Builder b(ctx, f->body());
    std::vector<ir::Value*> bufs;
    for (size_t i = 0; i < ki.leaves.size(); ++i) bufs.push_back(f->param(unsigned(ki.slot[i])));
    ir::Value* out = f->param(unsigned(ki.distinct.size()));
    // Element e of an invocation is base + e·wg + lid: base the workgroup's
    // first element (the same in all its invocations), lid the local id.
    ir::Value* group = b.workgroupId(0, ctx.i32());
    if (gy > 1) group = b.add(b.mul(b.workgroupId(1, ctx.i32()), b.constInt(ctx.i32(), gx)), group);
    ir::Value* base = b.mul(group, b.constInt(ctx.i32(), wg * E));
    ir::Value* lid = b.localId(0, ctx.i32());
    ir::Value* end = dynamic ? b.bitcast(b.bufferLen(out), ctx.i32()) : b.constInt(ctx.i32(), total);
    const std::vector<int64_t> cs = contiguousStrides(shape);
    // Where the grid covers the elements exactly, every element is inside:
    // no branch (on the cpu target a load at an index the workgroup shares
    // is then one broadcast, not a masked gather per lane).
    const bool exact = !dynamic && total % (wg * E) == 0 && gx * gy == groups;
    for (int64_t e = 0; e < E; ++e) {
      ir::Value* first = e ? b.add(base, b.constInt(ctx.i32(), e * wg)) : base;
      ir::Value* lin = b.add(first, lid);
      auto element = [&](ir::Builder& ib) {
        Kernel k(ib, ctx, std::vector<Operand>(in.begin(), in.end()), bufs);
        k.linear = lin;
        k.shape = shape;
        // The index, unravelled in unsigned arithmetic (lin >= 0): a
        // power-of-two extent is then a shift and a mask, no sign fix-ups.
        // Where a dimension's inner size is a multiple of wg, its index is
        // the first element's (the same in the whole workgroup); where the
        // last extent is, the last index is the first element's plus lid
        // (contiguous across the workgroup: the cpu target then loads a
        // broadcast operand as vectors, not gathers).
        const ir::Type* u32 = ctx.u32();
        ir::Value* ulin = shape.size() > 1 ? ib.bitcast(lin, u32) : nullptr;
        ir::Value* ufirst = shape.size() > 1 ? ib.bitcast(first, u32) : nullptr;
        for (size_t d = 0; d < shape.size(); ++d) {
          if (shape.size() == 1) {
            k.index.push_back(lin);
            break;
          }
          const bool uniform = !dynamic && cs[d] % wg == 0;
          const bool lastPlusLid = !dynamic && d + 1 == shape.size() && shape[d] % wg == 0;
          ir::Value* from = uniform || lastPlusLid ? ufirst : ulin;
          ir::Value* q = cs[d] == 1 ? from : ib.div(from, ib.constInt(u32, cs[d]));
          ir::Value* i = ib.bitcast(d == 0 ? q : ib.rem(q, ib.constInt(u32, shape[d])), ctx.i32());
          k.index.push_back(lastPlusLid ? ib.add(i, lid) : i);
        }
        ir::Value* v = body(k);
        const ir::Type* storage = irType(ctx, dtype);
        if (v->type() != storage) v = ib.cast(v, storage);
        ib.store(out, lin, v);
      };
      if (exact) element(b);
      else b.ifOp(b.lt(lin, end), {}, element);
    }
    b.ret();
    kern = f;
  }
  ir::Values args;
  for (size_t d : ki.distinct) args.push_back(ki.leaves[d].buf);
  if (dynamic) {
    // N·row elements: (N·row + wg·E - 1) / (wg·E) workgroups, gx a row of the grid; none when N is 0.
    auto u = [&](int64_t v) { return host.constInt(ctx.u32(), v); };
    ir::Value* n = host.mul(extent, u(rowElements(shape)));
    ir::Value* out = host.alloc(rowsCount(host, extent, rowElements(shape)), deviceBuffer(ctx, dtype, ir::Ownership::Linear));
    args.push_back(out);
    ir::Value* groupsN = host.div(host.add(n, u(wg * E - 1)), u(wg * E));
    dispatch(*kern, {host.min(groupsN, u(gx)), host.div(host.add(groupsN, u(gx - 1)), u(gx)), u(1)}, args);
    return out;
  }
  ir::Value* out = alloc(dtype, total);
  if (total == 0) return out;
  args.push_back(out);
  dispatch(*kern, {host.constInt(ctx.u32(), gx), host.constInt(ctx.u32(), gy), host.constInt(ctx.u32(), 1)}, args);
  return out;
}

ir::Value* Lowering::custom(const std::string& op, DType dtype, int64_t count, std::span<const Operand> in,
                            std::array<unsigned, 3> workgroup, std::array<int64_t, 3> groups, const KernelBuild& build,
                            const std::string& key) {
  std::string full = "custom|" + op + "|" + key + "|" + std::string(dtypeName(dtype)) + "|wg" +
                     std::to_string(workgroup[0]) + "," + std::to_string(workgroup[1]) + "," + std::to_string(workgroup[2]);
  for (const Operand& o : in) full += "|" + layoutKey(o.dtype, o.shape, o.strides, o.offset);
  const ir::Function*& kern = kernels_[full];
  if (!kern) {
    std::vector<const ir::Type*> params;
    for (const Operand& o : in) params.push_back(deviceBuffer(ctx, o.dtype, ir::Ownership::Read));
    params.push_back(deviceBuffer(ctx, dtype, ir::Ownership::Write));
    ir::Function* f = module.addFunction(kernelName(namePrefix, op, kernels_.size()), ir::FunctionKind::Kernel,
                                         ctx.functionType(params, {}));
    f->workgroupSize = workgroup;
    std::vector<ir::Value*> bufs;
    for (size_t i = 0; i <= in.size(); ++i) {
      f->param(unsigned(i))->setName(i < in.size() ? "in" + std::to_string(i) : "out");
      bufs.push_back(f->param(unsigned(i)));
    }
    ir::Builder b(ctx, f->body());
    build(b, bufs);
    b.ret();
    kern = f;
  }
  ir::Value* out = alloc(dtype, count);
  if (count == 0 || groups[0] == 0 || groups[1] == 0 || groups[2] == 0) return out;
  ir::Values args;
  for (const Operand& o : in) args.push_back(o.buf);
  args.push_back(out);
  dispatch(*kern, {host.constInt(ctx.u32(), groups[0]), host.constInt(ctx.u32(), groups[1]),
                   host.constInt(ctx.u32(), groups[2])}, args);
  return out;
}

Status batchKernel(ir::Context& ctx, ir::Function& kernel, const std::vector<int64_t>& strides) {
  std::map<const ir::Value*, int64_t> stride;
  for (size_t k = 0; k < strides.size() && k < kernel.paramTypes().size(); ++k)
    if (strides[k]) stride[kernel.param(unsigned(k))] = strides[k];
  const std::string name = "kernel " + kernel.name();
  if (kernel.workgroupSize[2] != 1) return Error{{}, name + " has workgroups along z"};
  std::vector<ir::Op*> access, zIds;
  std::string why;
  kernel.walk([&](ir::Op* op) {
    const ir::OpId id = op->id();
    // Dimension z of a dispatch of one workgroup along it (Lowering::dispatch
    // checks): its ids are 0 and its count 1, which they become below.
    if ((id == ir::OpId::GlobalId || id == ir::OpId::WorkgroupId || id == ir::OpId::NumWorkgroups ||
         id == ir::OpId::LocalId) && op->attr("dim") && op->intAttr("dim") == 2)
      zIds.push_back(op);
    for (unsigned i = 0; i < op->numOperands(); ++i) {
      auto it = stride.find(op->operand(i));
      if (it == stride.end()) continue;
      const bool indexed = id == ir::OpId::Load || id == ir::OpId::Store || id == ir::OpId::VecLoad ||
                           id == ir::OpId::VecStore || id == ir::OpId::CoopLoad || id == ir::OpId::CoopStore ||
                           ir::isAtomic(id);
      if (!indexed || i != 0) {
        why = name + " uses a buffer in " + std::string(op->name()) + ", which does not take a row";
        continue;
      }
      const int64_t vec = id == ir::OpId::VecLoad ? op->result()->type()->count()
                          : id == ir::OpId::VecStore ? op->operand(2)->type()->count() : 1;
      if (it->second % vec) why = name + " reads vectors of " + std::to_string(vec) + " from rows of " + std::to_string(it->second) + " elements";
      access.push_back(op);
    }
  });
  if (!why.empty()) return Error{{}, why};
  ir::Builder entry(ctx, kernel.body(), kernel.body().front());
  for (ir::Op* op : zIds) {
    op->result()->replaceAllUsesWith(entry.constInt(op->result()->type(), op->is(ir::OpId::NumWorkgroups) ? 1 : 0));
    op->erase();
  }
  ir::Value* z = entry.workgroupId(2, ctx.i32());
  std::map<std::pair<const ir::Type*, int64_t>, ir::Value*> offsets;  // z · elements, by index type
  for (ir::Op* op : access) {
    ir::Value* idx = op->operand(1);
    const int64_t vec = op->is(ir::OpId::VecLoad) ? op->result()->type()->count()
                        : op->is(ir::OpId::VecStore) ? op->operand(2)->type()->count() : 1;
    const int64_t step = stride.at(op->operand(0)) / vec;
    ir::Value*& off = offsets[{idx->type(), step}];
    if (!off) {
      ir::Value* zt = idx->type() == z->type() ? z : entry.bitcast(z, idx->type());
      off = entry.mul(zt, entry.constInt(idx->type(), step));
    }
    ir::Builder at(ctx, *op->parentRegion(), op);
    op->setOperand(1, at.add(idx, off));
  }
  return Status::ok();
}

Expected<Compiled> lower(ir::Context& ctx, const Program& p, const LowerOptions& opts) {
  if (p.error()) return *p.error();
  if (p.outputs().empty()) return Error{{}, "the tensor program has no outputs"};
  const auto& nodes = p.nodes();
  // Nodes lowered as another op (attentionFromParts): node(i) is what node i is lowered as.
  std::vector<std::optional<Node>> rewritten(nodes.size());
  auto node = [&](size_t i) -> const Node& { return rewritten[i] ? *rewritten[i] : nodes[i]; };
  // Which nodes the outputs need, who reads each, and where each root's storage is last read.
  std::vector<bool> needed;
  std::vector<std::vector<uint32_t>> readers;
  auto findNeeded = [&] {
    needed.assign(nodes.size(), false);
    for (const auto& [name, id] : p.outputs()) needed[id] = true;
    for (size_t i = nodes.size(); i-- > 0;)
      if (needed[i])
        for (uint32_t in : node(i).inputs) needed[in] = true;
    readers.assign(nodes.size(), {});
    for (size_t j = 0; j < nodes.size(); ++j)
      if (needed[j])
        for (uint32_t in : node(j).inputs) readers[in].push_back(uint32_t(j));
  };
  findNeeded();
  std::vector<bool> isOutputRoot(nodes.size(), false);
  for (const auto& [name, id] : p.outputs()) isOutputRoot[p.root(id)] = true;
  {
    bool any = false;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (needed[i] && (rewritten[i] = attentionFromParts(p, uint32_t(i), readers, isOutputRoot, opts))) any = true;
    if (any) findNeeded();
  }
  // Fusion: which elementwise nodes are computed by their readers instead
  // of stored (LowerOptions::fuse), and the stored roots each node reads.
  std::vector<bool> fused(nodes.size(), false);
  std::vector<std::vector<uint32_t>> reads(nodes.size());
  auto findReads = [&](size_t i) {
    reads[i].clear();
    for (uint32_t in : node(i).inputs) {
      if (!fused[in]) reads[i].push_back(p.root(in));
      else reads[i].insert(reads[i].end(), reads[in].begin(), reads[in].end());
    }
    std::sort(reads[i].begin(), reads[i].end());
    reads[i].erase(std::unique(reads[i].begin(), reads[i].end()), reads[i].end());
  };
  {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!needed[i]) continue;
      findReads(i);
      const OpDef* def = node(i).isView ? nullptr : findOp(node(i).op);
      if (!opts.fuse || !def || !def->element || isOutputRoot[i] || readers[i].empty() ||
          reads[i].size() > opts.maxFusedBuffers / 2)
        continue;
      bool ok = true;
      for (uint32_t j : readers[i]) {
        const OpDef* rd = node(j).isView ? nullptr : findOp(node(j).op);
        ok = ok && rd && (rd->fusesInputs || rd->element) &&
             (numel(nodes[j].shape) == numel(nodes[i].shape) || (rd->reduces && node(j).inputs[0] == i));
        // With N: only into elementwise readers, whose kernels take N rows
        // whole (the others are built for one row of their operands).
        ok = ok && (!isDynamic(nodes[i].shape) || (rd->element && !rd->lower));
      }
      fused[i] = ok;
    }
    // A kernel that would read more than maxFusedBuffers buffers stores its
    // fused inputs instead (each then one buffer), until none does.
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t j = 0; j < nodes.size(); ++j) {
        if (!needed[j]) continue;
        findReads(j);
        if (fused[j] || reads[j].size() <= opts.maxFusedBuffers) continue;
        for (uint32_t x : node(j).inputs)
          if (fused[x]) fused[x] = false, changed = true;
        if (changed) findReads(j);
      }
    }
  }
  // Epilogues: a node whose kernel can compute an elementwise reader where
  // it stores (matmul: OpDef::takesEpilogue), read by one elementwise node
  // of its shape, which is stored or fused into its readers, elementwise
  // nodes of that shape, and so on, all of them into one stored elementwise
  // node of its shape (GELU's x·0.5·(1 + erf(x/√2)) reads x twice): that
  // node's kernel is the matmul's, and the matmul's sums are never stored.
  // One per stored node.
  std::vector<bool> accumulates(nodes.size(), false);
  if (opts.fuse) {
    std::vector<bool> hosts(nodes.size(), false);
    auto elementwiseOfShape = [&](uint32_t j, const Shape& shape) {
      const OpDef* d = node(j).isView ? nullptr : findOp(node(j).op);
      return d && d->element && !d->lower && nodes[j].shape == shape;
    };
    for (size_t i = 0; i < nodes.size(); ++i) {
      const OpDef* def = node(i).isView ? nullptr : findOp(node(i).op);
      if (!needed[i] || fused[i] || !def || !def->takesEpilogue || isOutputRoot[i] || readers[i].size() != 1 ||
          isDynamic(nodes[i].shape) ||
          !def->takesEpilogue(p, node(i), opts))
        continue;
      // The fused nodes from the reader on and the one stored node they end in.
      std::vector<uint32_t> pending = {readers[i][0]}, seen;
      std::optional<uint32_t> host;
      bool ok = true;
      while (ok && !pending.empty()) {
        uint32_t j = pending.back();
        pending.pop_back();
        if (std::find(seen.begin(), seen.end(), j) != seen.end()) continue;
        seen.push_back(j);
        ok = elementwiseOfShape(j, nodes[i].shape);
        if (!ok) break;
        if (fused[j]) {
          pending.insert(pending.end(), readers[j].begin(), readers[j].end());
          continue;
        }
        ok = !host;  // (a second stored node)
        host = j;
      }
      if (!ok || !host || hosts[*host] || (nodes[*host].dtype != DType::F32 && nodes[*host].dtype != DType::F16))
        continue;
      const uint32_t j = *host;
      hosts[j] = true;
      accumulates[i] = fused[i] = true;
    }
    for (size_t i = 0; i < nodes.size(); ++i)
      if (needed[i]) findReads(i);
  }
  std::vector<size_t> lastUse(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (needed[i] && !fused[i]) {
      lastUse[i] = std::max(lastUse[i], i);
      for (uint32_t r : reads[i]) lastUse[r] = std::max(lastUse[r], i);
    }
  for (const auto& [name, id] : p.outputs()) lastUse[p.root(id)] = nodes.size();

  // Kernels index with i32: every tensor (and every root a view reads) must
  // fit (with the dynamic first dimension: a row here, N rows at run time).
  bool dynamic = false;  // (an input with it that no output needs still makes N a parameter: Run.h)
  for (uint32_t id : p.inputs()) dynamic |= isDynamic(nodes[id].shape);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!needed[i]) continue;
    dynamic |= isDynamic(nodes[i].shape);
    if (isDynamic(nodes[i].shape) ? rowElements(nodes[i].shape) > int64_t(INT32_MAX) : numel(nodes[i].shape) > int64_t(INT32_MAX))
      return Error{{}, nodes[i].site + ": " + nodes[i].op + ": a tensor of shape " + shapeText(nodes[i].shape) + " has " +
                           std::to_string(numel(nodes[i].shape)) +
                           " elements; kernels index with 32 bits, so a tensor may have at most 2147483647"};
  }
  Compiled c;
  c.dynamic = dynamic;
  c.module = std::make_unique<ir::Module>(ctx);
  c.deviceIO = opts.deviceIO;
  const ir::Space io = opts.deviceIO ? ir::Space::Device : ir::Space::Host;
  std::vector<const ir::Type*> params, results;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (needed[i] && (nodes[i].op == "input" || nodes[i].op == "const")) {
      c.params.push_back(uint32_t(i));
      params.push_back(ctx.bufferType(irType(ctx, nodes[i].dtype), io, ir::Ownership::Read));
    }
  for (const auto& [name, id] : p.outputs()) {
    c.results.push_back(id);
    results.push_back(ctx.bufferType(irType(ctx, nodes[id].dtype), io, ir::Ownership::Linear));
  }
  if (dynamic) params.push_back(ctx.u32());
  ir::Function* main = c.module->addFunction("main", ir::FunctionKind::Host, ctx.functionType(params, results));
  ir::Builder host(ctx, main->body());
  Lowering l(ctx, *c.module, host, opts);
  if (dynamic) l.extent = main->param(unsigned(params.size() - 1));
  l.compiled = &c;
  l.main = main;

  // The dynamic first dimension: N, and the elements per row of each
  // device buffer that has N rows.
  ir::Value* N = l.extent;
  if (N) N->setName("N");
  std::map<const ir::Value*, int64_t> rowOf;
  auto count = [&](const Shape& shape) {
    if (!isDynamic(shape)) return host.constInt(ctx.u32(), std::max<int64_t>(numel(shape), 1));
    return rowsCount(host, N, rowElements(shape));
  };
  // A node with the dynamic first dimension: `lowerOne` builds it for one
  // row (the node and its operands with first extent 1) through a Lowering
  // that runs every kernel over the N rows (Lowering::rows).
  size_t rowLowerings = 0;
  auto lowerRows = [&](const Node& n, std::vector<Operand> in,
                       const std::function<Expected<ir::Value*>(Lowering&, const Node&, std::span<const Operand>)>&
                           lowerOne) -> Expected<ir::Value*> {
    Lowering rl(ctx, *c.module, host, opts);
    rl.rows = N;
    rl.namePrefix = "r" + std::to_string(rowLowerings++) + "_";
    for (Operand& o : in)
      if (isDynamic(o.shape)) {
        o.shape[0] = 1;
        rl.rowStride[o.buf] = rowOf.at(o.buf);
      }
    Node one = n;
    one.shape[0] = 1;
    auto buf = lowerOne(rl, one, in);
    if (buf && !rl.rowsError.empty())
      return Error{{}, "cannot run over the dynamic first dimension N: " + rl.rowsError};
    return buf;
  };

  std::vector<ir::Value*> storage(nodes.size(), nullptr);  // roots' device buffers
  std::vector<std::shared_ptr<const Fused>> fusion(nodes.size());
  auto operand = [&](uint32_t id) {
    const Node& n = nodes[id];
    return Operand{storage[p.root(id)], n.dtype, n.shape, p.strides(id), n.isView ? n.offset : 0, fusion[id]};
  };
  size_t param = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!needed[i]) continue;
    const Node& n = node(i);
    if (n.op == "input" || n.op == "const") {
      main->param(unsigned(param))->setName(n.op == "input" ? n.name : "c" + std::to_string(i));
      if (opts.deviceIO) {
        storage[i] = main->param(unsigned(param++));  // the caller's, read-only: never freed here
        if (isDynamic(n.shape)) rowOf[storage[i]] = rowElements(n.shape);
        if (n.op == "const" && n.data) l.constants[storage[i]] = n.data;
        continue;
      }
      storage[i] = host.alloc(count(n.shape), ctx.bufferType(irType(ctx, n.dtype), ir::Space::Device, ir::Ownership::Linear));
      if (isDynamic(n.shape)) rowOf[storage[i]] = rowElements(n.shape);
      if (n.op == "const" && n.data) l.constants[storage[i]] = n.data;
      host.h2d(storage[i], main->param(unsigned(param++)));
    } else if (!n.isView) {
      const OpDef* def = findOp(n.op);
      if (!def || (!def->lower && !def->element)) return Error{{}, n.site + ": " + n.op + ": no lowering"};
      std::vector<Operand> in;
      for (uint32_t x : n.inputs) in.push_back(operand(x));
      if (rewritten[i]) {  // attention from its parts: kᵀ (stored: attention fuses no input) read as k
        std::swap(in[1].shape.end()[-1], in[1].shape.end()[-2]);
        std::swap(in[1].strides.end()[-1], in[1].strides.end()[-2]);
      }
      if (fused[i]) {
        fusion[i] = std::make_shared<const Fused>(Fused{&n, def, std::move(in), accumulates[i]});
        continue;
      }
      const Fused* acc = nullptr;  // an epilogue's matmul among the operands
      std::function<void(const Operand&)> find = [&](const Operand& o) {
        if (o.fused && o.fused->accumulator) acc = o.fused.get();
        else if (o.fused) std::for_each(o.fused->in.begin(), o.fused->in.end(), find);
      };
      std::for_each(in.begin(), in.end(), find);
      auto lowerOne = [&](Lowering& at, const Node& m, std::span<const Operand> mIn) -> Expected<ir::Value*> {
        if (def->lower) return def->lower(at, m, mIn);
        return at.map(m, mIn, [&](Kernel& k) { return def->element(k, m, mIn); });
      };
      // With N: elementwise kernels take all N rows (Lowering::map), others one row.
      const bool byRow = isDynamic(n.shape) && def->lower;
      auto buf = acc     ? acc->def->lowerWithEpilogue(l, *acc->node, acc->in, n, in)
                 : byRow ? lowerRows(n, std::move(in), lowerOne)
                         : lowerOne(l, n, in);
      if (buf && isDynamic(n.shape)) rowOf[*buf] = rowElements(n.shape);
      if (!buf) return Error{{}, n.site + ": " + n.op + ": " + buf.error().message};
      storage[i] = *buf;
    }
    // Free what this node read last (its own storage too, when nothing reads it).
    // (@main's parameters, with deviceIO, are the caller's.)
    for (uint32_t r : reads[i])
      if (ir::Value*& s = storage[r]; s && lastUse[r] == i) {
        if (!s->isArgument()) host.free(s);
        s = nullptr;
      }
    if (storage[i] && lastUse[i] == i) {
      host.free(storage[i]);
      storage[i] = nullptr;
    }
  }
  // Outputs: a view that is not its root's whole storage is copied out
  // first; with deviceIO so is an input or constant (the caller's) and a
  // buffer returned already (each result is a buffer of its own).
  std::vector<ir::Value*> out;
  std::vector<ir::Value*> copies;
  for (const auto& [name, id] : p.outputs()) {
    const Node& n = nodes[id];
    ir::Value* dev = storage[p.root(id)];
    bool whole = !n.isView || (p.contiguous(id) && n.offset == 0 && numel(n.shape) == numel(nodes[p.root(id)].shape));
    bool mustCopy = !whole || (opts.deviceIO && (!dev || dev->isArgument() ||
                                                 std::find(out.begin(), out.end(), dev) != out.end()));
    if (mustCopy) {
      Operand o = operand(id);
      dev = l.map("copy", n.dtype, n.shape, std::span(&o, 1), [](Kernel& k) { return k.loadBroadcast(0); }, "");
      copies.push_back(dev);
    }
    out.push_back(dev);
  }
  std::vector<ir::Value*> hostOut;
  if (opts.deviceIO) {
    hostOut = out;
  } else {
    host.wait();
    for (size_t k = 0; k < out.size(); ++k) {
      const Node& n = nodes[p.outputs()[k].second];
      ir::Value* h = host.alloc(count(n.shape), results[k]);
      host.d2h(h, out[k]);
      hostOut.push_back(h);
    }
    for (ir::Value* d : copies) host.free(d);
  }
  for (ir::Value*& s : storage)
    if (s && std::find(hostOut.begin(), hostOut.end(), s) == hostOut.end() &&
        !s->isArgument())
      host.free(s);
  host.ret(hostOut);
  c.module->sourceName = "tensor program";
  if (Status st = ir::verify(*c.module); !st)
    return Error{{}, "internal error: the lowered tensor program does not verify: " + st.error().message};
  return c;
}

}  // namespace eph::tensor
