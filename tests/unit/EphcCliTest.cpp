// The ephc command line in-process: flag parsing, error rendering, and whole
// commands through ephcMain. Also checks that CI runs the README's test command.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tools/ephc/Args.h"
#include "ir/OpTable.h"
#include "tools/ephc/Driver.h"

using namespace eph;
using namespace eph::ephc;

namespace {

CommandSpec demoSpec() {
  return {
      .name = "demo",
      .operands = "FILE",
      .summary = "A demo command.",
      .options = {{"--flag", "", "a flag"},
                  {"--value", "V", "one value"},
                  {"--many", "M", "repeatable", true},
                  {"-o", "OUT", "output"}},
      .minOperands = 1,
      .maxOperands = 1,
  };
}

Expected<ParsedArgs> parse(std::vector<std::string> args) { return parseArgs(demoSpec(), args); }

struct Result {
  int status;
  std::string out, err;
};

Result ephc(std::vector<std::string> args) {
  std::ostringstream out, err;
  int status = ephcMain(args, out, err);
  return {status, out.str(), err.str()};
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(EphcArgs, BothValueFormsFlagsAndOperands) {
  auto a = parse({"in.eir", "--flag", "--value=3", "--many", "x", "--many=y", "-o", "out"});
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->operands, std::vector<std::string>{"in.eir"});
  EXPECT_TRUE(a->has("--flag"));
  EXPECT_EQ(a->get("--value"), "3");
  EXPECT_EQ(a->all("--many"), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(a->get("-o"), "out");
  EXPECT_EQ(a->get("--absent", "fallback"), "fallback");
}

TEST(EphcArgs, ValuesMayLookLikeOptionsAfterTheName) {
  auto a = parse({"--value", "-5", "--", "-file-"});
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->get("--value"), "-5");
  EXPECT_EQ(a->operands, std::vector<std::string>{"-file-"});
}

TEST(EphcArgs, ErrorsNameTheOption) {
  auto expectError = [](std::vector<std::string> args, const std::string& msg) {
    auto a = parse(args);
    ASSERT_FALSE(a);
    EXPECT_EQ(a.error().message, "demo: " + msg + " (see 'ephc demo --help')");
    EXPECT_FALSE(a.error().loc.known());
  };
  expectError({"f", "--nope"}, "unknown option '--nope'");
  expectError({"f", "--value"}, "option '--value' needs a value (V)");
  expectError({"f", "--value="}, "option '--value' needs a value after '='");
  expectError({"f", "--flag=1"}, "option '--flag' takes no value");
  expectError({"f", "--value=1", "--value=2"}, "option '--value' is given twice");
  expectError({}, "no input file");
  expectError({"a", "b"}, "unexpected argument 'b'");
}

TEST(EphcArgs, HelpWinsOverMissingOperands) {
  auto a = parse({"--help"});
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->help);
  std::string help = helpText(demoSpec());
  EXPECT_EQ(help.rfind("usage: ephc demo FILE [options]\n", 0), 0u) << help;
  EXPECT_NE(help.find("  --value=V "), std::string::npos) << help;
  EXPECT_NE(help.find("  -o OUT "), std::string::npos) << help;
}

