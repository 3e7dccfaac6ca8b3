// The Ephapax parser (Parser.h): parseProgram, and the Parser's token
// helpers, error reporting and recovery, and declarations.
// (Parser methods; see ParserImpl.h for the other parts.)
#include "frontends/ephapax/Parser.h"

#include "frontends/ephapax/ParserImpl.h"

namespace eph::ephapax {

namespace parsing {

Program Parser::run() {
  Program p;
  while (!at(Tok::End)) {
    size_t before = pos_;
    parseDecl(p);
    if (panic_) {
      panic_ = false;
      depth_ = 0;
      if (pos_ == before) ++pos_;
      syncToDecl();
    }
  }
  return p;
}

// ---- tokens ---------------------------------------------------------------
std::string Parser::describe(const Token& t) const {
  switch (t.kind) {
    case Tok::Ident: return "'" + t.text + "'";
    case Tok::Int: return "'" + t.text + "'";
    case Tok::String: return "a string";
    default: return tokName(t.kind);
  }
}

// Reports a syntax error at the current token (once per declaration).
void Parser::fail(const std::string& what, std::string hint) {
  if (panic_) return;
  panic_ = true;
  // A malformed token was already reported by the lexer.
  if (at(Tok::Error)) return;
  Span where = cur().span;
  if (at(Tok::End) && pos_ > 0) {  // just after the last token, not on an empty last line
    const Span& last = toks_[pos_ - 1].span;
    where = Span{last.line, last.col + last.len, 1, last.file};
  }
  diags_.error("E000", where, "expected " + what + ", got " + describe(cur()), std::move(hint));
}

bool Parser::expect(Tok k, std::string_view context, std::string hint) {
  if (panic_) return false;
  if (accept(k)) return true;
  fail(tokName(k) + (context.empty() ? "" : " " + std::string(context)), std::move(hint));
  return false;
}

std::string Parser::expectIdent(const char* what, Span* span) {
  if (panic_) return "_";
  if (at(Tok::Ident) || at(Tok::KwResume)) {
    Token t = take();
    if (span) *span = t.span;
    return t.kind == Tok::KwResume ? "resume" : t.text;
  }
  fail(what);
  return "_";
}

void Parser::syncToDecl() {
  while (!at(Tok::End)) {
    Tok k = cur().kind;
    if (k == Tok::KwFn || k == Tok::KwData || k == Tok::KwType || k == Tok::KwExtern ||
        k == Tok::KwModule || k == Tok::KwImport || k == Tok::KwPub || k == Tok::KwLinear)
      if (cur().span.col == 1) return;
    if ((k == Tok::KwLet || k == Tok::At || atIdent("affine") || atIdent("async")) && cur().span.col == 1) return;
    take();
  }
}

bool Parser::tooDeep() {
  if (depth_ <= kMaxDepth) return false;
  if (!panic_) {
    diags_.error("E000", cur().span, "nesting is too deep (more than " + std::to_string(kMaxDepth) + " levels)",
                 "split the expression with `let` bindings or helper functions");
    panic_ = true;
  }
  return true;
}

// ---- declarations ---------------------------------------------------------
void Parser::parseDecl(Program& p) {
  if (at(Tok::At)) {
    take();
    std::string name = expectIdent("an annotation name after '@'");
    if (name == "workgroup_size") {
      parseWorkgroupSize(pendingWorkgroupSize_, "after '@workgroup_size'");
      pendingAnnotations_.push_back(name);
      return;
    }
    if (accept(Tok::LParen)) {  // annotation arguments: skipped, balanced
      int level = 1;
      while (level > 0 && !at(Tok::End)) {
        if (at(Tok::LParen)) ++level;
        if (at(Tok::RParen)) --level;
        take();
      }
    }
    pendingAnnotations_.push_back(name);
    return;
  }
  accept(Tok::KwPub);
  if (atIdent("async") && peekTok().kind == Tok::KwFn) {
    take();
    p.fns.push_back(parseFn());
    p.fns.back()->isAsync = true;
    pendingAnnotations_.clear();
    resetWorkgroupSize();
    return;
  }
  switch (cur().kind) {
    case Tok::KwFn: p.fns.push_back(parseFn()); break;
    case Tok::KwData: p.types.push_back(parseData()); break;
    case Tok::KwType:
    case Tok::KwLinear: p.types.push_back(parseTypeDecl()); break;
    case Tok::KwExtern: parseExtern(p); break;
    case Tok::KwLet: p.consts.push_back(parseConst()); break;
    case Tok::KwModule: {
      take();
      p.moduleName = parsePath();
      break;
    }
    case Tok::KwImport: {
      take();
      std::string m = parsePath();
      p.imports.push_back(m);
      if (accept(Tok::LParen)) {
        while (!panic_ && !at(Tok::RParen)) {
          expectIdent("a name to import");
          if (!accept(Tok::Comma)) break;
        }
        expect(Tok::RParen, "after the imported names");
      }
      break;
    }
    default:
      if (atIdent("affine")) {
        p.types.push_back(parseTypeDecl());
        break;
      }
      fail("a declaration (fn, data, type, extern, let, module, import)");
  }
  pendingAnnotations_.clear();
  resetWorkgroupSize();
}

void Parser::resetWorkgroupSize() {
  pendingWorkgroupSize_[0] = 64;
  pendingWorkgroupSize_[1] = pendingWorkgroupSize_[2] = 1;
}

void Parser::parseWorkgroupSize(int64_t (&out)[3], const char* context) {
  expect(Tok::LParen, context, "write the workgroup shape as `(x, y, z)`, e.g. `(64)` or `(8, 8)`");
  int64_t dims[3] = {1, 1, 1};
  Span spans[3];
  Span open = toks_[pos_ > 0 ? pos_ - 1 : 0].span;
  int n = 0;
  while (!panic_ && !at(Tok::RParen)) {
    if (n == 3) {
      fail("')' after at most 3 workgroup dimensions");
      return;
    }
    if (!at(Tok::Int) || cur().ival <= 0 || cur().ival > 65535) {
      fail("a positive integer workgroup dimension");
      return;
    }
    spans[n] = cur().span;
    dims[n++] = take().ival;
    if (!accept(Tok::Comma)) break;
  }
  if (!panic_ && n == 0) fail("a workgroup dimension");
  Span close = cur().span;
  expect(Tok::RParen, "after the workgroup dimensions");
  if (panic_) return;
  // What every target accepts (the lowering relies on it): E201 here, at the
  // dimension, so `check` reports it.
  bool ok = true;
  for (int i = 0; i < n; ++i)
    if (dims[i] > kMaxWorkgroup) {
      diags_.error("E201", spans[i], "a workgroup dimension must be 1.." + std::to_string(kMaxWorkgroup) + ", got " + std::to_string(dims[i]),
                   "use a smaller workgroup and a larger grid");
      ok = false;
    }
  if (ok && dims[0] * dims[1] * dims[2] > kMaxWorkgroup) {
    Span all = open;
    if (close.line == open.line) all.len = close.col + 1 - open.col;
    diags_.error("E201", all, "a workgroup has at most " + std::to_string(kMaxWorkgroup) + " invocations, got " +
                                  std::to_string(dims[0] * dims[1] * dims[2]),
                 "use a smaller workgroup and a larger grid");
  }
  for (int i = 0; i < 3; ++i) out[i] = dims[i];
}

// a/b/c or A.B.C: returns the last component.
std::string Parser::parsePath() {
  std::string last = expectIdent("a module name");
  while (at(Tok::Slash) || at(Tok::Dot)) {
    take();
    last = expectIdent("a module name");
  }
  return last;
}

// `untypedOk`: a @gpu function's parameters may leave out their types
// (inferred from the dispatch sites).
std::vector<Param> Parser::parseParams(bool untypedOk) {
  std::vector<Param> ps;
  expect(Tok::LParen, "before the parameters");
  while (!panic_ && !at(Tok::RParen)) {
    Param prm;
    prm.name = expectIdent("a parameter name", &prm.span);
    if (untypedOk && (at(Tok::Comma) || at(Tok::RParen))) {
      ps.push_back(std::move(prm));
      if (!accept(Tok::Comma)) break;
      continue;
    }
    expect(Tok::Colon, "after the parameter name", "every parameter needs a type: `x: I32`");
    prm.type = parseType();
    ps.push_back(std::move(prm));
    if (!accept(Tok::Comma)) break;
  }
  expect(Tok::RParen, "after the parameters");
  return ps;
}

std::unique_ptr<FnDecl> Parser::parseFn(bool isExtern) {
  auto f = std::make_unique<FnDecl>();
  take();  // fn
  f->annotations = pendingAnnotations_;
  f->name = expectIdent("a function name", &f->span);
  if (accept(Tok::Lt)) {
    while (!panic_ && !at(Tok::Gt)) {
      f->typeParams.push_back(expectIdent("a type parameter"));
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::Gt, "after the type parameters");
  }
  bool gpu = std::find(f->annotations.begin(), f->annotations.end(), "gpu") != f->annotations.end();
  for (int i = 0; i < 3; ++i) f->workgroupSize[i] = pendingWorkgroupSize_[i];
  f->params = parseParams(gpu && !isExtern);
  if (accept(Tok::Colon) || accept(Tok::Arrow)) f->ret = parseType();
  f->isExtern = isExtern;
  if (isExtern) return f;
  if (at(Tok::LBrace)) {  // fn f(..) -> T { statements; value }
    f->braceBody = true;
    f->body = parseBlock("to open the function body");
    return f;
  }
  expect(Tok::Eq, "before the function body", "write `fn f(): T = expr` or `fn f() -> T { ... }`");
  f->body = parseExpr();
  return f;
}

std::vector<std::string> Parser::parseTypeParamList() {
  std::vector<std::string> ps;
  if (accept(Tok::LParen)) {
    while (!panic_ && !at(Tok::RParen)) {
      ps.push_back(expectIdent("a type parameter"));
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RParen, "after the type parameters");
  } else if (accept(Tok::Lt)) {
    while (!panic_ && !at(Tok::Gt)) {
      ps.push_back(expectIdent("a type parameter"));
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::Gt, "after the type parameters");
  }
  return ps;
}

std::unique_ptr<TypeDecl> Parser::parseData() {
  auto d = std::make_unique<TypeDecl>();
  d->kind = TypeDecl::Data;
  take();
  d->name = expectIdent("a data type name", &d->span);
  d->params = parseTypeParamList();
  expect(Tok::Eq, "after the data type name");
  accept(Tok::Bar);
  do {
    CtorDecl c;
    c.name = expectIdent("a constructor name", &c.span);
    if (accept(Tok::LParen)) {
      while (!panic_ && !at(Tok::RParen)) {
        c.fields.push_back(parseType());
        if (!accept(Tok::Comma)) break;
      }
      expect(Tok::RParen, "after the constructor's fields");
    }
    d->ctors.push_back(std::move(c));
  } while (!panic_ && accept(Tok::Bar));
  return d;
}

std::unique_ptr<TypeDecl> Parser::parseTypeDecl(bool inExtern) {
  auto d = std::make_unique<TypeDecl>();
  if (accept(Tok::KwLinear)) d->linear = true;
  else if (atIdent("affine")) take(), d->affine = true;
  expect(Tok::KwType);
  d->name = expectIdent("a type name", &d->span);
  d->params = parseTypeParamList();
  if (inExtern && !at(Tok::Eq)) {
    d->kind = TypeDecl::Extern;
    return d;
  }
  expect(Tok::Eq, "after the type name");
  if (accept(Tok::LBrace)) {
    d->kind = TypeDecl::Record;
    while (!panic_ && !at(Tok::RBrace)) {
      d->fieldNames.push_back(expectIdent("a field name"));
      expect(Tok::Colon, "after the field name");
      d->fieldTypes.push_back(parseType());
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RBrace, "after the record fields");
  } else {
    d->kind = TypeDecl::Alias;
    d->alias = parseType();
  }
  return d;
}

void Parser::parseExtern(Program& p) {
  take();
  std::string abi;
  if (at(Tok::String)) abi = take().text;
  else fail("the ABI string after 'extern' (e.g. \"C\")");
  expect(Tok::LBrace, "after the extern ABI");
  while (!panic_ && !at(Tok::RBrace) && !at(Tok::End)) {
    if (at(Tok::KwFn)) {
      auto f = parseFn(true);
      f->abi = abi;
      p.fns.push_back(std::move(f));
    } else if (at(Tok::KwType) || at(Tok::KwLinear) || atIdent("affine")) {
      p.types.push_back(parseTypeDecl(true));
    } else {
      fail("'fn' or 'type' in an extern block");
    }
    accept(Tok::Semi);
  }
  expect(Tok::RBrace, "to close the extern block");
}

std::unique_ptr<ConstDecl> Parser::parseConst() {
  auto c = std::make_unique<ConstDecl>();
  take();
  c->name = expectIdent("a constant name", &c->span);
  if (accept(Tok::Colon)) c->annot = parseType();
  expect(Tok::Eq, "after the constant name");
  c->value = parseExpr();
  return c;
}

}  // namespace parsing

Program parseProgram(std::string_view src, DiagSink& diags, uint16_t file) {
  std::vector<Token> toks = lex(src, diags, file);
  return parsing::Parser(std::move(toks), diags).run();
}

}  // namespace eph::ephapax
