// `ephc lower FILE --emit=KIND`: parse and verify a module, then hand its
// kernels to a code generator and write what it emits. The emit kinds are a
// table (name, what it writes, whether the output is text, the function that
// produces it), so a target adds one row.
//
// The device the code is for is a built-in DeviceCaps profile
// (--device-caps=lavapipe|nvidia|minimal, default lavapipe), optionally with
// features taken away (--caps=nofloatatomics,...), so what a kernel becomes
// on a given kind of device can be seen and tested without one.
#include <fstream>
#include <functional>
#include <ostream>

#include "ir/DeviceCaps.h"
#include "ir/Printer.h"
#include "tools/ephc/Driver.h"

#ifdef EPH_HAVE_LLVM
#include "targets/llvm/Llvm.h"
#endif
#ifdef EPH_HAVE_SPIRV
#include "targets/spirv/CapsProfiles.h"
#include "targets/spirv/Spirv.h"
#endif

namespace eph::ephc {

namespace {

// Produces the output for the selected kernels; false after reporting an error.
using EmitFn = bool (*)(Session& s, const std::vector<const ir::Function*>& kernels,
                        const DeviceCaps& caps, const ParsedArgs& args, std::string& out);

struct EmitKind {
  std::string_view name;
  std::string_view what;
  bool text;       // may go to stdout; several kernels allowed
  EmitFn emit;     // null: not built into this ephc
};

#ifdef EPH_HAVE_SPIRV
spirv::EmitOptions spirvOptions(const ParsedArgs& args) { return {.checkBounds = args.has("--check-bounds")}; }

bool emitSpirvBinary(Session& s, const std::vector<const ir::Function*>& kernels, const DeviceCaps& caps,
                     const ParsedArgs& args, std::string& out) {
  auto words = spirv::emitKernel(*kernels[0], caps, spirvOptions(args));
  if (!words) return s.report(words.error()), false;
  out.assign(reinterpret_cast<const char*>(words->data()), words->size() * 4);
  return true;
}

bool emitSpirvText(Session& s, const std::vector<const ir::Function*>& kernels, const DeviceCaps& caps,
                   const ParsedArgs& args, std::string& out) {
  for (const ir::Function* k : kernels) {
    auto words = spirv::emitKernel(*k, caps, spirvOptions(args));
    if (!words) return s.report(words.error()), false;
    if (kernels.size() > 1) out += "; kernel @" + k->name() + "\n";
    out += spirv::disassemble(*words);
  }
  return true;
}
constexpr EmitFn kSpirvBinary = emitSpirvBinary, kSpirvText = emitSpirvText;
#else
constexpr EmitFn kSpirvBinary = nullptr, kSpirvText = nullptr;
#endif

#ifdef EPH_HAVE_LLVM
// The CPU target: the selected kernels (and the device functions) for the
// host CPU at -O0..-O3 (default -O2); without --kernel, --emit=llvm shows
// the host functions too (or, as a comment, why they run in the interpreter).
llvmtarget::LowerOptions llvmOptions(const std::vector<const ir::Function*>& fns, const ParsedArgs& args) {
  llvmtarget::LowerOptions o;
  for (unsigned level = 0; level <= 3; ++level)
    if (args.has("-O" + std::to_string(level))) o.optLevel = level;
  for (const ir::Function* k : fns)
    if (k->isKernel()) o.kernels.push_back(k->name());
  if (o.kernels.empty()) o.kernels.push_back("");  // no kernel has that name: none is lowered
  o.lowerHost = !args.has("--kernel");
  return o;
}

bool emitLlvmText(Session& s, const std::vector<const ir::Function*>& kernels, const DeviceCaps&,
                  const ParsedArgs& args, std::string& out) {
  auto text = llvmtarget::emitLlvmText(*kernels[0]->module(), llvmOptions(kernels, args));
  if (!text) return s.report(text.error()), false;
  out = std::move(*text);
  return true;
}

bool emitLlvmObject(Session& s, const std::vector<const ir::Function*>& kernels, const DeviceCaps&,
                    const ParsedArgs& args, std::string& out) {
  auto object = llvmtarget::emitObject(*kernels[0]->module(), llvmOptions(kernels, args));
  if (!object) return s.report(object.error()), false;
  out.assign(object->begin(), object->end());
  return true;
}
constexpr EmitFn kLlvmText = emitLlvmText, kLlvmObject = emitLlvmObject;
#else
constexpr EmitFn kLlvmText = nullptr, kLlvmObject = nullptr;
#endif

// The module as IR text: what a frontend (an .eph program) lowered to, every
// function (or just the ones --kernel names), with --locations their source
// locations.
bool emitIr(Session&, const std::vector<const ir::Function*>& fns, const DeviceCaps&, const ParsedArgs& args,
            std::string& out) {
  ir::PrintOptions opts;
  opts.locations = args.has("--locations");
  if (!args.has("--kernel")) {
    out = ir::print(*fns[0]->module(), opts);
    return true;
  }
  for (const ir::Function* f : fns) out += ir::print(*f, opts);
  return true;
}

const EmitKind kEmitKinds[] = {
    {"ir", "the module as IR text (an .eph program after lowering); every function, not just kernels", true, emitIr},
    {"spirv", "a SPIR-V binary module for one kernel (validated)", false, kSpirvBinary},
    {"spvasm", "SPIR-V assembly of each kernel (validated), spirv-dis style", true, kSpirvText},
    {"llvm", "LLVM IR of the kernels and host functions for the host CPU (verified, optimised at -O0..-O3)", true, kLlvmText},
    {"obj", "a host object file: the kernel as a function over one workgroup, and NAME.range", false, kLlvmObject},
};

// Features --caps can take away from a profile.
struct CapsEdit {
  std::string_view name;
  std::function<void(DeviceCaps&)> apply;
};
const std::vector<CapsEdit>& capsEdits() {
  static const std::vector<CapsEdit> edits = {
      {"nofloatatomics", [](DeviceCaps& c) { c.atomicFloat32Add = c.atomicFloat64Add = false; }},
      {"noint64atomics", [](DeviceCaps& c) { c.atomicInt64 = false; }},
      {"nofloat64", [](DeviceCaps& c) { c.float64 = false; }},
      {"nofloat16", [](DeviceCaps& c) { c.float16 = false; }},
      {"noint64", [](DeviceCaps& c) { c.int64 = false; }},
      {"noint16", [](DeviceCaps& c) { c.int16 = false; }},
      {"noint8", [](DeviceCaps& c) { c.int8 = false; }},
  };
  return edits;
}

std::string emitKindNames() {
  std::string s;
  for (const EmitKind& k : kEmitKinds) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

std::string capsEditNames() {
  std::string s;
  for (const CapsEdit& e : capsEdits()) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

}  // namespace

CommandSpec lowerSpec() {
  CommandSpec spec{
      .name = "lower",
      .operands = "FILE",
      .summary = "Compile an .eph program or .eir module for a target (--emit=ir|spirv|spvasm|llvm|obj).",
      .description = "FILE is an .eph program or an .eir module ('-': IR on standard input).\n"
                     "--emit=spirv writes one kernel's SPIR-V\n"
                     "binary (choose it with --kernel when there are several) and needs -o;\n"
                     "--emit=spvasm prints the assembly of every kernel (or the one named).\n"
                     "Every module passes the spirv-tools validator before it is written.\n"
                     "The device is a built-in profile: lavapipe (default), nvidia or minimal;\n"
                     "--caps takes features away from it, e.g. --caps=nofloatatomics.\n"
                     "--emit=llvm prints the LLVM IR of the kernels for the host CPU (and,\n"
                     "without --kernel, of the host functions, or why they are interpreted), and\n"
                     "--emit=obj writes an object file of one kernel (-o needed), both after\n"
                     "LLVM's pipeline for -O0..-O3 (default -O2). --emit=ir prints the whole\n"
                     "module as IR text (an .eph program after lowering; --locations adds\n"
                     "each op's source location). The module first goes through --passes\n"
                     "(the 'default' pipeline unless given).",
      .options =
          {
              {"--emit", "KIND", "what to produce: ir, spirv, spvasm, llvm, obj"},
              {"--locations", "", "ir: print each op's source location (an .eph file's line:col)"},
              {"--kernel", "NAME", "lower only this kernel"},
              {"--device-caps", "PROFILE", "the device to compile for: lavapipe, nvidia, minimal"},
              {"--check-bounds", "", "spirv, spvasm: bounds checks in the kernel, as 'ephc run --check-bounds' on vulkan"},
              {"--caps", "LIST", "take features away: nofloatatomics, noint64atomics, nofloat64, nofloat16, noint64, noint16, noint8"},
              {"-o", "OUT", "write the output to OUT (required for binary kinds)"},
              {"-O0", "", "llvm, obj: no optimisation"},
              {"-O1", "", "llvm, obj: LLVM's -O1 pipeline"},
              {"-O2", "", "llvm, obj: LLVM's -O2 pipeline (the default)"},
              {"-O3", "", "llvm, obj: LLVM's -O3 pipeline"},
          },
      .minOperands = 1,
      .maxOperands = 1,
  };
  for (OptionSpec& o : pipelineOptions()) spec.options.push_back(o);
  for (OptionSpec& o : frontendOptionSpecs()) spec.options.push_back(o);
  return spec;
}

int runLowerCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = lowerSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;
  if (!applyFrontendOptions(s, *args, "lower")) return 1;

  if (!args->has("--emit")) return s.fail("lower needs --emit=KIND (one of: " + emitKindNames() + ")");
  std::string kindName = args->get("--emit");
  const EmitKind* kind = nullptr;
  for (const EmitKind& k : kEmitKinds)
    if (k.name == kindName) kind = &k;
  if (!kind) return s.fail("unknown --emit kind '" + kindName + "' (kinds: " + emitKindNames() + ")");
  if (!kind->emit) return s.fail("--emit=" + kindName + ": this ephc was built without that target");
  if (!kind->text && !args->has("-o"))
    return s.fail("--emit=" + kindName + " writes binary output: give a file with -o");

  DeviceCaps caps;
#ifdef EPH_HAVE_SPIRV
  std::string profile = args->get("--device-caps", "lavapipe");
  auto found = spirv::capsProfile(profile);
  if (!found)
    return s.fail("unknown --device-caps profile '" + profile + "' (profiles: " + spirv::capsProfileNames() + ")");
  caps = *found;
#endif
  for (const std::string& edit : splitList(args->get("--caps"))) {
    const CapsEdit* e = nullptr;
    for (const CapsEdit& c : capsEdits())
      if (c.name == edit) e = &c;
    if (!e) return s.fail("unknown --caps entry '" + edit + "' (entries: " + capsEditNames() + ")");
    e->apply(caps);
  }

  if (!loadPlugins(s, *args)) return 1;
  passes::PassManager pm;
  passes::PipelineOptions opts;
  if (!buildPipeline(s, *args, pm, opts)) return 1;
  ir::Context ctx;
  auto m = s.loadModule(ctx, args->operands[0]);
  if (!m) return 1;
  if (!runPipeline(s, *m, pm, opts)) return 1;
  std::vector<const ir::Function*> kernels;
  if (args->has("--kernel")) {
    std::string name = args->get("--kernel");
    if (!name.empty() && name[0] == '@') name = name.substr(1);
    const ir::Function* f = m->lookup(name);
    if (!f) return s.fail("no function @" + name + " in '" + args->operands[0] + "'");
    if (!f->isKernel() && kind->emit != emitIr) return s.fail("@" + name + " is a " + std::string(ir::functionKindName(f->kind())) + " function, not a kernel");
    kernels.push_back(f);
  } else {
    for (const auto& f : m->functions())
      if (f->isKernel() || kind->emit == emitIr || (kind->emit == kLlvmText && kLlvmText && f->isHost()))
        kernels.push_back(f.get());
  }
  if (kernels.empty())
    return s.fail("'" + args->operands[0] + "' has no kernels" + (kind->emit == kLlvmText && kLlvmText ? " or host functions" : "") +
                  " to lower");
  if (!kind->text && kernels.size() > 1) {
    std::string names;
    for (const ir::Function* k : kernels) names += (names.empty() ? "@" : ", @") + k->name();
    return s.fail("--emit=" + kindName + " writes one kernel, and there are " + std::to_string(kernels.size()) +
                  " (" + names + "): choose one with --kernel");
  }

  std::string out;
  if (!kind->emit(s, kernels, caps, *args, out)) return 1;
  if (!args->has("-o") || args->get("-o") == "-") {
    s.io.out << out;
    return 0;
  }
  std::string outPath = args->get("-o");
  std::ofstream file(outPath, std::ios::binary);
  if (!file || !(file << out) || !file.flush()) return s.fail("cannot write '" + outPath + "'");
  return 0;
}

}  // namespace eph::ephc