TEST(EphcArgs, SplitList) {
  EXPECT_EQ(splitList("a,b,,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(splitList("").empty());
}

TEST(EphcRender, CaretUnderTheColumnKeepingTabs) {
  SourceCache sources;
  sources.add("f.eir", "first\n\tab cd\r\nlast");
  std::string file = "f.eir";
  EXPECT_EQ(renderError(makeError(Loc{&file, 2, 5}, "bad"), sources), "f.eir:2:5: error: bad\n  \tab cd\n  \t   ^\n");
  // A column past the end puts the caret after the text.
  EXPECT_EQ(renderError(makeError(Loc{&file, 3, 40}, "x"), sources), "f.eir:3:40: error: x\n  last\n      ^\n");
  // A line that does not exist: just the first line.
  EXPECT_EQ(renderError(makeError(Loc{&file, 9, 1}, "x"), sources), "f.eir:9:1: error: x\n");
  // No location.
  EXPECT_EQ(renderError(makeError({}, "plain"), sources), "ephc: plain\n");
}

// The one renderer (eph::renderDiag) shows the code, underlines the span's
// length (cut at the line's end) and adds the hint.
TEST(EphcRender, CodeSpanAndHint) {
  SourceCache sources;
  std::string file = "h.eir";
  sources.add(file, "  %y = frob %x : i32\n");
  Error e = makeError(Loc{&file, 1, 8}, "unknown op 'frob'", "I003");
  EXPECT_EQ(renderError(e, sources), "h.eir:1:8: error[I003]: unknown op 'frob'\n    %y = frob %x : i32\n         ^\n");
  e.len = 4;
  e.hint = "see 'ephc ops'";
  EXPECT_EQ(renderError(e, sources),
            "h.eir:1:8: error[I003]: unknown op 'frob'\n    %y = frob %x : i32\n         ^~~~\n  hint: see 'ephc ops'\n");
  e.len = 99;
  EXPECT_NE(renderError(e, sources).find("\n         ^~~~~~~~~~~~~\n"), std::string::npos) << renderError(e, sources);
  EXPECT_EQ(e.str(), "h.eir:1:8: error[I003]: unknown op 'frob'");
}

TEST(EphcRender, ControlCharactersUtf8AndLongLines) {
  SourceCache sources;
  std::string file = "g.eir";
  // "é" is two bytes but one column on screen; \x01 is shown as '?'.
  sources.add(file, "\xc3\xa9\x01x\n" + std::string(300, 'a') + "\n");
  EXPECT_EQ(renderError(makeError(Loc{&file, 1, 4}, "c"), sources), "g.eir:1:4: error: c\n  \xc3\xa9?x\n    ^\n");
  // A long line is cut to a window around the column.
  std::string r = renderError(makeError(Loc{&file, 2, 200}, "w"), sources);
  std::string want = "g.eir:2:200: error: w\n  ..." + std::string(160, 'a') + "...\n  " + std::string(83, ' ') + "^\n";
  EXPECT_EQ(r, want);
}

TEST(EphcMain, VersionHelpAndUnknownCommands) {
  Result v = ephc({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.out.rfind("ephc 0.", 0), 0u) << v.out;
  EXPECT_NE(v.out.find("\ntargets: interp"), std::string::npos) << v.out;
  Result h = ephc({"help", "run"});
  EXPECT_EQ(h.status, 0);
  EXPECT_EQ(h.out.rfind("usage: ephc run FILE [options]", 0), 0u);
  Result none = ephc({});
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "ephc: no command given (commands: opt, run, check, passes, ops, lower, devices, diff, solve, onnx-test; see 'ephc --help')\n");
  Result bad = ephc({"frob"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err, "ephc: unknown command 'frob' (commands: opt, run, check, passes, ops, lower, devices, diff, solve, onnx-test; see 'ephc --help')\n");
}

TEST(EphcMain, OpsListsEveryOpOnceWithItsSummary) {
  Result r = ephc({"ops"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  size_t count = 0;
  while (std::getline(lines, line)) {
    ++count;
    size_t gap = line.find("  ");
    ASSERT_NE(gap, std::string::npos) << "no summary: " << line;
    EXPECT_NE(line.find_first_not_of(' ', gap), std::string::npos) << line;
  }
  EXPECT_EQ(count, ir::OpTable::get().all().size());
  EXPECT_NE(r.out.find("\nbarrier "), std::string::npos);
}

TEST(EphcMain, OptPrintsTheModuleAndWritesOutputFiles) {
  std::string dir = testing::TempDir();
  std::string in = dir + "/ephc_cli_in.eir", out = dir + "/ephc_cli_out.eir";
  std::ofstream(in) << "host @main(%x: i32) -> i32 {\n  return %x\n}\n";
  Result r = ephc({"opt", in});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("host @main(%x: i32) -> i32 {"), std::string::npos) << r.out;
  Result w = ephc({"opt", in, "-o", out});
  ASSERT_EQ(w.status, 0) << w.err;
  EXPECT_EQ(w.out, "");
  EXPECT_EQ(readFile(out), r.out);
}

TEST(EphcMain, RunRejectsUnavailableTargetsBeforeReadingTheFile) {
  Result r = ephc({"run", "/nonexistent.eir", "--target=metal"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.rfind("ephc: run: target 'metal' is not available in this build (available: interp", 0), 0u) << r.err;
}

// CI must run exactly the README's test command (the second command block).
// An input that does not end (/dev/zero) or is too long is an error naming
// it, not a hang; one at the limit is read whole.
TEST(EphcMain, AnInputLongerThanTheLimitIsAnError) {
  std::ostringstream out, err;
  Session s{{out, err}};
  s.maxInputBytes = 100000;
  std::string text = "x";
  EXPECT_FALSE(s.readInput("/dev/zero", text));
  EXPECT_EQ(err.str(), "ephc: cannot read '/dev/zero': it is longer than 100000 bytes, the most ephc reads of one input\n");
  EXPECT_EQ(text, "");
  const std::string path = testing::TempDir() + "/ephc-limit.eir";
  std::ofstream(path, std::ios::binary) << std::string(100000, 'y');
  err.str("");
  EXPECT_TRUE(s.readInput(path, text));
  EXPECT_EQ(text, std::string(100000, 'y'));
  EXPECT_EQ(err.str(), "");
  std::ofstream(path, std::ios::binary) << std::string(100001, 'y');
  EXPECT_FALSE(s.readInput(path, text));
  EXPECT_NE(err.str().find("it is longer than 100000 bytes"), std::string::npos) << err.str();
  // The limit by default: protobuf's for an ONNX model.
  const Session fresh{{out, err}};
  EXPECT_EQ(fresh.maxInputBytes, size_t(2) << 30);
}

TEST(EphcReadme, CiRunsTheReadmeTestCommand) {
  std::string readme = readFile(std::string(EPH_SOURCE_DIR) + "/README.md");
  std::string ci = readFile(std::string(EPH_SOURCE_DIR) + "/.ci/run");
  ASSERT_FALSE(readme.empty());
  std::vector<std::string> commands;
  std::istringstream lines(readme);
  std::string line;
  bool inBlock = false;
  while (std::getline(lines, line)) {
    if (line.rfind("```", 0) == 0) {
      inBlock = !inBlock;
      continue;
    }
    if (inBlock && !line.empty() && line[0] != '#' && commands.size() < 2) commands.push_back(line);
  }
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_NE(commands[0].find("ephc run examples/ephapax/saxpy.eph"), std::string::npos) << commands[0];
  EXPECT_NE(commands[1].find("ctest"), std::string::npos) << commands[1];
  EXPECT_NE(ci.find("\n" + commands[1] + "\n"), std::string::npos)
      << ".ci/run does not run the README's test command:\n" << commands[1];
}

}  // namespace
