#include "frontends/value/Compiled.h"

#include <algorithm>

#include "frontends/value/Eval.h"
#include "frontends/value/Signature.h"
#include "ir/Verifier.h"

namespace eph::value {

double SparseMatrix::at(size_t r, uint32_t c) const {
  auto first = cols.begin() + rowStart[r], last = cols.begin() + rowStart[r + 1];
  auto it = std::lower_bound(first, last, c);
  return it != last && *it == c ? values[it - cols.begin()] : 0.0;
}

Expected<std::unique_ptr<CompiledGraph>> CompiledGraph::compile(const Graph& g, LowerOptions opts) {
  if (opts.jacobian) opts.outputs = Outputs{.gradient = false, .jacobian = true}, opts.jacobian = false;
  opts.parameterInput = true;
  std::unique_ptr<CompiledGraph> c(new CompiledGraph);
  c->opts_ = opts;
  c->ctx_ = std::make_unique<ir::Context>();
  std::vector<Group> groups = groupResiduals(g);
  std::string error;
  if (!derivativeLayout(g, groups, opts.outputs.normal, c->layout_, error)) return Error{{}, error};
  c->m_ = lowerGraph(*c->ctx_, g, groups, opts, error);
  if (!c->m_) return Error{{}, error};
  if (Status st = ir::verify(*c->m_); !st)
    return Error{{}, "internal error: the lowered IR does not verify: " + st.error().message};
  for (NodeId leaf : gradientLeaves(g)) c->initial_.push_back(g.node(leaf).value);
  return c;
}

Expected<DeviceOutputs> CompiledGraph::run(runtime::Device& dev, std::span<const double> x) const {
  if (x.size() != numParams())
    return Error{{}, "the graph has " + std::to_string(numParams()) + " parameters, got " + std::to_string(x.size()) + " values"};
  interp::Interpreter in(*m_);
  const ir::Function& entry = *m_->lookup("main");
  const ir::Type* t = opts_.f32 ? ctx_->f32() : ctx_->f64();
  std::vector<interp::RtValue> xs;
  for (size_t i = 0; i < std::max<size_t>(x.size(), 1); ++i) xs.push_back(interp::RtValue::ofFloat(t, i < x.size() ? x[i] : 0.0));
  interp::RtValue arg;
  arg.type = entry.paramTypes()[0];
  arg.buffer = in.memory().adopt(t, ir::Space::Host, std::move(xs));
  std::vector<interp::RtValue> args;
  args.push_back(std::move(arg));
  // @main is straight-line code whose size grows with the problem (every leaf
  // value and table entry is one store): interpreting it once is far cheaper
  // than compiling it with LLVM (RunOptions::Host::Auto on the cpu target).
  runtime::RunOptions ro = runtime::RunOptions::fromEnvironment();
  ro.host = runtime::RunOptions::Host::Interp;
  auto results = runtime::runHost(dev, in, entry, std::move(args), ro);
  if (!results) return results.error();
  size_t next = 0;
  auto take = [&]() {
    std::vector<double> v;
    for (const interp::RtValue& e : in.memory().get((*results)[next++].buffer)->elems) v.push_back(e.f);
    return v;
  };
  DeviceOutputs out;
  out.residuals = take();
  const Outputs& o = opts_.outputs;
  if (o.gradient) (out.gradient = take()).resize(numParams());
  if (o.costGradient) (out.costGradient = take()).resize(numParams());
  if (o.jacobian) {
    std::vector<double> values = take();
    SparseMatrix& j = out.jacobian;
    j.numRows = numResiduals(), j.numCols = numParams();
    j.rowStart = layout_.jacobianRows.start;
    j.cols = layout_.jacobianRows.index;
    for (uint32_t at : layout_.jacobianValue) j.values.push_back(values[at]);
  }
  if (o.normal) {
    SparseMatrix& n = out.normal;
    n.numRows = n.numCols = numParams();
    n.rowStart = layout_.normal.start;
    n.cols = layout_.normal.index;
    (n.values = take()).resize(n.cols.size());
  }
  return out;
}

}  // namespace eph::value
