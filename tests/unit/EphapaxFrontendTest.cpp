// Ephapax frontend units: tokens, parsing limits, diagnostics, the error
// index, code-generation errors (E2xx), the FFI, locations in lowered IR and
// tail calls as loops.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "frontends/ephapax/Lexer.h"
#include "frontends/ephapax/Parser.h"
#include "frontends/ephapax/Stdlib.h"
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
  EXPECT_EQ(d[0].loc.line, 2u);
  EXPECT_EQ(d[1].loc.line, 2u);
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

// That every code is documented: ErrorCodesTest.

TEST(EphapaxLower, CodeGenerationLimitsHaveCodes) {
  EXPECT_EQ(run("fn main(): I32 = handle perform get() with | return(x) => x | get(k) => 1 end"), "error E200");
  EXPECT_EQ(run("fn main(): I32 = region r { let xs = [String.new@r(\"a\")] in 0 }"), "error E201");
  EXPECT_EQ(run("data L = Nil | Cons(String, L)\nfn main(): I32 = match Nil of | Nil => 0 | Cons(_, _) => 1 end"), "error E203");
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


// ---- the GPU extension's front half (docs/ephapax-gpu.md) ---------------------------

// The nodes of a block's chain, following the `rest` kid (Ast.h).
std::vector<ExprKind> chainKinds(const Expr* e) {
  std::vector<ExprKind> out;
  while (e) {
    out.push_back(e->kind);
    bool link = e->kind == ExprKind::Let || e->kind == ExprKind::Seq || e->kind == ExprKind::VarDecl ||
                e->kind == ExprKind::Workgroup || e->kind == ExprKind::Region;
    e = link && !e->kids.empty() ? e->kids.back().get() : nullptr;
  }
  return out;
}

TEST(EphapaxGpuParser, FunctionsAnnotationsAndStatementShapes) {
  DiagSink d;
  Program p = parseProgram(
      "@gpu\n@workgroup_size(8, 4)\nfn k(a, b: GPUBuffer<F32>) {\n"
      "  workgroup t: [F32; 32];\n  var x = 0;\n  x += 2;\n  b[gid] *= 2.0;\n"
      "  for i in 0..10 { x = x + i; }\n  while x < 100 { x = x * 2; }\n"
      "  if x > 3 { barrier(); } else if x < 1 { x = 1; } else { x = 2; }\n}\n"
      "async fn h(f: Future<I32>, m: mat3, v: vec2) -> I32 { f.await }\n"
      "fn r(n: I32) {\n  region gpu:\n  let! b = allocate_gpu@gpu<F32>(n);\n"
      "  dispatch k(1.0, &mut b) over (4, 4);\n  dispatch over n workgroup (32, 2) { b[gid] = 0.0; }\n"
      "  kernel over n { b[gid] = 1.0; }\n  free_gpu(b);\n}\n"
      "fn g(): I32 { 1 }\nfn u(x: GPUBuffer<I32>!, y: GPUBufferAffine<U32>) { }\n",
      d);
  ASSERT_TRUE(d.empty()) << d.all()[0].message;
  ASSERT_EQ(p.fns.size(), 5u);
  const FnDecl& k = *p.fns[0];
  EXPECT_TRUE(k.braceBody);
  EXPECT_EQ(k.workgroupSize[0], 8);
  EXPECT_EQ(k.workgroupSize[1], 4);
  EXPECT_EQ(k.workgroupSize[2], 1);
  EXPECT_EQ(k.params[0].type, nullptr);  // untyped: inferred from dispatch sites
  ASSERT_TRUE(k.params[1].type);
  EXPECT_EQ(k.params[1].type->kind, TypeExpr::Gpu);
  EXPECT_FALSE(k.params[1].type->bang);
  EXPECT_EQ(chainKinds(k.body.get()),
            (std::vector<ExprKind>{ExprKind::Workgroup, ExprKind::VarDecl, ExprKind::Seq, ExprKind::Seq, ExprKind::Seq,
                                   ExprKind::Seq, ExprKind::If}));
  const Expr& wg = *k.body;
  EXPECT_EQ(wg.name, "t");
  EXPECT_EQ(wg.ival, 32);
  const Expr& compound = *wg.kids[0]->kids[1]->kids[0];  // x += 2
  ASSERT_EQ(compound.kind, ExprKind::Assign);
  EXPECT_EQ(compound.kids[0]->kind, ExprKind::Binary);
  EXPECT_EQ(compound.kids[0]->bop, BinOp::Add);
  const Expr& store = *wg.kids[0]->kids[1]->kids[1]->kids[0];  // b[gid] *= 2.0
  ASSERT_EQ(store.kind, ExprKind::IndexAssign);
  EXPECT_EQ(store.kids[2]->bop, BinOp::Mul);
  EXPECT_EQ(store.kids[2]->kids[0]->kind, ExprKind::Index);
  const Expr& loop = *wg.kids[0]->kids[1]->kids[1]->kids[1]->kids[0];
  ASSERT_EQ(loop.kind, ExprKind::For);
  EXPECT_EQ(loop.name, "i");
  // The else-if chain: If(.., then, If(.., then, else)).
  const Expr* last = wg.kids[0]->kids[1]->kids[1]->kids[1]->kids[1]->kids[1].get();
  ASSERT_EQ(last->kind, ExprKind::If);
  EXPECT_EQ(last->kids[2]->kind, ExprKind::If);

  const FnDecl& h = *p.fns[1];
  EXPECT_TRUE(h.isAsync);
  EXPECT_EQ(h.params[0].type->kind, TypeExpr::Future);
  EXPECT_EQ(h.params[1].type->kind, TypeExpr::Mat);
  EXPECT_EQ(h.params[2].type->size, 2);
  EXPECT_EQ(h.body->kind, ExprKind::Await);

  const FnDecl& r = *p.fns[2];
  // `free_gpu(b);` ends the block in a statement: its value is ().
  EXPECT_EQ(chainKinds(r.body.get()), (std::vector<ExprKind>{ExprKind::Region, ExprKind::Let, ExprKind::Seq, ExprKind::Seq,
                                                             ExprKind::Seq, ExprKind::Seq, ExprKind::Unit}));
  const Expr& let = *r.body->kids[0];
  EXPECT_EQ(let.kids[0]->kind, ExprKind::AllocGpu);
  EXPECT_EQ(let.kids[0]->name, "gpu");
  ASSERT_TRUE(let.kids[0]->annot);
  const Expr& named = *let.kids[1]->kids[0];
  EXPECT_EQ(named.kind, ExprKind::Dispatch);
  EXPECT_EQ(named.name, "k");
  EXPECT_EQ(named.grid.size(), 2u);
  EXPECT_EQ(named.kids.size(), 2u);
  const Expr& inl = *let.kids[1]->kids[1]->kids[0];
  EXPECT_TRUE(inl.name.empty());
  int64_t wgs[3];
  dispatchWorkgroupSize(inl, wgs);
  EXPECT_EQ(wgs[0], 32);
  EXPECT_EQ(wgs[1], 2);
  EXPECT_EQ(wgs[2], 1);
  EXPECT_EQ(inl.workgroupSize[0], 32);  // the field as written, not packed into ival
  EXPECT_EQ(inl.workgroupSize[1], 2);
  EXPECT_EQ(inl.ival, 0);
  const Expr& kern = *let.kids[1]->kids[1]->kids[1]->kids[0];
  EXPECT_EQ(kern.kind, ExprKind::Dispatch);
  dispatchWorkgroupSize(kern, wgs);
  EXPECT_EQ(wgs[0], 64);
  EXPECT_EQ(kern.workgroupSize[0], 0);  // none written
  EXPECT_TRUE(p.fns[3]->braceBody);
  EXPECT_TRUE(p.fns[4]->params[0].type->bang);
  EXPECT_EQ(p.fns[4]->params[1].type->name, "GPUBufferAffine");
}

TEST(EphapaxGpuParser, CoreSyntaxRulesStay) {
  EXPECT_EQ(firstCode("fn f(): I32 = { 1 }"), "E000");       // braces after `=` are a record
  EXPECT_EQ(firstCode("fn f(x) -> I32 { 1 }"), "E000");      // untyped parameters only on @gpu functions
  EXPECT_EQ(firstCode("fn f(): I32 { let x = 1; x = 2 + }"), "E000");
  EXPECT_EQ(firstCode("@workgroup_size(0)\n@gpu fn k(b: GPUBuffer<I32>) { }"), "E000");
  EXPECT_EQ(firstCode("fn f() -> I32 { 1 }\nfn g(): I32 = f()"), "ok");
}

TEST(EphapaxGpuParser, LongBlocksAreIterativeAndBounded) {
  std::string ok = "fn f() -> I32 {\n";
  for (int i = 0; i < 10000; ++i) ok += "  let x" + std::to_string(i) + " = " + std::to_string(i) + ";\n";
  EXPECT_EQ(firstCode(ok + "  x9999\n}"), "ok");
  std::string tooLong = "fn f() -> I32 {\n";
  for (int i = 0; i < 100000; ++i) tooLong += "  x;\n";
  auto d = diagsOf(tooLong + "  1\n}");
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].code, "E000");
  EXPECT_NE(d[0].message.find("statements"), std::string::npos) << d[0].message;
  // Nested blocks count towards the parser's depth limit.
  std::string nested = "fn f() {\n";
  for (int i = 0; i < 100000; ++i) nested += "if true { ";
  EXPECT_EQ(firstCode(nested), "E000");
}

