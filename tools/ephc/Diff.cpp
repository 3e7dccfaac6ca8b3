// `ephc diff FILE --targets=interp,vulkan`: run the entry host function on
// each target (each with a fresh interpreter and device) and compare every
// result with the first target's: exit 0 when all agree, 1 showing the first
// difference.
#include <cstring>
#include <ostream>

#include "runtime/Compare.h"
#include "runtime/Device.h"
#include "tools/ephc/Driver.h"

namespace eph::ephc {

CommandSpec diffSpec() {
  CommandSpec spec{
      .name = "diff",
      .operands = "FILE",
      .summary = "Run an .eph program or .eir module on several targets and compare the results.",
      .description =
          "Runs the entry (default @main) with the --arg values on each target, each\n"
          "with a fresh interpreter and device, and compares every result with the\n"
          "first target's: integers, bools and sum tags exactly; floats within the\n"
          "tolerance (by default 4 ulp, 1e-5 relative or 1e-6 absolute: GPU math is\n"
          "not correctly rounded). Exits 0 when all agree, 1 showing the first\n"
          "difference: the target, the result index, the element index within it\n"
          "(buffers, vectors, structs and arrays are flattened) and both values.",
      .options =
          {
              {"--targets", "LIST", "comma-separated targets (default: every target this build has)"},
              {"--entry", "NAME", "the host function to run (default: main)"},
              {"--arg", "VALUE", "an argument for the entry function; one per parameter, in order", true},
              {"--device", "N", "which Vulkan device (as 'ephc devices' numbers them; default: EPH_DEVICE, else the first GPU)"},
              {"--check-bounds", "", "check every buffer access in kernels on every target (as 'ephc run --check-bounds')"},
              {"--ulp", "N", "float tolerance in units in the last place (default 4)"},
              {"--rel", "X", "float tolerance relative to the larger magnitude (default 1e-5)"},
              {"--abs", "X", "absolute float tolerance (default 1e-6)"},
          },
      .minOperands = 1,
      .maxOperands = 1,
  };
  for (OptionSpec& o : pipelineOptions()) spec.options.push_back(o);
  for (OptionSpec& o : frontendOptionSpecs()) spec.options.push_back(o);
  return spec;
}

namespace {

// One target's run: its interpreter (holding result buffers) and results.
struct TargetRun {
  std::string target;
  std::unique_ptr<interp::Interpreter> interp;
  std::vector<interp::RtValue> results;
};

bool parseNumber(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && end && !*end && out >= 0;
}

}  // namespace

int runDiffCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = diffSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;
  if (!applyFrontendOptions(s, *args, "diff")) return 1;

  runtime::Tolerance tol;
  for (auto [flag, field] : {std::pair{"--ulp", &tol.ulps}, {"--rel", &tol.relative}, {"--abs", &tol.absolute}})
    if (args->has(flag) && !parseNumber(args->get(flag), *field))
      return s.fail(std::string("diff: ") + flag + " wants a non-negative number, got '" + args->get(flag) + "'");
  std::optional<int> deviceIndex = deviceIndexArg(s, *args, "diff");
  if (!deviceIndex) return 1;
  std::vector<std::string> targets =
      args->has("--targets") ? splitList(args->get("--targets")) : runtime::availableTargets();
  if (targets.size() < 2)
    return s.fail("diff: needs at least two targets to compare, got " + std::to_string(targets.size()) +
                  " (--targets=interp,vulkan)");

  if (!loadPlugins(s, *args)) return 1;
  passes::PassManager pm;
  passes::PipelineOptions opts;
  if (!buildPipeline(s, *args, pm, opts)) return 1;
  const std::string& file = args->operands[0];
  ir::Context ctx;
  auto m = s.loadModule(ctx, file);
  if (!m) return 1;
  if (!runPipeline(s, *m, pm, opts)) return 1;

  const ir::Function* entry = findEntry(s, *m, args->get("--entry", "main"), file, "diff");
  if (!entry) return 1;
  std::vector<std::string> texts = args->all("--arg");
  if (!checkArgCount(s, *entry, texts.size(), "diff")) return 1;

  std::vector<TargetRun> runs;
  for (const std::string& target : targets) {
    runtime::DeviceOptions deviceOpts = runtime::DeviceOptions::fromEnvironment();
    if (args->has("--check-bounds")) deviceOpts.checkBounds = true;
    auto device = runtime::openDevice(target, *deviceIndex, deviceOpts);
    if (!device) return s.fail("diff: " + target + ": " + device.error().message);
    TargetRun run{target, std::make_unique<interp::Interpreter>(*m), {}};
    auto values = parseEntryArgs(s, *entry, texts, run.interp->memory(), "diff");
    if (!values) return 1;
    auto results = runtime::runHost(**device, *run.interp, *entry, std::move(*values));
    if (!results) {
      s.io.err << "ephc: diff: on " << target << ":\n";
      return s.report(results.error());
    }
    run.results = std::move(*results);
    runs.push_back(std::move(run));
  }

  TargetRun& ref = runs[0];
  for (size_t t = 1; t < runs.size(); ++t) {
    auto d = runtime::compareResults(ref.results, ref.interp->memory(), runs[t].results, runs[t].interp->memory(), tol);
    if (!d) continue;
    if (!d->what.empty())
      s.io.out << "results differ: " << ref.target << " vs " << runs[t].target << ": " << d->what << "\n";
    else
      s.io.out << "results differ: result " << d->result << ", element " << d->element << ": " << ref.target
               << " gives " << d->a << ", " << runs[t].target << " gives " << d->b << " (float tolerance: "
               << tol.str() << ")\n";
    return 1;
  }
  size_t n = ref.results.size();
  s.io.out << "ok: " << n << (n == 1 ? " result agrees on " : " results agree on ");
  for (size_t t = 0; t < runs.size(); ++t) s.io.out << (t ? ", " : "") << runs[t].target;
  s.io.out << "\n";
  return 0;
}

}  // namespace eph::ephc
