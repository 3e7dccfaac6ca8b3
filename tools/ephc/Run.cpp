// `ephc run FILE --target=interp`: run a module's entry host function and
// print its results, one per line.
#include <cstdlib>
#include <ostream>

#include "frontends/ephapax/Runtime.h"
#include "ir/interp/Interp.h"
#include "runtime/Device.h"
#include "tools/ephc/Driver.h"

namespace eph::ephc {
CommandSpec runSpec() {
  CommandSpec spec{
      .name = "run",
      .operands = "FILE",
      .summary = "Run the entry host function of an .eir module and print its results.",
      .description =
          "The module is parsed, verified and put through --passes (if given); then\n"
          "the entry function runs with one --arg per parameter, each parsed against\n"
          "the parameter's type: 42, -1.5, true, or [1, 2, 3] for a buffer. Each\n"
          "result is printed on its own line. Targets: interp (the reference\n"
          "interpreter) and, where this build has them, cpu (kernels compiled by\n"
          "LLVM, on EPH_THREADS threads) and vulkan ('ephc devices' lists the\n"
          "devices; --device N or EPH_DEVICE picks one, else the first GPU). The\n"
          "default is a GPU through Vulkan when there is one, else cpu.",
      .options =
          {
              {"--target", "NAME", "where to run: interp, cpu or vulkan (default: a GPU, else cpu)"},
              {"--device", "N", "which Vulkan device (as 'ephc devices' numbers them; default: EPH_DEVICE, else the first GPU)"},
              {"--entry", "NAME", "the host function to run (default: main)"},
              {"--arg", "VALUE", "an argument for the entry function; one per parameter, in order", true},
              {"--link", "LIB.so", "load a shared library first: Ephapax extern functions and __ffi resolve in it", true},
          },
      .minOperands = 1,
      .maxOperands = 1,
  };
  for (OptionSpec& o : pipelineOptions()) spec.options.push_back(o);
  return spec;
}

namespace {

std::string typeList(std::span<const ir::Type* const> types) {
  std::string s;
  for (const ir::Type* t : types) s += (s.empty() ? "" : ", ") + t->str();
  return s;
}

// The function to run, or null after reporting why it cannot be the entry.
const ir::Function* findEntry(Session& s, const ir::Module& m, std::string name, const std::string& file) {
  if (!name.empty() && name[0] == '@') name.erase(0, 1);
  const ir::Function* f = m.lookup(name);
  if (!f) {
    std::string hosts;
    for (auto& fn : m.functions())
      if (fn->isHost()) hosts += (hosts.empty() ? "" : ", ") + ("@" + fn->name());
    s.fail("run: no function '@" + name + "' in '" + file + "'" +
           (hosts.empty() ? " (it has no host functions)" : " (host functions: " + hosts + ")"));
    return nullptr;
  }
  if (f->isKernel()) {
    s.fail("run: '@" + name + "' is a kernel; the entry must be a host function (kernels run through 'dispatch')");
    return nullptr;
  }
  return f;
}

}  // namespace

int runRunCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = runSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;

  int deviceIndex = -1;
  if (args->has("--device")) {
    const std::string text = args->get("--device");
    char* end = nullptr;
    long n = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end || n < 0) return s.fail("run: --device wants a device number, got '" + text + "'");
    deviceIndex = int(n);
  }
  auto device = runtime::openDevice(args->has("--target") ? args->get("--target") : runtime::defaultTarget(), deviceIndex);
  if (!device) return s.fail("run: " + device.error().message);

  if (!loadPlugins(s, *args)) return 1;
  for (const std::string& lib : args->all("--link"))
    if (Status st = ephapax::loadLibrary(lib); !st) return s.fail("run: " + st.error().message);
  passes::PassManager pm;
  passes::PipelineOptions opts;
  if (!buildPipeline(s, *args, pm, opts)) return 1;

  const std::string& file = args->operands[0];
  ir::Context ctx;
  auto m = s.loadModule(ctx, file);
  if (!m) return 1;
  if (!runPipeline(s, *m, pm, opts)) return 1;

  const ir::Function* entry = findEntry(s, *m, args->get("--entry", "main"), file);
  if (!entry) return 1;
  auto params = entry->paramTypes();
  std::vector<std::string> texts = args->all("--arg");
  if (texts.size() != params.size())
    return s.fail("run: '@" + entry->name() + "' takes " + std::to_string(params.size()) + " argument" +
                  (params.size() == 1 ? "" : "s") + (params.empty() ? "" : " (" + typeList(params) + ")") +
                  ", got " + std::to_string(texts.size()) + "; give each with --arg VALUE");

  interp::Interpreter interp(*m);
  std::vector<interp::RtValue> values;
  for (size_t i = 0; i < params.size(); ++i) {
    auto v = interp::parseValue(texts[i], params[i], interp.memory());
    if (!v) {
      std::string pname = entry->param(i)->name();
      return s.fail("run: bad --arg '" + texts[i] + "' for parameter " + std::to_string(i) +
                    (pname.empty() ? "" : " (%" + pname + ")") + " of type '" + params[i]->str() +
                    "': " + v.error().message);
    }
    values.push_back(std::move(*v));
  }
  auto results = runtime::runHost(**device, interp, *entry, std::move(values));
  if (!results) return s.report(results.error());
  for (const interp::RtValue& r : *results) s.io.out << interp::format(r, &interp.memory()) << "\n";
  return 0;
}

}  // namespace eph::ephc