TEST(EphapaxGpuChecker, AddOneIsAKernel) {
  DiagSink d;
  auto c = check("@gpu\nfn add_one(buffer: GPUBuffer<i32>) {\n    buffer[gid] = buffer[gid] + 1;\n}\n", d);
  ASSERT_TRUE(c) << renderAll(d, "t.eph", "");
  EXPECT_TRUE(d.empty());
  FnDecl& f = *c->prog.fns[0];
  EXPECT_EQ(f.gpuRole, FnDecl::Kernel);
  EXPECT_EQ(show(f.type), "GPUBuffer<I32> -> ()");
  const Expr& store = *f.body;
  ASSERT_EQ(store.kind, ExprKind::IndexAssign);
  EXPECT_TRUE(store.kernelCode);
  EXPECT_EQ(store.kids[1]->builtin, Expr::Gid);
  EXPECT_EQ(show(store.kids[1]->ty), "I32");
  EXPECT_TRUE(store.kids[2]->kids[0]->kernelCode);
}

TEST(EphapaxGpuChecker, LeakOfAnOwnedBufferIsE001AtTheLetBang) {
  std::string src = "fn test_leak() {\n    let! buffer = allocate_gpu(1024);\n}\n";
  DiagSink d;
  check(src, d);
  EXPECT_EQ(renderAll(d, "leak.eph", src),
            "leak.eph:2:5: error[E001]: `let!` binding `buffer` is never consumed\n"
            "      let! buffer = allocate_gpu(1024);\n"
            "      ^~~~\n"
            "  hint: consume `buffer` exactly once: `free_gpu(buffer)`, `d2h(buffer)`, or pass it on (to a function, or a "
            "dispatch that takes it); `--mode affine` lets the compiler free it\n");
  // --mode affine accepts it; the binding may be dropped (the lowering frees it).
  DiagSink a;
  CheckOptions affine;
  affine.affineMode = true;
  auto c = check(src, a, affine);
  ASSERT_TRUE(c);
  EXPECT_TRUE(a.empty()) << renderAll(a, "leak.eph", src);
  EXPECT_TRUE(c->affineMode);
  const Expr& let = *c->prog.fns[0]->body;
  ASSERT_TRUE(let.pat->binding);
  EXPECT_EQ(usageOf(*c, *let.pat->binding), Usage::AtMostOnce);
  EXPECT_EQ(show(let.pat->binding->ty), "GPUBuffer<I32>!");  // the element defaults to I32
  // Affine buffers are droppable in both modes; linear ones other than GPU buffers stay linear.
  EXPECT_EQ(firstCode("fn f(n: I32) { let b: GPUBufferAffine<I32> = g(n); }\nfn g(n: I32) -> GPUBufferAffine<I32> { g(n) }"), "ok");
  DiagSink s;
  check("fn f() { let! s = String.new@_(\"x\"); }", s, affine);
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.all()[0].code, "E001");
}

