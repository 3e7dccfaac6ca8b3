// `ephc solve F.vg`: minimise a Value graph's ½ Σ r_i² (or Σ r_i with
// --method=lbfgs) with the solvers of frontends/value/solve, printing a
// progress line per iteration on stderr and the result on stdout (FORMAT.md).
#include <cmath>
#include <cstdlib>
#include <ostream>

#include "frontends/value/Eval.h"
#include "frontends/value/Lower.h"
#include "frontends/value/Signature.h"
#include "frontends/value/Text.h"
#include "frontends/value/solve/GraphProblem.h"
#include "ir/Verifier.h"
#include "runtime/Device.h"
#include "tools/ephc/Driver.h"

namespace eph::ephc {

CommandSpec solveSpec() {
  return CommandSpec{
      .name = "solve",
      .operands = "FILE.vg",
      .summary = "Solve a Value graph (.vg): minimise the sum of squared residuals.",
      .description =
          "Levenberg-Marquardt (--method=lm, the default) or Gauss-Newton (gn)\n"
          "minimise 1/2 sum r_i^2 over the trainable leaves; L-BFGS (lbfgs) minimises\n"
          "sum r_i. One progress line per iteration goes to stderr (iteration, cost,\n"
          "gradient norm, damping, time); the result to stdout: the parameters as\n"
          "text, or with --format=json {\"converged\", \"iterations\", \"cost\", \"params\"}.\n"
          "With --target the residuals and Jacobian rows come from the compiled kernels\n"
          "on that device (per instance the residual's .vjp, in --precision); without\n"
          "it from the float64 reference evaluator on the host (docs/value-solvers.md).",
      .options =
          {
              {"--method", "lm|gn|lbfgs", "the solver (default lm)"},
              {"--max-iterations", "N", "stop after N iterations (default 100)"},
              {"--target", "NAME", "evaluate with the compiled kernels on interp, cpu or vulkan (default: the host's float64 reference evaluator)"},
              {"--precision", "f64|f32", "the kernels' float type with --target (default f64)"},
              {"--format", "text|json", "how the result is printed (default text)"},
          },
      .minOperands = 1,
      .maxOperands = 1,
  };
}

namespace {

// The graph's residuals and Jacobian from its compiled kernels on a device
// (LowerOptions::jacobian): one module, run once per evaluation with x.
class DeviceGraphProblem : public value::LeastSquaresProblem {
 public:
  DeviceGraphProblem(const value::Graph& g, runtime::Device& dev, bool f32, std::string& error) : dev_(dev) {
    std::vector<value::Group> groups = value::groupResiduals(g);
    value::LowerOptions opts;
    opts.f32 = f32;
    opts.jacobian = true;
    m_ = value::lowerGraph(ctx_, g, groups, opts, error);
    if (!m_) return;
    if (Status st = ir::verify(*m_); !st) {
      error = "internal error: the lowered IR does not verify: " + st.error().message;
      m_.reset();
      return;
    }
    numParams_ = value::gradientLeaves(g).size();
    numResiduals_ = g.residuals().size();
    uint32_t np, nc;
    std::vector<uint32_t> slot = value::leafSlots(g, np, nc);
    std::vector<uint64_t> offset = value::jacobianLayout(groups);
    // Per residual: where its values start in the Jacobian buffer and its columns.
    rows_.resize(numResiduals_);
    for (size_t k = 0; k < groups.size(); ++k) {
      const value::Group& grp = groups[k];
      uint64_t at = offset[k];
      for (size_t i = 0; i < grp.residuals.size(); ++i) {
        Row& row = rows_[grp.residuals[i]];
        row.start = at;
        for (size_t sl = 0; sl < grp.slots(); ++sl)
          if (grp.trainable[sl]) row.cols.push_back(slot[grp.leaves[i * grp.slots() + sl]]), ++at;
      }
    }
  }
  bool ok() const { return m_ != nullptr; }
  size_t numParams() const override { return numParams_; }
  size_t numResiduals() const override { return numResiduals_; }
  Status evaluate(std::span<const double> x, std::span<double> r, value::SparseRows* J) override {
    interp::Interpreter in(*m_);
    const ir::Function& entry = *m_->lookup("main");
    std::string text = "[";
    for (size_t i = 0; i < std::max<size_t>(x.size(), 1); ++i)
      text += (i ? ", " : "") + value::formatNumber(i < x.size() ? x[i] : 0.0);
    text += "]";
    auto arg = interp::parseValue(text, entry.paramTypes()[0], in.memory());
    if (!arg) return arg.error();
    std::vector<interp::RtValue> args;
    args.push_back(std::move(*arg));
    auto results = runtime::runHost(dev_, in, entry, std::move(args));
    if (!results) return results.error();
    const auto& rv = in.memory().get((*results)[0].buffer)->elems;
    const auto& jv = in.memory().get((*results)[1].buffer)->elems;
    for (size_t i = 0; i < numResiduals_; ++i) r[i] = rv[i].f;
    if (!J) return {};
    J->reset(numParams_);
    for (const Row& row : rows_) {
      for (size_t c = 0; c < row.cols.size(); ++c) J->add(row.cols[c], jv[row.start + c].f);
      J->endRow();
    }
    return {};
  }

