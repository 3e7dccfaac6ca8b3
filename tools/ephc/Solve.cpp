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
#include "frontends/value/solve/DeviceProblem.h"
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
          "it from the float64 reference evaluator on the host (docs/value-solvers.md).\n"
          "--linear-solver picks how lm and gn solve the normal equations: cholesky\n"
          "(Eigen's sparse Cholesky on the CPU; the default without --target) or pcg\n"
          "(conjugate gradients; the default with --target, where x, r, J and every\n"
          "PCG vector stay on the device and only scalars come back per iteration).",
      .options =
          {
              {"--method", "lm|gn|lbfgs", "the solver (default lm)"},
              {"--max-iterations", "N", "stop after N iterations (default 100)"},
              {"--target", "NAME", "evaluate with the compiled kernels on interp, cpu or vulkan (default: the host's float64 reference evaluator)"},
              {"--precision", "f64|f32", "the kernels' float type with --target (default f64)"},
              {"--linear-solver", "cholesky|pcg", "lm/gn's normal equations (default cholesky, pcg with --target)"},
              {"--format", "text|json", "how the result is printed (default text)"},
          },
      .minOperands = 1,
      .maxOperands = 1,
  };
}

namespace {

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
  std::string linear = args->get("--linear-solver", args->has("--target") ? "pcg" : "cholesky");
  if (linear == "pcg") o.linearSolver = value::LinearSolver::Pcg;
  else if (linear == "cholesky") o.linearSolver = value::LinearSolver::SparseCholesky;
  else return s.fail("solve: --linear-solver wants 'cholesky' or 'pcg', got '" + linear + "'");
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
  std::unique_ptr<value::DeviceProblem> compiled;
  if (args->has("--target")) {
    auto dev = runtime::openDevice(target);
    if (!dev) return s.fail("solve: " + dev.error().message);
    device = std::move(*dev);
    auto p = value::DeviceProblem::create(g, *device, precision == "f32");
    if (!p) {
      if (p.error().code == "E301") return s.io.err << file << ": error[E301]: " << p.error().message << "\n", 1;
      return s.report(p.error());
    }
    compiled = std::move(*p);
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
