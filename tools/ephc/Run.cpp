// `ephc run FILE --target=interp`: run a module's entry host function and
// print its results, one per line. `--devices=LIST` runs it on several.
#include <cstdlib>
#include <ostream>

#include "frontends/Frontend.h"
#include "ir/interp/ForeignCall.h"
#include "ir/interp/Interp.h"
#include "runtime/Device.h"
#include "runtime/RunStats.h"
#include "tools/ephc/Driver.h"

namespace eph::ephc {
CommandSpec runSpec() {
  CommandSpec spec{
      .name = "run",
      .operands = "FILE",
      .summary = "Run the entry function of an .eph program or .eir module and print its results.",
      .description =
          "The module is parsed, verified and put through --passes (the 'default'\n"
          "pipeline, which checks linearity, unless --passes is given); then\n"
          "the entry function runs with one --arg per parameter, each parsed against\n"
          "the parameter's type: 42, -1.5, true, or [1, 2, 3] for a buffer. Each\n"
          "result is printed on its own line. Targets: interp (the reference\n"
          "interpreter) and, where this build has them, cpu (kernels compiled by\n"
          "LLVM, on EPH_THREADS threads) and vulkan ('ephc devices' lists the\n"
          "devices; --device N or EPH_DEVICE picks one, else the first GPU). The\n"
          "default is a GPU through Vulkan when there is one, else cpu.\n"
          "--devices=vulkan,cpu runs one program on several devices: device k of the\n"
          "program (alloc {device = k}, default 0) is the k-th of the list.\n"
          "--check-buffers (or EPH_CHECK_BUFFERS=1) follows every device buffer and\n"
          "reports use after free, double free and leaks with the allocation site.\n"
          "An index out of bounds is an error with the index, the length and the\n"
          "invocation on interp and cpu always, on vulkan with --check-bounds (or\n"
          "EPH_CHECK_BOUNDS=1); without it an access out of bounds on vulkan is\n"
          "undefined (lavapipe reads 0 and drops the write; a GPU may not).\n"
          "Host code is compiled with LLVM on the cpu target (--host=auto, the\n"
          "default) unless the module uses an op the compiled host code does not\n"
          "support; --host=jit shows why, --host=interp interprets it.",
      .options =
          {
              {"--target", "NAME", "where to run: interp, cpu or vulkan (default: a GPU, else cpu)"},
              {"--device", "N", "which Vulkan device (as 'ephc devices' numbers them; default: EPH_DEVICE, else the first GPU)"},
              {"--devices", "LIST", "run on several devices, e.g. vulkan,cpu or vulkan:0,vulkan:1: `alloc {device = k}` puts a buffer on the k-th"},
              {"--entry", "NAME", "the host function to run (default: main)"},
              {"--arg", "VALUE", "an argument for the entry function; one per parameter, in order", true},
              {"--link", "LIB.so", "load a shared library first: call.c (Ephapax extern functions, __ffi) resolves in it", true},
              {"--check-buffers", "", "track every device buffer: use after free, double free and leaks are errors naming its allocation site (also EPH_CHECK_BUFFERS=1)"},
              {"--check-bounds", "", "check every buffer access in kernels: out of bounds is an error naming the access, the index, the length and the invocation (always on for interp and cpu; also EPH_CHECK_BOUNDS=1)"},
              {"--stats", "", "print to stderr after the run: dispatches, distinct kernels dispatched, and peak device bytes (the most device memory live buffers held at once)"},
              {"--host", "MODE", "where host code runs: auto (compiled by LLVM on the cpu target when the module's host code can be, else interpreted), jit (always compiled; an error naming the op when it cannot be), interp (also EPH_HOST)"},
          },
      .minOperands = 1,
      .maxOperands = 1,
  };
  for (OptionSpec& o : pipelineOptions()) spec.options.push_back(o);
  for (OptionSpec& o : frontendOptionSpecs()) spec.options.push_back(o);
  return spec;
}


int runRunCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = runSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;
  if (!applyFrontendOptions(s, *args, "run")) return 1;