TEST(EphapaxGpuChecker, RegionBuffersAreConsumedBeforeTheRegionEnds) {
  const std::string process = "fn process(b: GPUBuffer<I32>!) { free_gpu(b) }\n";
  EXPECT_EQ(firstCode(process + "fn f() {\n  region gpu:\n    let! buffer = allocate_gpu@gpu(1024);\n    process(buffer);\n}\n"),
            "ok");
  auto d = diagsOf(process + "fn f() {\n  region gpu:\n    let! buffer = allocate_gpu@gpu(1024);\n    ()\n}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].code, "E004");
  EXPECT_EQ(d[0].loc.line, 4u);
  EXPECT_EQ(d[0].loc.col, 5u);
  EXPECT_EQ(d[0].message, "GPU buffer `buffer` is not consumed before region `gpu` ends");
  // Nested: a buffer of the outer region made in the inner one.
  d = diagsOf("fn f() {\n  region outer {\n    region inner {\n      let! b = allocate_gpu@outer(4);\n      ()\n    }\n  }\n}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].code, "E004");
  EXPECT_EQ(d[0].loc.line, 4u);
  // Escaping its region, and a region that is not active.
  EXPECT_EQ(firstCode("fn f() -> I32 {\n  let b = region r { let! x = allocate_gpu@r(4); x };\n  free_gpu(b);\n  0\n}\n"), "E003");
  EXPECT_EQ(firstCode("fn f() { let! b = allocate_gpu@nowhere(4); free_gpu(b); }"), "E006");
}

TEST(EphapaxGpuChecker, OwnershipOfBuffersLoopsAndFutures) {
  // A loop body may not consume an outer buffer; `e;` may not drop one.
  EXPECT_EQ(firstCode("fn f(n: I32) {\n  let! b = allocate_gpu<I32>(4);\n  for i in 0..n { free_gpu(b); }\n}"), "E002");
  EXPECT_EQ(firstCode("fn f() { allocate_gpu<I32>(4); }"), "E001");
  // An inline kernel borrows the buffers it mentions: not after they are consumed.
  EXPECT_EQ(firstCode("fn f(n: I32) {\n  let! b = allocate_gpu<I32>(n);\n  free_gpu(b);\n  dispatch over n { b[gid] = 1; }\n}"), "E002");
  EXPECT_EQ(firstCode("fn f(n: I32) {\n  let! b = allocate_gpu<I32>(n);\n  dispatch over n { b[gid] = 1; }\n  free_gpu(b);\n}"), "ok");
  // Dispatching an owned buffer plainly consumes it.
  const std::string k = "@gpu\nfn k(b: GPUBuffer<I32>) { b[gid] = 1; }\n";
  EXPECT_EQ(firstCode(k + "fn f() {\n  let! b = allocate_gpu(4);\n  dispatch k(b) over 4;\n}"), "ok");
  EXPECT_EQ(firstCode(k + "fn f() {\n  let! b = allocate_gpu(4);\n  dispatch k(b) over 4;\n  free_gpu(b);\n}"), "E002");
  // Futures must be awaited.
  EXPECT_EQ(firstCode("async fn a() -> I32 { 1 }\nfn f() { let x = a(); }"), "E001");
  EXPECT_EQ(firstCode("async fn a() -> I32 { 1 }\nfn f() -> I32 { let x = a(); x.await }"), "ok");
}

TEST(EphapaxGpuChecker, DispatchResolvesKernelsAndInstances) {
  DiagSink d;
  auto c = check(
      "@gpu\nfn copy_into(src, dst) { dst[gid] = src[gid]; }\n"
      "fn main() -> I32 {\n  let! a = allocate_gpu<F32>(3);\n  let! b = allocate_gpu<F32>(3);\n"
      "  dispatch copy_into(&a, &mut b) over 3;\n  free_gpu(a);\n  free_gpu(b);\n  0\n}\n",
      d);
  ASSERT_TRUE(c) << renderAll(d, "t.eph", "");
  ASSERT_TRUE(d.empty());
  FnDecl& k = *c->prog.fns[0];
  EXPECT_EQ(k.gpuRole, FnDecl::Kernel);
  ASSERT_EQ(k.typeParamTys.size(), 1u);
  EXPECT_EQ(show(k.paramTys[0]), "GPUBuffer<T0>");
  const Expr* e = c->prog.fns[1]->body.get();
  while (e && e->kind != ExprKind::Dispatch)
    e = e->kind == ExprKind::Seq && e->kids[0]->kind == ExprKind::Dispatch ? e->kids[0].get()
        : e->kids.empty()                                                  ? nullptr
                                                                           : e->kids.back().get();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->refKind, Expr::Fn);
  EXPECT_EQ(e->global, 0);
  ASSERT_EQ(e->inst.size(), 1u);
  EXPECT_EQ(show(e->inst[0]), "F32");
  // A launcher (owned buffer or result) is not dispatched; it is called.
  EXPECT_EQ(firstCode("@gpu\nfn l(b: GPUBuffer<I32>!) -> GPUBuffer<I32>! { b }\n"
                      "fn f() { let! b = allocate_gpu(4); dispatch l(&b) over 4; free_gpu(b); }"),
            "E217");
}

TEST(EphapaxGpuChecker, BuiltinsAndVectorTypes) {
  DiagSink d;
  auto c = check(
      "@gpu\nfn t(p: GPUBuffer<vec4>, m: mat4, out: GPUBuffer<F32>) {\n"
      "  let v = m * p[gid];\n  let w = vec3(v.x, v.y, v.z) * 2.0;\n"
      "  out[gid] = dot(w, w) + sqrt(out[gid]) + f32(i32(v.w)) + length(normalize(w));\n"
      "  let old = atomic_add(out, 0, 1.0);\n  barrier();\n}\n",
      d);
  ASSERT_TRUE(c) << renderAll(d, "t.eph", "");
  EXPECT_TRUE(d.empty());
  const Expr& let = *c->prog.fns[0]->body;
  EXPECT_EQ(show(let.kids[0]->ty), "vec4");
  const Expr& w = *let.kids[1];
  EXPECT_EQ(show(w.kids[0]->ty), "vec3");
  EXPECT_EQ(w.kids[0]->kids[0]->builtin, Expr::MakeVec);
  EXPECT_EQ(firstCode("fn f(m: mat3, v: vec4) -> vec4 { m * v }"), "E101");
  EXPECT_EQ(firstCode("@gpu\nfn k(b: GPUBuffer<F32>) { b[gid] = 1.5; }"), "ok");  // a float literal takes F32
  EXPECT_EQ(firstCode("@gpu\nfn k(b: GPUBuffer<I32>) { b[gid] = len(b) + group + lid + global_id(1); }"), "ok");
}

TEST(EphapaxGpuChecker, TypeParametersOfGpuFunctionsArePlainValues) {
  // A `v: T` crosses into an inline kernel and is used twice on the host.
  const std::string fill =
      "@gpu\nfn fill<T>(n: I32, v: T) -> GPUBuffer<T>! {\n"
      "  let! out = allocate_gpu<T>(n);\n  dispatch over n { out[gid] = v; }\n  let w = (v, v);\n  out\n}\n";
  EXPECT_EQ(firstCode(fill), "ok");
  EXPECT_EQ(run(fill + "fn main() -> I32 { let! b = fill(5, 9); let xs = d2h(b); xs[4] }"), "9");
  // Outside @gpu functions a T value is still used at most once.
  EXPECT_EQ(firstCode("fn two<T>(v: T) -> (T, T) { (v, v) }"), "E002");
  // ... and a @gpu function's T may not stand for an owned buffer.
  auto d = diagsOf("@gpu\nfn two<T>(n: I32, v: T) -> (T, T) { (v, v) }\n"
                   "fn f() { let! b = allocate_gpu<I32>(4);\n  let! (x, y) = two(1, b); free_gpu(x); free_gpu(y); }");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].code, "E101");
  EXPECT_EQ(d[0].loc.line, 4u);
  EXPECT_EQ(d[0].loc.col, 17u);
}

