// The Ephapax parser: expressions: sequences, binary and unary operators,
// calls and other postfixes, let, and parsePrimary with one function per
// kind of primary.
// (Parser methods; see ParserImpl.h for the other parts.)
#include "frontends/ephapax/ParserImpl.h"

namespace eph::ephapax::parsing {

// ---- expressions -----------------------------------------------------------
// expr := exprNoSeq (';' exprNoSeq)*   (right-nested Seq)
//
// Depth: every way expressions nest counts one level — an atom that holds
// expressions (parsePrimary), a prefix operator, each `;` of a sequence,
// and each operator or postfix of a chain — so kMaxDepth levels of
// parentheses, `let` lines or `else if`s are fine and more are an error.
ExprP Parser::parseExpr() {
  if (panic_) return dummy();
  ExprP e = parseExprNoSeq();
  if (!panic_ && at(Tok::Semi)) {
    take();
    if (startsExpr()) {
      DepthGuard g(*this);
      if (tooDeep()) return e;
      auto seq = node(ExprKind::Seq, e->span);
      seq->kids.push_back(std::move(e));
      seq->kids.push_back(parseExpr());
      return seq;
    }
  }
  return e;
}

bool Parser::startsExpr() const {
  switch (cur().kind) {
    case Tok::End: case Tok::RParen: case Tok::RBrace: case Tok::RBracket: case Tok::KwEnd:
    case Tok::KwElse: case Tok::KwThen: case Tok::KwIn: case Tok::Bar: case Tok::Comma:
    case Tok::KwInr: case Tok::KwData: case Tok::KwType: case Tok::KwExtern: case Tok::KwWith:
    case Tok::KwOf: case Tok::FatArrow: case Tok::Arrow: case Tok::Semi: case Tok::At:
    case Tok::KwPub: case Tok::KwModule: case Tok::KwImport: case Tok::KwLinear:
      return false;
    case Tok::KwFn: return peekTok().kind == Tok::LParen;  // a lambda, not a declaration
    default: return true;
  }
}

// ---- operators and primaries --------------------------------------------------
int Parser::precOf(Tok k) {
  switch (k) {
    case Tok::OrOr: return 1;
    case Tok::AndAnd: return 2;
    case Tok::EqEq: case Tok::NotEq: case Tok::Lt: case Tok::Le: case Tok::Gt: case Tok::Ge: return 3;
    case Tok::Plus: case Tok::Minus: return 4;
    case Tok::Star: case Tok::Slash: case Tok::Percent: return 5;
    default: return 0;
  }
}

BinOp Parser::binOpOf(Tok k) {
  switch (k) {
    case Tok::OrOr: return BinOp::Or;
    case Tok::AndAnd: return BinOp::And;
    case Tok::EqEq: return BinOp::Eq;
    case Tok::NotEq: return BinOp::Ne;
    case Tok::Lt: return BinOp::Lt;
    case Tok::Le: return BinOp::Le;
    case Tok::Gt: return BinOp::Gt;
    case Tok::Ge: return BinOp::Ge;
    case Tok::Plus: return BinOp::Add;
    case Tok::Minus: return BinOp::Sub;
    case Tok::Star: return BinOp::Mul;
    case Tok::Slash: return BinOp::Div;
    default: return BinOp::Rem;
  }
}

// Precedence climbing; left-associative. A long chain deepens the tree, so
// each operator in it counts towards the depth limit.
ExprP Parser::parseBinary(int minPrec) {
  if (panic_) return dummy();
  ExprP lhs = parseUnary();
  unsigned chain = 0;
  while (!panic_) {
    int p = precOf(cur().kind);
    if (p == 0 || p <= minPrec || atCompoundAssign()) break;
    Token op = take();
    ++chain;
    ++depth_;
    ExprP rhs = parseBinary(p);
    auto b = node(ExprKind::Binary, op.span);
    b->bop = binOpOf(op.kind);
    b->kids.push_back(std::move(lhs));
    b->kids.push_back(std::move(rhs));
    lhs = std::move(b);
    if (tooDeep()) break;
  }
  depth_ -= chain;
  return lhs;
}

ExprP Parser::parseUnary() {
  if (panic_) return dummy();
  Span s = cur().span;
  bool prefix = at(Tok::Minus) || at(Tok::Bang) || at(Tok::Amp);
  DepthGuard g(*this, prefix ? 1 : 0);
  if (tooDeep()) return dummy();
  if (at(Tok::Minus)) {
    take();
    if (at(Tok::Int) || at(Tok::Float)) {  // -5 is a literal
      Token t = take();
      ExprP lit = node(t.kind == Tok::Int ? ExprKind::IntLit : ExprKind::FloatLit, s);
      lit->span.len = t.span.col + t.span.len - s.col;
      if (t.kind == Tok::Int) {
        lit->ival = int64_t(0 - uint64_t(t.ival));  // -2^63 is the one value whose magnitude is negative
        lit->bval = t.ival < 0 || t.ival > 2147483648LL;
      } else {
        lit->fval = -t.fval;
      }
      return parsePostfix(std::move(lit));
    }
    auto u = node(ExprKind::Unary, s);
    u->uop = UnOp::Neg;
    u->kids.push_back(parseUnary());
    return u;
  }
  if (at(Tok::Bang)) {
    take();
    auto u = node(ExprKind::Unary, s);
    u->uop = UnOp::Not;
    u->kids.push_back(parseUnary());
    return u;
  }
  if (at(Tok::Amp)) {
    take();
    auto b = node(ExprKind::Borrow, s);
    b->bval = accept(Tok::KwMut);
    b->kids.push_back(parseUnary());
    return b;
  }
  return parsePostfix(parsePrimary());
}

std::vector<ExprP> Parser::parseArgs(const char* what) {
  std::vector<ExprP> args;
  expect(Tok::LParen, what);
  while (!panic_ && !at(Tok::RParen)) {
    args.push_back(parseExpr());
    if (!accept(Tok::Comma)) break;
  }
  expect(Tok::RParen, "after the arguments");
  return args;
}

ExprP Parser::parsePostfix(ExprP e) {
  unsigned chain = 0;
  while (!panic_) {
    if (at(Tok::LParen)) {
      Span s = e->span;
      auto c = node(ExprKind::Call, s);
      c->kids.push_back(std::move(e));
      for (ExprP& a : parseArgs("")) c->kids.push_back(std::move(a));
      e = std::move(c);
    } else if (at(Tok::LBracket)) {
      Span s = take().span;
      auto ix = node(ExprKind::Index, s);
      ix->kids.push_back(std::move(e));
      ix->kids.push_back(parseExpr());
      expect(Tok::RBracket, "after the index");
      e = std::move(ix);
    } else if (at(Tok::Dot) && peekTok().kind == Tok::Ident && peekTok().text == "await") {
      take();
      auto a = node(ExprKind::Await, take().span);
      a->kids.push_back(std::move(e));
      e = std::move(a);
    } else if (at(Tok::Dot)) {
      take();
      Span s = cur().span;
      auto m = node(ExprKind::Member, s);
      if (at(Tok::Int)) {
        m->ival = take().ival;
        m->bval = true;
      } else {
        m->name = expectIdent("a field name or tuple index after '.'");
      }
      m->kids.push_back(std::move(e));
      e = std::move(m);
    } else {
      break;
    }
    ++chain;
    ++depth_;
    if (tooDeep()) break;
  }
  depth_ -= chain;
  return e;
}

ExprP Parser::parseLet() {
  Span s = cur().span;
  bool bang = take().kind == Tok::KwLetBang;
  auto e = node(ExprKind::Let, s);
  e->bval = bang;
  e->pat = parsePattern();
  if (accept(Tok::Colon)) e->annot = parseType();
  expect(Tok::Eq, "in a let binding");
  e->kids.push_back(parseExprNoSeq());
  // `in`, `;` or (block form) a following expression.
  if (!accept(Tok::KwIn)) accept(Tok::Semi);
  if (panic_) return e;
  if (!startsExpr()) {
    fail("the body of the let binding (`in` and an expression)");
    return e;
  }
  e->kids.push_back(parseExpr());
  return e;
}

ExprP Parser::parsePrimary() {
  DepthGuard g(*this);
  Span s = cur().span;
  if (panic_ || tooDeep()) return dummy();
  switch (cur().kind) {
    case Tok::Int: return parseIntLit(s);
    case Tok::Float: return parseFloatLit(s);
    case Tok::String: return parseStringLit(s);
    case Tok::KwTrue:
    case Tok::KwFalse: return parseBoolLit(s);
    case Tok::Ident: return parseName(s);
    case Tok::LParen: return parseParenthesized(s);
    case Tok::LBrace: return parseRecordLit(s);
    case Tok::LBracket: return parseListLit(s);
    case Tok::KwLet:
    case Tok::KwLetBang: return parseLet();
    case Tok::KwFn: return parseLambda(s);
    case Tok::KwIf: return parseIf(s);
    case Tok::KwRegion: return parseRegion(s);
    case Tok::KwMatch: return parseMatch(s);
    case Tok::KwCase: return parseCase(s);
    case Tok::KwHandle: return parseHandle(s);
    case Tok::KwPerform: return parsePerform(s);
    case Tok::KwInl:
    case Tok::KwInr: return parseInjection(s);
    case Tok::KwFst:
    case Tok::KwSnd:
    case Tok::KwDrop:
    case Tok::KwCopy: return parseUnaryBuiltin(s);
    case Tok::KwString: return parseStringOp(s);
    default:
      fail("an expression");
      return dummy();
  }
}

// An integer literal.
ExprP Parser::parseIntLit(Span s) {
  Token t = take();
  auto e = node(ExprKind::IntLit, s);
  e->ival = t.ival;
  e->bval = t.wide;
  if (t.ival < 0) {  // 2^63 without a minus
    diags_.error("E000", s, "integer literal '" + t.text + "' is out of range for I64");
    panic_ = true;
  }
  return e;
}

// A float literal.
ExprP Parser::parseFloatLit(Span s) {
  auto e = node(ExprKind::FloatLit, s);
  e->fval = take().fval;
  return e;
}

// A string literal.
ExprP Parser::parseStringLit(Span s) {
  auto e = node(ExprKind::StrLit, s);
  e->name = take().text;
  return e;
}

// `true`, `false`.
ExprP Parser::parseBoolLit(Span s) {
  auto e = node(ExprKind::BoolLit, s);
  e->bval = take().kind == Tok::KwTrue;
  return e;
}

// A name: a variable, `__ffi(..)`, `allocate_gpu(..)`, an inline dispatch.
ExprP Parser::parseName(Span s) {
  Token t = take();
  if (t.text == "__ffi") {
    auto e = node(ExprKind::Ffi, s);
    expect(Tok::LParen, "after '__ffi'");
    if (at(Tok::String)) e->name = take().text;
    else fail("the symbol name (a string) as the first argument of __ffi");
    while (!panic_ && accept(Tok::Comma)) e->kids.push_back(parseExpr());
    expect(Tok::RParen, "after the __ffi arguments");
    return e;
  }
  if (t.text == "allocate_gpu" || t.text == "allocate_gpu_on") return parseAllocGpu(s, t.text == "allocate_gpu_on");
  if (t.text == "dispatch" && at(Tok::Ident)) return parseDispatch(s);
  if (t.text == "kernel" && atIdent("over")) return parseDispatch(s);
  auto e = node(ExprKind::Var, s);
  e->name = t.text;
  return e;
}

// `()`, `(e)`, a tuple `(a, b)`.
ExprP Parser::parseParenthesized(Span s) {
  take();
  if (accept(Tok::RParen)) return node(ExprKind::Unit, s);
  ExprP first = parseExpr();
  if (accept(Tok::RParen)) return first;
  auto t = node(ExprKind::Tuple, s);
  t->kids.push_back(std::move(first));
  while (!panic_ && accept(Tok::Comma)) t->kids.push_back(parseExpr());
  expect(Tok::RParen, "after the tuple", "tuples are written `(a, b)`");
  return t;
}

// A record literal `{ f = e, .. }`.
ExprP Parser::parseRecordLit(Span s) {
  take();
  auto r = node(ExprKind::Record, s);
  while (!panic_ && !at(Tok::RBrace)) {
    if (!at(Tok::Ident)) {
      fail("a field name in a record literal `{ f = e }`",
           "braces after `=` make a record; a brace-bodied function has no `=`: `fn f(): T { .. }`");
      break;
    }
    r->names.push_back(take().text);
    expect(Tok::Eq, "after the field name");
    r->kids.push_back(parseExpr());
    if (!accept(Tok::Comma)) break;
  }
  if (!panic_ && r->names.empty()) fail("a field name in a record literal `{ f = e }`");
  expect(Tok::RBrace, "after the record fields");
  return r;
}

// A list literal `[a, b]`.
ExprP Parser::parseListLit(Span s) {
  take();
  auto l = node(ExprKind::List, s);
  while (!panic_ && !at(Tok::RBracket)) {
    l->kids.push_back(parseExpr());
    if (!accept(Tok::Comma)) break;
  }
  expect(Tok::RBracket, "after the list elements");
  return l;
}

// A lambda `fn(x: T) -> body`.
ExprP Parser::parseLambda(Span s) {
  take();
  auto l = node(ExprKind::Lambda, s);
  l->params = parseParams();
  if (l->params.empty()) {
    Param unit;
    unit.name = "_";
    unit.span = s;
    unit.type = typeNode(TypeExpr::Unit, s);
    l->params.push_back(std::move(unit));
  }
  if (accept(Tok::Colon)) l->annot = parseTypeAtom();
  expect(Tok::Arrow, "before the lambda body", "lambdas are written `fn(x: T) -> body`");
  l->kids.push_back(parseExprNoSeq());
  return l;
}

// `if c then a else b`, `if c { .. } else { .. }`.
ExprP Parser::parseIf(Span s) {
  take();
  auto e = node(ExprKind::If, s);
  e->kids.push_back(parseExpr());
  if (at(Tok::LBrace)) {  // if c { .. } [else if .. | else { .. }]
    e->kids.push_back(parseBlock("after the condition"));
    if (accept(Tok::KwElse)) {
      if (at(Tok::KwIf)) e->kids.push_back(parsePrimary());
      else e->kids.push_back(parseBlock("after 'else'", "write `else { .. }` or `else if c { .. }`"));
    } else {
      e->kids.push_back(node(ExprKind::Unit, s));
    }
    return e;
  }
  expect(Tok::KwThen, "after the condition", "write `if c then a else b` or `if c { a } else { b }`");
  e->kids.push_back(parseExpr());
  expect(Tok::KwElse, "after the then-branch", "every `if` needs an `else`");
  e->kids.push_back(parseExprNoSeq());
  return e;
}

// `region r { .. }`, `region r: e`.
ExprP Parser::parseRegion(Span s) {
  take();
  auto e = node(ExprKind::Region, s);
  e->name = expectIdent("a region name after 'region'");
  if (at(Tok::LBrace)) {
    e->kids.push_back(parseBlock("after the region name"));
  } else if (accept(Tok::Colon)) {
    e->kids.push_back(parseExpr());
  } else {
    fail("'{' or ':' after the region name");
  }
  return e;
}

// `match e of | P => e end`.
ExprP Parser::parseMatch(Span s) {
  take();
  auto e = node(ExprKind::Match, s);
  e->kids.push_back(parseExpr());
  expect(Tok::KwOf, "after the match scrutinee", "write `match e of | P => e end`");
  bool first = true;
  while (!panic_ && !at(Tok::KwEnd)) {
    if (!accept(Tok::Bar) && !first) {
      fail("'|' before the next match arm or 'end'");
      break;
    }
    first = false;
    Arm a;
    a.span = cur().span;
    a.pat = parsePattern();
    if (accept(Tok::KwIf)) a.guard = parseExpr();
    expect(Tok::FatArrow, "after the pattern");
    a.body = parseExpr();
    e->arms.push_back(std::move(a));
  }
  if (!panic_ && e->arms.empty()) fail("a match arm");
  expect(Tok::KwEnd, "to close the match");
  return e;
}

// `case e of inl(x) -> a inr(y) -> b end`.
ExprP Parser::parseCase(Span s) {
  take();
  auto e = node(ExprKind::Case, s);
  e->kids.push_back(parseExpr());
  expect(Tok::KwOf, "after the case scrutinee");
  for (Tok side : {Tok::KwInl, Tok::KwInr}) {
    accept(Tok::Bar);
    expect(side, "in a case expression", "write `case e of inl(x) -> a inr(y) -> b end`");
    expect(Tok::LParen);
    Span vs = cur().span;
    e->names.push_back(expectIdent("a variable name", &vs));
    e->nameSpans.push_back(vs);
    expect(Tok::RParen);
    if (!accept(Tok::Arrow)) expect(Tok::FatArrow, "after the case pattern");
    e->kids.push_back(parseExpr());
  }
  expect(Tok::KwEnd, "to close the case");
  return e;
}

// `handle e with | op(x, k) => e | return(x) => e end`.
ExprP Parser::parseHandle(Span s) {
  take();
  auto e = node(ExprKind::Handle, s);
  e->kids.push_back(parseExpr());
  expect(Tok::KwWith, "after the handled expression");
  while (!panic_ && accept(Tok::Bar)) {
    Arm a;
    a.span = cur().span;
    if (accept(Tok::KwReturn)) a.name = "return";
    else a.name = expectIdent("an operation name or 'return'");
    expect(Tok::LParen, "after the handler's name");
    while (!panic_ && !at(Tok::RParen)) {
      Param p;
      p.name = expectIdent("a parameter name", &p.span);
      a.params.push_back(std::move(p));
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RParen, "after the handler's parameters");
    expect(Tok::FatArrow, "after the handler's parameters");
    a.body = parseExpr();
    e->arms.push_back(std::move(a));
  }
  expect(Tok::KwEnd, "to close the handler");
  return e;
}

// `perform op(args)`.
ExprP Parser::parsePerform(Span s) {
  take();
  auto e = node(ExprKind::Perform, s);
  e->name = expectIdent("an operation name after 'perform'");
  e->kids = parseArgs("after the operation name");
  return e;
}

// `inl(e)`, `inr(e)`, with an optional `[T]`.
ExprP Parser::parseInjection(Span s) {
  auto e = node(take().kind == Tok::KwInl ? ExprKind::Inl : ExprKind::Inr, s);
  if (accept(Tok::LBracket)) {
    e->annot = parseType();
    expect(Tok::RBracket, "after the type");
  }
  auto args = parseArgs("after inl/inr");
  if (!panic_ && args.size() != 1) {
    diags_.error("E106", s, "inl/inr take 1 argument, got " + std::to_string(args.size()));
    e->kids.push_back(node(ExprKind::Unit, s));
  } else if (!args.empty()) {
    e->kids.push_back(std::move(args[0]));
  } else {
    e->kids.push_back(node(ExprKind::Unit, s));
  }
  return e;
}

// `fst(e)`, `snd(e)`, `drop(e)`, `copy(e)`.
ExprP Parser::parseUnaryBuiltin(Span s) {
  Tok k = take().kind;
  ExprKind ek = k == Tok::KwFst ? ExprKind::Fst : k == Tok::KwSnd ? ExprKind::Snd
                : k == Tok::KwDrop ? ExprKind::Drop : ExprKind::Copy;
  auto e = node(ek, s);
  auto args = parseArgs("after the built-in's name");
  if (!panic_ && args.size() != 1)
    diags_.error("E106", s, "this built-in takes 1 argument, got " + std::to_string(args.size()));
  e->kids.push_back(args.empty() ? node(ExprKind::Unit, s) : std::move(args[0]));
  return e;
}

// `String.new@r(..)`, `String.len(s)`, `String.concat(a, b)`.
ExprP Parser::parseStringOp(Span s) {
  take();
  expect(Tok::Dot, "after 'String'", "the string operations are String.new@r(\"...\"), String.len(s), String.concat(a, b)");
  Span ns = cur().span;
  std::string op = expectIdent("new, len or concat after 'String.'");
  if (panic_) return dummy();
  if (op == "new") {
    auto e = node(ExprKind::StrNew, s);
    e->name = "_";
    if (accept(Tok::At)) e->name = expectIdent("a region name after '@'");
    auto args = parseArgs("after String.new");
    if (!panic_ && args.size() != 1) {
      diags_.error("E106", s, "String.new takes 1 argument, got " + std::to_string(args.size()));
      return dummy();
    }
    if (!panic_) e->kids.push_back(std::move(args[0]));
    return e;
  }
  if (op == "len" || op == "concat") {
    auto e = node(op == "len" ? ExprKind::StrLen : ExprKind::StrConcat, s);
    auto args = parseArgs("after the string operation");
    size_t want = op == "len" ? 1 : 2;
    if (!panic_ && args.size() != want) {
      diags_.error("E106", s, "String." + op + " takes " + std::to_string(want) + " argument" +
                                  (want == 1 ? "" : "s") + ", got " + std::to_string(args.size()));
      return dummy();
    }
    for (ExprP& a : args) e->kids.push_back(std::move(a));
    return e;
  }
  diags_.error("E104", ns, "unknown string operation 'String." + op + "'",
               "the string operations are String.new@r(\"...\"), String.len(s), String.concat(a, b)");
  panic_ = true;
  return dummy();
}

}  // namespace eph::ephapax::parsing
