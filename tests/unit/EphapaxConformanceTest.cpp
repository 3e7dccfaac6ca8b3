// Runs every program of the conformance suite (tests/ephapax/conformance, the
// repository's copy of ../shared/ephapax/conformance, against its
// EXPECTED.tsv) and every other program of tests/ephapax (against its
// `-- expect:` line): check, or the first
// diagnostic's code, or the result `main` prints on interp (and cpu where
// this build has it).
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/EphapaxTestUtil.h"

namespace fs = std::filesystem;
using namespace eph::ephapax;
using namespace eph::ephapax::test;

namespace {

struct Case {
  std::string path;
  Expectation want;
};

// The repository's copy; tests read nothing outside the repository.
fs::path conformanceDir() { return fs::path(EPH_SOURCE_DIR) / "tests" / "ephapax" / "conformance"; }

std::vector<Case> conformanceCases() {
  fs::path dir = conformanceDir();
  std::vector<Case> cases;
  std::istringstream in(readFile(dir / "EXPECTED.tsv"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.find('\t');
    cases.push_back({(dir / line.substr(0, tab)).string(), parseExpectation(line.substr(tab + 1))});
  }
  return cases;
}

std::vector<Case> ownCases() {
  std::vector<Case> cases;
  for (auto& entry : fs::recursive_directory_iterator(fs::path(EPH_SOURCE_DIR) / "tests" / "ephapax")) {
    if (entry.path().extension() != ".eph") continue;
    if (fs::relative(entry.path(), conformanceDir()).string().rfind("..", 0) != 0) continue;  // listed in EXPECTED.tsv
    std::string src = readFile(entry.path());
    cases.push_back({entry.path().string(), parseExpectation(expectLine(src))});
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.path < b.path; });
  return cases;
}

TEST(EphapaxConformance, EveryProgramMatchesExpectedTsv) {
  auto cases = conformanceCases();
  ASSERT_GE(cases.size(), 40u) << "EXPECTED.tsv was not found or is short";
  size_t files = 0;
  for (auto& e : fs::recursive_directory_iterator(conformanceDir())) files += e.path().extension() == ".eph";
  EXPECT_EQ(files, cases.size()) << "every conformance program must be listed in EXPECTED.tsv";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    EXPECT_EQ(checkProgram(c.path, readFile(c.path), c.want, runTargets()), "");
  }
}

// The copy in tests/ephapax/conformance is the shared suite, file for file,
// where ../shared is beside the checkout (a clone elsewhere has only the copy).
TEST(EphapaxConformance, RepositoryCopyMatchesTheSharedSuite) {
  fs::path shared = fs::path(EPH_SOURCE_DIR) / ".." / "shared" / "ephapax" / "conformance";
  if (!fs::is_directory(shared)) GTEST_SKIP() << "no ../shared beside this checkout; the repository's copy is used alone";
  std::map<std::string, std::string> want, have;
  for (auto& e : fs::recursive_directory_iterator(shared))
    if (e.is_regular_file()) want[fs::relative(e.path(), shared).string()] = readFile(e.path());
  for (auto& e : fs::recursive_directory_iterator(conformanceDir()))
    if (e.is_regular_file()) have[fs::relative(e.path(), conformanceDir()).string()] = readFile(e.path());
  for (auto& [name, text] : want) {
    auto it = have.find(name);
    if (it == have.end()) ADD_FAILURE() << name << " is in ../shared but not in tests/ephapax/conformance: copy it";
    else EXPECT_EQ(it->second, text) << name << " differs from ../shared: copy it again";
  }
  for (auto& [name, text] : have)
    if (!want.count(name)) ADD_FAILURE() << name << " is in tests/ephapax/conformance but no longer in ../shared";
}

TEST(EphapaxConformance, OwnProgramsMatchTheirExpectations) {
  auto cases = ownCases();
  ASSERT_GE(cases.size(), 60u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    ASSERT_FALSE(c.want.kind.empty()) << "missing `-- expect:` line";
    EXPECT_EQ(checkProgram(c.path, readFile(c.path), c.want, runTargets()), "");
  }
}

// At least two invalid programs per error code (E299, an internal error,
// has none: no program should reach it).
TEST(EphapaxConformance, TwoInvalidProgramsPerCode) {
  std::map<std::string, int> count;
  for (const Case& c : ownCases())
    if (c.want.kind == "error" || c.want.kind == "lower-error") ++count[c.want.value];
  for (const ErrorCodeInfo& info : errorCodes()) {
    std::string code(info.code);
    if (code == "E299") continue;
    EXPECT_GE(count[code], 2) << code << " (" << info.meaning << ") needs two invalid programs in tests/ephapax";
  }
}

// ---- the two checkers agree ------------------------------------------------------

// The class of an ownership error, from a frontend code or an IR linearity message.
std::string classOfCode(const std::string& code) {
  if (code == "E001" || code == "E004") return "leak";
  if (code == "E002") return "reuse";
  if (code == "E005") return "branches";
  return {};
}
std::string classOfIrMessage(const std::string& msg) {
  if (msg.find("is never consumed") != std::string::npos) return "leak";
  if (msg.find("consumed twice") != std::string::npos || msg.find("after it was consumed") != std::string::npos) return "reuse";
  if (msg.find("is consumed in the") != std::string::npos) return "branches";
  return "other";
}

// For every invalid program whose first error is a linearity error (leak,
// use after consume / double consume, branches disagreeing), lowering with
// the frontend's ownership check bypassed gives IR in which the `linearity`
// pass reports the same class of error at the same source location.
TEST(EphapaxConformance, IrLinearityAgreesWithTheFrontend) {
  std::vector<Case> cases = conformanceCases();
  for (const Case& c : ownCases()) cases.push_back(c);
  size_t compared = 0;
  for (const Case& c : cases) {
    if (c.want.kind != "error" || classOfCode(c.want.value).empty()) continue;
    SCOPED_TRACE(c.path);
    std::string src = readFile(c.path);
    DiagSink front;
    check(src, front);
    ASSERT_FALSE(front.empty());
    const Diag& first = front.all()[0];
    eph::ir::Context ctx;
    DiagSink lowerDiags;
    CompileOptions opts;
    opts.frontendCheck = false;
    auto m = compile(ctx, src, c.path, lowerDiags, opts);
    ASSERT_TRUE(m) << renderAll(lowerDiags, c.path, src);
    eph::passes::Diagnostics ir;
    eph::passes::linearityPass().run(*m, ir);
    bool found = false;
    std::string all;
    for (const eph::Error& e : ir.errors) {
      all += e.str() + "\n";
      if (e.loc.line == first.loc.line && e.loc.col == first.loc.col &&
          classOfIrMessage(e.message) == classOfCode(first.code))
        found = true;
    }
    EXPECT_TRUE(found) << "frontend: " << renderDiag(first, c.path, src) << "IR linearity:\n" << all;
    ++compared;
  }
  EXPECT_GE(compared, 20u);
}

}  // namespace