  // One device (--target, --device) or several (--devices).
  std::vector<std::unique_ptr<runtime::Device>> devices;
  runtime::DeviceOptions deviceOpts = runtime::DeviceOptions::fromEnvironment();
  if (args->has("--check-bounds")) deviceOpts.checkBounds = true;
  deviceOpts.tieredCpu = true;  // small first dispatches at -O0 (CpuOptions::tiered)
  if (args->has("--devices")) {
    if (args->has("--target") || args->has("--device"))
      return s.fail("run: --devices names every device; give it without --target and --device");
    auto opened = runtime::openDevices(args->get("--devices"), deviceOpts);
    if (!opened) return s.fail("run: --devices: " + opened.error().message);
    devices = std::move(*opened);
  } else {
    std::optional<int> deviceIndex = deviceIndexArg(s, *args, "run");
    if (!deviceIndex) return 1;
    auto device = runtime::openDevice(args->has("--target") ? args->get("--target") : runtime::defaultTarget(), *deviceIndex, deviceOpts);
    if (!device) return s.fail("run: " + device.error().message);
    devices.push_back(std::move(*device));
  }

  if (!loadPlugins(s, *args)) return 1;
  for (const std::string& lib : args->all("--link"))
    if (Status st = interp::loadForeignLibrary(lib); !st) return s.fail("run: " + st.error().message);
  passes::PassManager pm;
  passes::PipelineOptions opts;
  if (!buildPipeline(s, *args, pm, opts)) return 1;

  const std::string& file = args->operands[0];
  ir::Context ctx;
  auto m = s.loadModule(ctx, file);
  if (!m) return 1;
  if (!runPipeline(s, *m, pm, opts)) return 1;

  const ir::Function* entry = findEntry(s, *m, args->get("--entry", "main"), file, "run");
  if (!entry) return 1;
  std::vector<std::string> texts = args->all("--arg");
  const frontends::Frontend* frontend = frontends::forFile(file);
  interp::Interpreter interp(*m);
  std::optional<std::vector<interp::RtValue>> values;
  if (frontend && frontend->runArgs) {
    // The frontend supplies the arguments (an ONNX model's weights and inputs).
    if (!texts.empty()) return s.fail("run: '" + file + "' takes no --arg (its frontend supplies the arguments)");
    std::string text, diagnostics;
    if (!s.readInput(file, text)) return 1;
    values.emplace();
    bool ok = frontend->runArgs(text, file, s.frontendOptions, *entry, interp.memory(), *values, diagnostics);
    s.io.err << diagnostics;
    if (!ok) return 1;
  } else {
    if (!checkArgCount(s, *entry, texts.size(), "run")) return 1;
    values = parseEntryArgs(s, *entry, texts, interp.memory(), "run");
    if (!values) return 1;
  }
  runtime::RunOptions runOpts = runtime::RunOptions::fromEnvironment();
  if (args->has("--check-buffers")) runOpts.checkBuffers = true;
  if (args->has("--host")) {
    std::string host = args->get("--host");
    if (host == "auto") runOpts.host = runtime::RunOptions::Host::Auto;
    else if (host == "jit") runOpts.host = runtime::RunOptions::Host::Jit;
    else if (host == "interp") runOpts.host = runtime::RunOptions::Host::Interp;
    else return s.fail("run: --host must be auto, jit or interp, not '" + host + "'");
  }
  runtime::RunStats stats;
  if (args->has("--stats")) runOpts.stats = &stats;
  std::vector<runtime::Device*> set;
  for (auto& d : devices) set.push_back(d.get());
  auto results = runtime::runHost(set, interp, *entry, std::move(*values), runOpts);
  if (runOpts.stats) s.io.err << stats.text();
  if (!results) return s.report(results.error());
  if (frontend && frontend->runResults) {
    std::string text, out, diagnostics;
    if (!s.readInput(file, text)) return 1;
    bool ok = frontend->runResults(text, file, s.frontendOptions, interp.memory(), *results, out, diagnostics);
    s.io.out << out;
    s.io.err << diagnostics;
    return ok ? 0 : 1;
  }
  if (const frontends::Frontend* f = frontend; f && f->formatRun) {
    // The frontend prints the results in its own form (a .vg report).
    std::vector<std::vector<double>> numbers;
    for (const interp::RtValue& r : *results) {
      auto& row = numbers.emplace_back();
      if (const interp::BufferData* b = r.type->isBuffer() ? interp.memory().get(r.buffer) : nullptr)
        for (const interp::RtValue& e : b->elems) row.push_back(e.f);
      else
        row.push_back(r.f);
    }
    std::string text, out, diagnostics;
    if (!s.readInput(file, text)) return 1;
    bool ok = f->formatRun(text, file, s.frontendOptions, numbers, out, diagnostics);
    s.io.out << out;
    s.io.err << diagnostics;
    return ok ? 0 : 1;
  }
  for (const interp::RtValue& r : *results) s.io.out << interp::format(r, &interp.memory()) << "\n";
  return 0;
}

}  // namespace eph::ephc
