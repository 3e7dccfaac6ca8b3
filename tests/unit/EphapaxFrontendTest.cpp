// Ephapax frontend units: tokens, parsing limits, diagnostics, the error
// index, code-generation errors (E2xx), the FFI, locations in lowered IR and
// tail calls as loops.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "frontends/ephapax/Lexer.h"
#include "frontends/ephapax/Parser.h"
#include "tests/unit/EphapaxTestUtil.h"

namespace fs = std::filesystem;
using namespace eph::ephapax;
using namespace eph::ephapax::test;

namespace {

std::vector<Diag> diagsOf(const std::string& src) {
  DiagSink d;
  check(src, d);
  return d.all();
}

std::string firstCode(const std::string& src) {
  auto d = diagsOf(src);
  return d.empty() ? "ok" : d[0].code;
}

// Compiles and runs main on the interpreter; the printed result or the error.
std::string run(const std::string& src) {
  eph::ir::Context ctx;
  DiagSink d;
  auto m = compile(ctx, src, "t.eph", d);
  if (!m) return "error " + (d.empty() ? std::string("?") : d.all()[0].code);
  auto dev = eph::runtime::openDevice("interp");
  eph::interp::Interpreter in(*m);
  auto r = eph::runtime::runHost(**dev, in, *m->lookup("main"), {});
  if (!r) return "trap " + r.error().message;
  return eph::interp::format((*r)[0], &in.memory());
}

TEST(EphapaxLexer, KeywordsLiteralsAndComments) {
  DiagSink d;
  auto toks = lex("let! x = -- c\n 3000000000 /* b */ 1.5 \"a\\n\" // e\n let", d);
  EXPECT_TRUE(d.empty());
  ASSERT_EQ(toks.size(), 8u);
  EXPECT_EQ(toks[0].kind, Tok::KwLetBang);
  EXPECT_EQ(toks[1].kind, Tok::Ident);
  EXPECT_EQ(toks[3].kind, Tok::Int);
  EXPECT_TRUE(toks[3].wide);
  EXPECT_EQ(toks[3].ival, 3000000000LL);
  EXPECT_EQ(toks[4].kind, Tok::Float);
  EXPECT_EQ(toks[5].text, "a\n");
  EXPECT_EQ(toks[6].kind, Tok::KwLet);
  EXPECT_EQ(toks[6].span.line, 3u);
  EXPECT_EQ(toks[7].kind, Tok::End);
}

TEST(EphapaxLexer, BadInputIsE000) {
  EXPECT_EQ(firstCode("fn f(): I32 = 1 # 2"), "E000");
  EXPECT_EQ(firstCode("fn f(): I32 = 99999999999999999999"), "E000");
  EXPECT_EQ(firstCode("/* never closed"), "E000");
  EXPECT_EQ(firstCode("fn f(): I32 = let s = \"\\q\" in 0"), "E000");
  EXPECT_EQ(firstCode("fn f(): I32 = \xff"), "E000");
}

TEST(EphapaxParser, DeepNestingIsAnErrorNotACrash) {
  const std::vector<std::string> programs = {
      "fn f(): I32 = " + std::string(100000, '(') + "1" + std::string(100000, ')'),
      "fn f(): I32 = 1" + [] { std::string s; for (int i = 0; i < 100000; ++i) s += " + 1"; return s; }(),
      "fn f(): I32 = " + [] { std::string s; for (int i = 0; i < 50000; ++i) s += "let x = 1 in "; return s + "x"; }(),
      "fn f(x: " + std::string(100000, '[') + "I32" + std::string(100000, ']') + "): I32 = 0",
      "fn f(): I32 = match 1 of | " + std::string(100000, '(') + "x" + std::string(100000, ')') + " => 1 end",
      "fn f(): I32 = " + [] { std::string s; for (int i = 0; i < 100000; ++i) s += "!"; return s + "true"; }(),
      "fn f(): I32 = x" + [] { std::string s; for (int i = 0; i < 100000; ++i) s += ".0"; return s; }(),
      "fn f(): I32 = " + [] { std::string s; for (int i = 0; i < 100000; ++i) s += "1; "; return s + "1"; }(),
  };
  for (const std::string& p : programs) {
    auto d = diagsOf(p);
    ASSERT_FALSE(d.empty());
    EXPECT_EQ(d[0].code, "E000");
    EXPECT_NE(d[0].message.find("nesting is too deep"), std::string::npos) << d[0].message;
  }
  // Up to the limit is fine: 190 parentheses, a block of 190 `let` lines, 190 `else if`s.
  EXPECT_EQ(firstCode("fn f(): I32 = " + std::string(190, '(') + "1" + std::string(190, ')')), "ok");
  std::string lets = "fn f(): I32 =\n";
  for (int i = 0; i < 190; ++i) lets += "  let x" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  EXPECT_EQ(firstCode(lets + "  x189"), "ok");
  std::string ifs = "fn f(n: I32): I32 = ";
  for (int i = 0; i < 190; ++i) ifs += "if n == " + std::to_string(i) + " then " + std::to_string(i) + " else ";
  EXPECT_EQ(firstCode(ifs + "0"), "ok");
  EXPECT_EQ(run("fn main(): I32 =\n" + [] { std::string s; for (int i = 0; i < 150; ++i) s += "  let x" + std::to_string(i) + " = " + std::to_string(i) + "\n"; return s; }() + "  x149"), "149");
}

TEST(EphapaxParser, RecoversAtTheNextDeclaration) {
  auto d = diagsOf("fn f(): I32 = (1\nfn g(): I32 = ]\nfn h(): I32 = 3\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].span.line, 2u);
  EXPECT_EQ(d[1].span.line, 2u);
}

TEST(EphapaxDiagnostics, RenderedWithCodeCaretAndHint) {
  std::string src = "fn example(): I32 =\n  let! x = 42 in\n  0\n";
  DiagSink d;
  check(src, d);
  EXPECT_EQ(renderAll(d, "leak.eph", src),
            "leak.eph:2:3: error[E001]: `let!` binding `x` is never consumed\n"
            "    let! x = 42 in\n"
            "    ^~~~\n"
            "  hint: use `x` exactly once, or bind it with `let` if it may be dropped\n");
}

TEST(EphapaxDiagnostics, IndependentErrorsAreAllReported) {
  auto d = diagsOf(
      "fn a(): I32 = true\n"
      "fn b(): I32 = nope\n"
      "fn c(): I32 = let! x = 1 in 0\n"
      "fn d(): I32 = let! y = 1 in y + y\n");
  std::vector<std::string> codes;
  for (auto& x : d) codes.push_back(x.code);
  EXPECT_EQ(codes, (std::vector<std::string>{"E101", "E103", "E001", "E002"}));
}

// Every code the frontend emits (a string literal "Ennn" in its sources) is in
// errorCodes() and has a section in docs/errors.md; and every listed code too.
TEST(EphapaxDiagnostics, EveryCodeIsDocumented) {
  std::string doc = readFile(fs::path(EPH_SOURCE_DIR) / "docs" / "errors.md");
  std::set<std::string> listed;
  for (const ErrorCodeInfo& c : errorCodes()) {
    listed.insert(std::string(c.code));
    EXPECT_NE(doc.find("## " + std::string(c.code) + " "), std::string::npos) << c.code << " is not in docs/errors.md";
  }
  std::regex code("\"(E[0-9]{3})\"");
  size_t found = 0;
  for (auto& f : fs::directory_iterator(fs::path(EPH_SOURCE_DIR) / "frontends" / "ephapax")) {
    std::string text = readFile(f.path());
    for (std::sregex_iterator it(text.begin(), text.end(), code), end; it != end; ++it) {
      ++found;
      EXPECT_TRUE(listed.count((*it)[1])) << (*it)[1] << " (in " << f.path().filename() << ") is not in errorCodes()";
    }
  }
  EXPECT_GT(found, 40u);
}

TEST(EphapaxLower, CodeGenerationLimitsHaveCodes) {
  EXPECT_EQ(run("fn main(): I32 = handle perform get() with | return(x) => x | get(k) => 1 end"), "error E200");
  EXPECT_EQ(run("fn mk(): [I32] = [1, 2]\nfn main(): I32 = 0"), "error E201");
  EXPECT_EQ(run("data L = Nil | Cons(I32, L)\nfn main(): I32 = match Nil of | Nil => 0 | Cons(_, _) => 1 end"), "error E203");
  EXPECT_EQ(run("extern \"C\" { fn mix(a: I32, b: F64): F64 }\nfn main(): F64 = mix(1, 2.0)"), "error E202");
  // Checking alone accepts them.
  EXPECT_EQ(firstCode("fn main(): I32 = handle perform get() with | return(x) => x | get(k) => 1 end"), "ok");
}

TEST(EphapaxLower, ExternFunctionsAndFfiCallTheProcess) {
  EXPECT_EQ(run("extern \"C\" { fn abs(x: I32): I32 }\nfn main(): I32 = abs(-7)"), "7");
  EXPECT_EQ(run("fn main(): I64 = __ffi(\"labs\", -5000000000)"), "5000000000");
  EXPECT_EQ(run("fn main(): F64 = __ffi(\"sqrt\", 2.25)"), "1.5");
  std::string missing = run("fn main(): I32 = __ffi(\"no_such_symbol_here\", 1)");
  EXPECT_NE(missing.find("trap extern symbol 'no_such_symbol_here' is not defined"), std::string::npos) << missing;
}

TEST(EphapaxLower, EveryOpCarriesItsEphLocation) {
  std::string path = (fs::path(EPH_SOURCE_DIR) / "tests" / "ephapax" / "run" / "strings.eph").string();
  eph::ir::Context ctx;
  DiagSink d;
  auto m = compile(ctx, readFile(path), path, d);
  ASSERT_TRUE(m) << renderAll(d, path, readFile(path));
  size_t ops = 0;
  for (auto& f : m->functions())
    f->walk([&](eph::ir::Op* op) {
      ++ops;
      EXPECT_TRUE(op->loc().known()) << op->name();
      ASSERT_TRUE(op->loc().file);
      EXPECT_EQ(*op->loc().file, path);
    });
  EXPECT_GT(ops, 20u);
}

TEST(EphapaxLower, SelfTailCallsBecomeLoops) {
  eph::ir::Context ctx;
  DiagSink d;
  auto m = compile(ctx, "fn sum(i: I32, acc: I32): I32 = if i == 0 then acc else sum(i - 1, acc + i)\n", "t.eph", d);
  ASSERT_TRUE(m);
  size_t whiles = 0, calls = 0;
  m->lookup("sum")->walk([&](eph::ir::Op* op) {
    whiles += op->name() == "while";
    calls += op->name() == "call";
  });
  EXPECT_EQ(whiles, 1u);
  EXPECT_EQ(calls, 0u);
  EXPECT_EQ(run("fn sum(i: I64, acc: I64): I64 = if i == 0 then acc else sum(i - 1, acc + i)\n"
                "fn main(): I64 = sum(100000, 0)"),
            "5000050000");
}

TEST(EphapaxLower, StringsAreFreedOnEveryPath) {
  // The interpreter's memory has no live buffers after a run that made,
  // concatenated, dropped and conditionally consumed strings.
  std::string src =
      "fn pick(c: Bool): I32 = region r { let s = String.new@r(\"abc\") in if c then String.len(s) else 1 }\n"
      "fn main(): I32 = region r {\n"
      "  let a = String.new@r(\"xy\") in let b = String.new@r(\"z\") in let u = String.new@r(\"unused\") in\n"
      "  String.len(String.concat(a, b)) + pick(true) + pick(false) }\n";
  eph::ir::Context ctx;
  DiagSink d;
  auto m = compile(ctx, src, "t.eph", d);
  ASSERT_TRUE(m) << renderAll(d, "t.eph", src);
  auto dev = eph::runtime::openDevice("interp");
  eph::interp::Interpreter in(*m);
  auto r = eph::runtime::runHost(**dev, in, *m->lookup("main"), {});
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(eph::interp::format((*r)[0]), "7");
  EXPECT_TRUE(in.memory().live().empty()) << in.memory().live().size() << " buffers leaked";
}

}  // namespace
