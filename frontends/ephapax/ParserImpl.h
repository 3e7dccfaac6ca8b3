// The Parser: the state and the methods of the Ephapax recursive-descent
// parser (Parser.h describes it). Internal to frontends/ephapax. Its methods
// are defined by concern in
//   Parser.cpp      parseProgram, tokens and errors, declarations
//   ParseTypes.cpp  type expressions and patterns
//   ParseExpr.cpp   expressions: sequences, operators, postfix, let, and one
//                   function per kind of primary
//   ParseStmt.cpp   blocks and statements, allocate_gpu, dispatch
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/ephapax/Lexer.h"
#include "frontends/ephapax/Parser.h"

namespace eph::ephapax::parsing {

class Parser {
 public:
  Parser(std::vector<Token> toks, DiagSink& diags) : toks_(std::move(toks)), diags_(diags) {}

  Program run();

 private:
  std::vector<Token> toks_;
  DiagSink& diags_;
  size_t pos_ = 0;
  bool panic_ = false;
  unsigned depth_ = 0;
  std::vector<std::string> pendingAnnotations_;
  int64_t pendingWorkgroupSize_[3] = {64, 1, 1};

  // ---- tokens (Parser.cpp) ------------------------------------------------------
  const Token& cur() const { return toks_[pos_]; }
  const Token& peekTok(size_t k = 1) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  bool at(Tok k) const { return cur().kind == k; }
  bool atIdent(std::string_view name) const { return at(Tok::Ident) && cur().text == name; }
  Token take() {
    Token t = cur();
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    take();
    return true;
  }

  std::string describe(const Token& t) const;

  void fail(const std::string& what, std::string hint = {});
  bool expect(Tok k, std::string_view context = {}, std::string hint = {});
  std::string expectIdent(const char* what, Span* span = nullptr);
  void syncToDecl();

  // Depth guard: true when nesting is still allowed (else reports once).
  struct DepthGuard {
    Parser& p;
    unsigned n;
    DepthGuard(Parser& p, unsigned n = 1) : p(p), n(n) { p.depth_ += n; }
    ~DepthGuard() { p.depth_ -= n; }
  };
  bool tooDeep();

  // ---- declarations (Parser.cpp) ------------------------------------------------
  void parseDecl(Program& p);
  void resetWorkgroupSize();

  // `(x[, y[, z]])`: positive integer literals; the missing ones are 1.
  static constexpr int64_t kMaxWorkgroup = 1024;
  void parseWorkgroupSize(int64_t (&out)[3], const char* context);
  std::string parsePath();
  std::vector<Param> parseParams(bool untypedOk = false);
  std::unique_ptr<FnDecl> parseFn(bool isExtern = false);
  std::vector<std::string> parseTypeParamList();
  std::unique_ptr<TypeDecl> parseData();
  std::unique_ptr<TypeDecl> parseTypeDecl(bool inExtern = false);
  void parseExtern(Program& p);
  std::unique_ptr<ConstDecl> parseConst();

  // ---- types (ParseTypes.cpp) ---------------------------------------------------
  TypeP typeNode(TypeExpr::Kind k, Span s) {
    auto t = std::make_unique<TypeExpr>();
    t->kind = k;
    t->span = s;
    return t;
  }

  TypeP parseType();
  TypeP parseSumType();
  TypeP parseTypeAtom();
  TypeP parseGpuType(const std::string& name, Span s);

  // ---- patterns (ParseTypes.cpp) ------------------------------------------------
  PatternP pat(Pattern::Kind k, Span s) {
    auto p = std::make_unique<Pattern>();
    p->kind = k;
    p->span = s;
    return p;
  }

  PatternP parsePattern();

  // ---- expressions (ParseExpr.cpp) ----------------------------------------------
  ExprP node(ExprKind k, Span s) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->span = s;
    return e;
  }
  ExprP dummy() { return node(ExprKind::Unit, cur().span); }

  ExprP parseExpr();

  bool startsExpr() const;

  ExprP parseExprNoSeq() { return parseBinary(0); }

  // ---- blocks and statements (GPU extension) (ParseStmt.cpp) --------------------
  // A block `{ s; s; e }` desugars into nested nodes whose last kid is the
  // rest of the block (Ast.h). The statements are collected in a loop and
  // nested afterwards, so a long block costs no parser recursion; a chain
  // longer than kMaxStatements (counting enclosing blocks) is an E000 error,
  // which bounds the recursion of the passes that walk the result.
  static constexpr unsigned kMaxStatements = 10000;
  unsigned statements_ = 0;

  bool atCompoundAssign() const;

  ExprP parseBlock(const char* context, std::string hint = {});
  ExprP parseStatements(Span open);
  ExprP parseBlockStatement();
  bool endsBlock() const {
    return pos_ > 0 && (toks_[pos_ - 1].kind == Tok::RBrace || toks_[pos_ - 1].kind == Tok::KwEnd);
  }

  static bool isStatement(const Expr& e);
  ExprP parseStatement();
  ExprP cloneExpr(const Expr& e, unsigned depth = 0);
  ExprP parseAllocGpu(Span s, bool onDevice);
  ExprP parseDispatch(Span s);

  // ---- operators and primaries (ParseExpr.cpp) ----------------------------------
  static int precOf(Tok k);
  static BinOp binOpOf(Tok k);
  ExprP parseBinary(int minPrec);
  ExprP parseUnary();
  std::vector<ExprP> parseArgs(const char* what);
  ExprP parsePostfix(ExprP e);
  ExprP parseLet();
  ExprP parsePrimary();
  ExprP parseIntLit(Span s);
  ExprP parseFloatLit(Span s);
  ExprP parseStringLit(Span s);
  ExprP parseBoolLit(Span s);
  ExprP parseName(Span s);
  ExprP parseParenthesized(Span s);
  ExprP parseRecordLit(Span s);
  ExprP parseListLit(Span s);
  ExprP parseLambda(Span s);
  ExprP parseIf(Span s);
  ExprP parseRegion(Span s);
  ExprP parseMatch(Span s);
  ExprP parseCase(Span s);
  ExprP parseHandle(Span s);
  ExprP parsePerform(Span s);
  ExprP parseInjection(Span s);
  ExprP parseUnaryBuiltin(Span s);
  ExprP parseStringOp(Span s);
};

}  // namespace eph::ephapax::parsing
