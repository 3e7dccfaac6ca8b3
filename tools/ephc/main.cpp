// ephc: the command-line driver. It only parses flags and calls the libraries.
#include <fstream>
#include <iostream>
#include <sstream>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

using namespace eph;

namespace {

int fail(const std::string& msg) {
  std::cerr << "ephc: " << msg << "\n";
  return 1;
}

int cmdOpt(int argc, char** argv) {
  std::string file, pipeline;
  passes::PipelineOptions opts;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--passes=", 0) == 0) pipeline = a.substr(9);
    else if (a.rfind("--print-after=", 0) == 0) opts.printAfter.insert(a.substr(14));
    else if (a == "--time-passes") opts.timePasses = true;
    else if (a.rfind("--load-pass-plugin=", 0) == 0) {
      if (auto s = passes::loadPassPlugin(a.substr(19)); !s) return fail(s.error().message);
    } else if (a.rfind("--", 0) == 0) return fail("unknown option '" + a + "'");
    else file = a;
  }
  if (file.empty()) return fail("opt: no input file");
  std::ifstream in(file);
  if (!in) return fail("cannot open '" + file + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  ir::Context ctx;
  auto m = ir::parseModule(ctx, ss.str(), file);
  if (!m) return std::cerr << m.error().str() << "\n", 1;
  if (auto s = ir::verify(**m); !s) return std::cerr << s.error().str() << "\n", 1;
  auto pm = passes::PassManager::parse(pipeline);
  if (!pm) return fail(pm.error().message);
  std::vector<Error> errors;
  if (!pm->run(**m, opts, errors)) {
    for (auto& e : errors) std::cerr << e.str() << "\n";
    return 1;
  }
  std::cout << ir::print(**m);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fail("usage: ephc <opt|run|passes> ...");
  std::string cmd = argv[1];
  if (cmd == "opt") return cmdOpt(argc - 2, argv + 2);
  return fail("unknown command '" + cmd + "'");
}