TEST(EphapaxGpuChecker, BorrowsOfOwnedBuffersAreViewArguments) {
  const std::string fns =
      "@gpu\nfn count<T>(xs: GPUBuffer<T>) -> I32 { len(xs) }\n"
      "fn first(xs: GPUBuffer<I32>) -> I32 { let! t = allocate_gpu<I32>(1);\n"
      "  dispatch over 1 { t[0] = xs[0]; }\n  let r = d2h(t);\n  r[0] }\n";
  EXPECT_EQ(run(fns + "fn main() -> I32 { let! b = h2d([7, 8, 9]);\n"
                      "  let n = count(&b) * 10 + first(&mut b);\n  free_gpu(b);\n  n }"),
            "37");
  // Passed plainly, the owned buffer is consumed by the call.
  auto d = diagsOf(fns + "fn f() { let! b = h2d([1]);\n  let n = first(b);\n  free_gpu(b); }");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].code, "E002");
  EXPECT_EQ(d[0].loc.line, 9u) << d[0].message;
  // The element types must agree; a view is not an owned buffer.
  EXPECT_EQ(firstCode(fns + "fn f() { let! b = h2d([1.5]); let n = first(&b); free_gpu(b); }"), "E101");
  EXPECT_EQ(firstCode("fn own(b: GPUBuffer<I32>!) { free_gpu(b) }\n"
                      "fn f(v: GPUBuffer<I32>) { own(v) }"),
            "E101");
}

