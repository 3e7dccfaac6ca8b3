// ephc's entry point as a library function: picks the subcommand and hands
// it the rest of the arguments. Global flags: --help, --version.
#include <ostream>

#include "runtime/Device.h"
#include "tools/ephc/Driver.h"

#ifndef EPH_VERSION
#define EPH_VERSION "unknown"
#endif

namespace eph::ephc {
namespace {

struct Command {
  CommandSpec (*spec)();
  int (*run)(Session&, std::span<const std::string>);
};

const Command kCommands[] = {
    {optSpec, runOptCommand},
    {runSpec, runRunCommand},
    {checkSpec, runCheckCommand},
    {passesSpec, runPassesCommand},
    {opsSpec, runOpsCommand},
    {lowerSpec, runLowerCommand},
    {devicesSpec, runDevicesCommand},
    {diffSpec, runDiffCommand},
    {solveSpec, runSolveCommand},
    {onnxTestSpec, runOnnxTestCommand},
};

std::string commandNames() {
  std::string s;
  for (const Command& c : kCommands) s += (s.empty() ? "" : ", ") + std::string(c.spec().name);
  return s;
}

std::string mainHelp() {
  std::string s =
      "usage: ephc COMMAND [options]\n\n"
      "ephc compiles, checks and runs GPU programs: Ephapax sources (.eph) and\n"
      "modules of eph IR (.eir), an SSA IR of host functions and kernels that\n"
      "every frontend lowers to. Every command is a thin layer over the ephc\n"
      "libraries.\n\ncommands:\n";
  for (const Command& c : kCommands) {
    CommandSpec spec = c.spec();
    s += "  " + std::string(spec.name) + std::string(spec.name.size() < 8 ? 8 - spec.name.size() : 1, ' ') + std::string(spec.summary) + "\n";
  }
  s +=
      "\noptions:\n"
      "  --version   print the version\n"
      "  -h, --help  show this help; 'ephc COMMAND --help' for a command's options\n";
  return s;
}

}  // namespace

int ephcMain(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  Session s{.io = {out, err}};
  if (args.empty()) return s.fail("no command given (commands: " + commandNames() + "; see 'ephc --help')");
  const std::string& cmd = args[0];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    if (cmd == "help" && args.size() > 1) {
      const std::vector<std::string> rest = {"--help"};
      for (const Command& c : kCommands)
        if (c.spec().name == args[1]) return c.run(s, rest);
      return s.fail("unknown command '" + args[1] + "' (commands: " + commandNames() + ")");
    }
    out << mainHelp();
    return 0;
  }
  if (cmd == "--version") {
    std::string targets;
    for (const std::string& t : runtime::availableTargets()) targets += (targets.empty() ? "" : ", ") + t;
    out << "ephc " << EPH_VERSION << "\ntargets: " << targets << "\n";
    return 0;
  }
  for (const Command& c : kCommands)
    if (c.spec().name == cmd) return c.run(s, args.subspan(1));
  if (!cmd.empty() && cmd[0] == '-') return s.fail("unknown option '" + cmd + "' (see 'ephc --help')");
  return s.fail("unknown command '" + cmd + "' (commands: " + commandNames() + "; see 'ephc --help')");
}

}  // namespace eph::ephc