 private:
  struct Row {
    uint64_t start = 0;
    std::vector<uint32_t> cols;
  };
  runtime::Device& dev_;
  ir::Context ctx_;
  std::unique_ptr<ir::Module> m_;
  size_t numParams_ = 0, numResiduals_ = 0;
  std::vector<Row> rows_;
};

std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  std::string s = value::formatNumber(v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

int runSolveCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = solveSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;
  value::SolverOptions o;
  std::string method = args->get("--method", "lm");
  if (method == "lm") o.method = value::Method::LevenbergMarquardt;
  else if (method == "gn") o.method = value::Method::GaussNewton;
  else if (method == "lbfgs") o.method = value::Method::Lbfgs;
  else return s.fail("solve: --method wants 'lm', 'gn' or 'lbfgs', got '" + method + "'");
  if (args->has("--max-iterations")) {
    std::string n = args->get("--max-iterations");
    char* end = nullptr;
    long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end || v < 0 || v > 1000000000)
      return s.fail("solve: --max-iterations wants a count from 0, got '" + n + "'");
    o.maxIterations = int(v);
  }
  std::string target = args->get("--target", "interp"), precision = args->get("--precision", "f64");
  std::string format = args->get("--format", "text");
  if (target != "interp" && target != "cpu" && target != "vulkan")
    return s.fail("solve: --target wants 'interp', 'cpu' or 'vulkan', got '" + target + "'");
  if (precision != "f64" && precision != "f32")
    return s.fail("solve: --precision wants 'f64' or 'f32', got '" + precision + "'");
  if (format != "text" && format != "json") return s.fail("solve: --format wants 'text' or 'json', got '" + format + "'");
  const std::string& file = args->operands[0];
  std::string text;
  if (!s.readInput(file, text)) return 1;
  value::Graph g;
  value::ParseError err;
  if (!value::parse(text, g, err)) return s.io.err << err.render(file, text), 1;
  value::GraphProblem host(g);
  std::vector<double> x = host.initial();
  o.progress = [&](const value::IterationInfo& it) { s.io.err << value::formatProgress(it) << "\n"; };
  // --target: the compiled kernels on that device; without it the host's reference evaluator.
  std::unique_ptr<runtime::Device> device;
  std::unique_ptr<DeviceGraphProblem> compiled;
  if (args->has("--target")) {
    auto dev = runtime::openDevice(target);
    if (!dev) return s.fail("solve: " + dev.error().message);
    device = std::move(*dev);
    std::string why;
    compiled = std::make_unique<DeviceGraphProblem>(g, *device, precision == "f32", why);
    if (!compiled->ok()) return s.io.err << file << ": error[E301]: " << why << "\n", 1;
  }
  value::LeastSquaresProblem& problem = compiled ? static_cast<value::LeastSquaresProblem&>(*compiled) : host;
  auto result = value::solve(problem, x, o);
  if (!result) return s.report(result.error());
  const value::Graph& solved = g;
  std::vector<value::NodeId> leaves = value::gradientLeaves(solved);
  if (format == "json") {
    s.io.out << "{\"converged\": " << (result->converged ? "true" : "false") << ", \"iterations\": " << result->iterations
             << ", \"cost\": " << jsonNumber(result->cost) << ",\n \"params\": {";
    for (size_t i = 0; i < leaves.size(); ++i)
      s.io.out << (i ? ", " : "") << "\"" << solved.leafName(leaves[i]) << "\": " << jsonNumber(x[i]);
    s.io.out << "}}\n";
  } else {
    s.io.out << (result->converged ? "converged" : "not converged") << " (" << value::stopReasonName(result->reason)
             << ") after " << result->iterations << " iterations, cost " << value::formatNumber(result->cost) << "\n";
    for (size_t i = 0; i < leaves.size(); ++i) s.io.out << solved.leafName(leaves[i]) << " = " << value::formatNumber(x[i]) << "\n";
  }
  return result->converged ? 0 : 2;
}

}  // namespace eph::ephc