TEST(EphapaxGpuChecker, ArrayBuildsAListFromAFunction) {
  DiagSink d;
  auto c = check("fn half(i: I32) -> F32 { f32(i) * 0.5 }\n"
                 "fn f(k: I32) -> I32 { let xs = array(4, fn(i: I32) -> i * k); let ys = array(k, half); xs[3] }\n",
                 d);
  ASSERT_TRUE(c) << renderAll(d, "t.eph", "");
  EXPECT_TRUE(d.empty());
  const Expr& let = *c->prog.fns[1]->body;
  ASSERT_EQ(let.kind, ExprKind::Let);
  EXPECT_EQ(let.kids[0]->builtin, Expr::Array);
  EXPECT_EQ(show(let.kids[0]->ty), "[I32]");
  EXPECT_EQ(show(let.kids[1]->kids[0]->ty), "[F32]");
  EXPECT_EQ(firstCode("fn f() -> I32 { let xs = array(2.5, fn(i: I32) -> i); 0 }"), "E101");  // the length is I32
  EXPECT_EQ(firstCode("fn f() -> I32 { let xs = array(2, fn(s: Bool) -> s); 0 }"), "E101");  // f takes I32
  EXPECT_EQ(firstCode("fn f() -> I32 { let xs = array(2); 0 }"), "E106");
  // A capturing lambda may not take a linear value (E009, as anywhere).
  EXPECT_EQ(firstCode("fn f() -> I32 { let! s = String.new@_(\"a\");\n"
                      "  let xs = array(2, fn(i: I32) -> String.len(&s)); drop(s); 0 }"),
            "E009");
  // A local named `array` shadows the builtin.
  EXPECT_EQ(firstCode("fn f(array: fn(I32) -> I32) -> I32 { array(2) }"), "ok");
}

