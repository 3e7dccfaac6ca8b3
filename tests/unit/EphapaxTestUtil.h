// Shared helpers for the Ephapax tests: reading files, checking and running
// a program on a target, and the `-- expect:` header of tests/ephapax/*.eph.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "frontends/ephapax/Frontend.h"
#include "ir/interp/Interp.h"
#include "passes/PassManager.h"
#include "runtime/Device.h"

namespace eph::ephapax::test {

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What a program is expected to do: "ok", "error E001" (optionally
// "error E001 at 3:5" for the first diagnostic's position), "result 42",
// "lower-error E200" (it checks, and code generation reports the code), or
// "run-error at 9:15: MESSAGE" (it runs, with bounds checks on, and stops
// with that error on every target).
struct Expectation {
  std::string kind;  // ok | error | result | lower-error | run-error
  std::string value; // the code, the printed result or the run-time error's message
  unsigned line = 0, col = 0;
  bool affineMode = false;  // a `-- mode: affine` line: checked and lowered with --mode affine
};

inline Expectation parseExpectation(const std::string& text) {
  Expectation e;
  std::istringstream in(text);
  in >> e.kind;
  if (e.kind == "ok") return e;
  std::string rest;
  std::getline(in, rest);
  size_t start = rest.find_first_not_of(' ');
  rest = start == std::string::npos ? "" : rest.substr(start);
  if (e.kind == "error" || e.kind == "lower-error") {
    std::istringstream r(rest);
    std::string at, pos;
    r >> e.value >> at >> pos;
    if (at == "at") {
      size_t colon = pos.find(':');
      e.line = static_cast<unsigned>(std::stoul(pos.substr(0, colon)));
      e.col = static_cast<unsigned>(std::stoul(pos.substr(colon + 1)));
    }
  } else if (e.kind == "run-error" && rest.starts_with("at ")) {
    size_t colon = rest.find(':'), end = rest.find(": ", colon + 1);
    e.line = static_cast<unsigned>(std::stoul(rest.substr(3, colon - 3)));
    e.col = static_cast<unsigned>(std::stoul(rest.substr(colon + 1, end - colon - 1)));
    e.value = end == std::string::npos ? "" : rest.substr(end + 2);
  } else {
    e.value = rest;
  }
  return e;
}

// The first `-- expect: ...` line of a test program.
inline std::string expectLine(const std::string& src) {
  const std::string tag = "-- expect: ";
  size_t at = src.find(tag);
  if (at == std::string::npos) return {};
  size_t end = src.find('\n', at);
  return src.substr(at + tag.size(), end == std::string::npos ? std::string::npos : end - at - tag.size());
}

// A `-- mode: affine` line (docs/ephapax-gpu.md, "Regions and modes").
inline bool affineModeLine(const std::string& src) { return src.find("-- mode: affine") != std::string::npos; }

// Checks a program against its expectation; returns "" or what went wrong.
// `targets`: where `result` programs run; each must give the expected result.
inline std::string checkProgram(const std::string& file, const std::string& src, Expectation want,
                                const std::vector<std::string>& targets) {
  want.affineMode = want.affineMode || affineModeLine(src);
  CompileOptions opts;
  opts.check.affineMode = want.affineMode;
  DiagSink diags;
  auto checked = check(src, diags, opts.check);
  if (want.kind == "ok") {
    if (!diags.empty()) return "expected ok, got:\n" + renderAll(diags, file, src);
    // Every valid program must also lower to IR the verifier and the IR
    // linearity pass accept (effects excepted: code generation has E200).
    ir::Context ctx;
    DiagSink lowerDiags;
    auto m = compile(ctx, src, file, lowerDiags, opts);
    if (!m && (lowerDiags.empty() || lowerDiags.all()[0].code != "E200"))
      return "checks, but does not lower:\n" + renderAll(lowerDiags, file, src);
    return {};
  }
  if (want.kind == "lower-error") {
    if (!diags.empty()) return "expected it to check, got:\n" + renderAll(diags, file, src);
    ir::Context ctx;
    DiagSink lowerDiags;
    auto m = compile(ctx, src, file, lowerDiags, opts);
    if (m || lowerDiags.empty()) return "expected lowering to fail with " + want.value;
    const Diag& d = lowerDiags.all()[0];
    if (d.code != want.value) return "expected lowering error " + want.value + ", got:\n" + renderAll(lowerDiags, file, src);
    if (want.line && (d.loc.line != want.line || d.loc.col != want.col))
      return "expected lowering error at " + std::to_string(want.line) + ":" + std::to_string(want.col) + ", got:\n" +
             renderAll(lowerDiags, file, src);
    return {};
  }
  if (want.kind == "error") {
    if (diags.empty()) return "expected error " + want.value + ", got none";
    const Diag& d = diags.all()[0];
    if (d.code != want.value) return "expected error " + want.value + ", first diagnostic is:\n" + renderAll(diags, file, src);
    if (want.line && (d.loc.line != want.line || d.loc.col != want.col))
      return "expected error " + want.value + " at " + std::to_string(want.line) + ":" + std::to_string(want.col) +
             ", got:\n" + renderAll(diags, file, src);
    return {};
  }
  // result
  ir::Context ctx;
  DiagSink lowerDiags;
  auto m = compile(ctx, src, file, lowerDiags, opts);
  if (!m) return "does not compile:\n" + renderAll(lowerDiags, file, src);
  const ir::Function* entry = m->lookup("main");
  if (!entry) return "no main";
  runtime::DeviceOptions devOpts;
  devOpts.checkBounds = want.kind == "run-error";
  for (const std::string& target : targets) {
    auto dev = runtime::openDevice(target, -1, devOpts);
    if (!dev) return "cannot open " + target + ": " + dev.error().message;
    if (Status st = (*dev)->prepare(*m); !st) return target + ": prepare failed: " + st.error().str();
    interp::Interpreter in(*m);
    auto results = runtime::runHost(**dev, in, *entry, {});
    if (want.kind == "run-error") {
      if (results) return target + ": expected a run-time error, got a result";
      const Error& e = results.error();
      if (e.loc.line != want.line || e.loc.col != want.col || e.message != want.value)
        return target + ": expected the error at " + std::to_string(want.line) + ":" + std::to_string(want.col) +
               ": " + want.value + "\ngot: " + e.str();
      continue;
    }
    if (!results) return target + ": run failed: " + results.error().str();
    if (results->size() != 1) return target + ": main returned " + std::to_string(results->size()) + " values";
    std::string got = interp::format((*results)[0], &in.memory());
    if (got != want.value) return target + ": expected result " + want.value + ", got " + got;
  }
  return {};
}

// interp, cpu when this build has it, and vulkan when a Vulkan device opens
// (always with EPH_REQUIRE_VULKAN=1, so that a machine without one fails).
inline std::vector<std::string> runTargets() {
  static const std::vector<std::string> targets = [] {
    std::vector<std::string> out = {"interp"};
    for (const std::string& t : runtime::availableTargets())
      if (t == "cpu") out.push_back(t);
    const char* req = std::getenv("EPH_REQUIRE_VULKAN");
    bool required = req && std::string(req) == "1";
    if (required || runtime::openDevice("vulkan")) out.push_back("vulkan");
    return out;
  }();
  return targets;
}

}  // namespace eph::ephapax::test