TEST(EphapaxDiagnostics, ErrorsInAStandardLibraryModuleNameTheModule) {
  // A type error inside a merged module is shown with the module's file name,
  // line and source line, not the program's.
  const std::vector<StdlibModule> modules = {{"mini", "-- a module\nfn bad() -> I32 { true }\n"}};
  const std::string src = "import mini\nfn main() -> I32 { 1 }\n";
  DiagSink d;
  auto c = std::make_unique<Checked>();
  c->prog = parseProgram(src, d);
  ASSERT_TRUE(mergeStdlibImports(c->prog, d, modules));
  EXPECT_FALSE(typeCheck(*c, d));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.all()[0].loc.line, 2u);
  ASSERT_TRUE(d.all()[0].loc.file);
  EXPECT_EQ(*d.all()[0].loc.file, "mini.eph");
  ASSERT_TRUE(d.source(1));
  EXPECT_EQ(d.source(1)->name, "mini.eph");
  std::string out = renderAll(d, "prog.eph", src);
  EXPECT_EQ(out.rfind("mini.eph:2:19: error[E101]: ", 0), 0u) << out;
  EXPECT_NE(out.find("  fn bad() -> I32 { true }\n                    ^~~~"), std::string::npos) << out;
  // The program's own diagnostics keep its name; ids are per name.
  d.error("E103", Span{2, 1, 2}, "x");
  EXPECT_NE(renderAll(d, "prog.eph", src).find("prog.eph:2:1: error[E103]: x\n  fn main() -> I32 { 1 }\n"), std::string::npos);
  EXPECT_EQ(d.addSource("mini.eph", "other"), 1u);
  EXPECT_EQ(d.addSource("more.eph", "other"), 2u);
  EXPECT_EQ(d.source(3), nullptr);
}

}  // namespace
