// The Ephapax parser: blocks and statements (the GPU extension): `{ s; s; e }`,
// var, assignment, compound assignment, for, while, return, and
// allocate_gpu and dispatch.
// (Parser methods; see ParserImpl.h for the other parts.)
#include "frontends/ephapax/ParserImpl.h"

namespace eph::ephapax::parsing {

// ---- blocks and statements (GPU extension) ------------------------------------
// `+=` `-=` `*=` `/=` `%=`: an operator token right before `=`.
bool Parser::atCompoundAssign() const {
  Tok k = cur().kind;
  if (k != Tok::Plus && k != Tok::Minus && k != Tok::Star && k != Tok::Slash && k != Tok::Percent) return false;
  const Token& n = peekTok();
  return n.kind == Tok::Eq && n.span.line == cur().span.line && n.span.col == cur().span.col + 1;
}

ExprP Parser::parseBlock(const char* context, std::string hint) {
  DepthGuard g(*this);
  Span open = cur().span;
  if (tooDeep()) return dummy();
  if (!expect(Tok::LBrace, context, std::move(hint))) return dummy();
  unsigned outer = statements_;
  ExprP body = parseStatements(open);
  statements_ = outer;
  expect(Tok::RBrace, "to close the block");
  return body;
}

// The statements of a block up to (not including) its `}`.
ExprP Parser::parseStatements(Span open) {
  std::vector<ExprP> frames;  // each waits for the rest of the block as its last kid
  ExprP tail;
  while (!panic_ && !at(Tok::RBrace) && !at(Tok::End)) {
    if (statements_ > kMaxStatements) {
      diags_.error("E000", cur().span, "this block nests more than " + std::to_string(kMaxStatements) + " statements",
                   "split it into functions");
      panic_ = true;
      break;
    }
    Span s = cur().span;
    if (at(Tok::KwLet) || at(Tok::KwLetBang)) {
      auto e = node(ExprKind::Let, s);
      e->bval = take().kind == Tok::KwLetBang;
      e->pat = parsePattern();
      if (accept(Tok::Colon)) e->annot = parseType();
      expect(Tok::Eq, "in a let binding");
      e->kids.push_back(parseExprNoSeq());
      if (!accept(Tok::Semi)) accept(Tok::KwIn);
      frames.push_back(std::move(e));
      ++statements_;
      continue;
    }
    if (atIdent("var") && peekTok().kind == Tok::Ident && (peekTok(2).kind == Tok::Eq || peekTok(2).kind == Tok::Colon)) {
      take();
      auto e = node(ExprKind::VarDecl, cur().span);
      e->name = expectIdent("a variable name after 'var'", &e->span);
      if (accept(Tok::Colon)) e->annot = parseType();
      expect(Tok::Eq, "after the variable", "a `var` needs a value: `var x = 0;`");
      e->kids.push_back(parseExprNoSeq());
      expect(Tok::Semi, "after the `var` declaration");
      frames.push_back(std::move(e));
      ++statements_;
      continue;
    }
    if (atIdent("workgroup") && peekTok().kind == Tok::Ident && peekTok(2).kind == Tok::Colon) {
      take();
      auto e = node(ExprKind::Workgroup, cur().span);
      e->name = expectIdent("a workgroup array name", &e->span);
      expect(Tok::Colon, "after the workgroup array name");
      TypeP t = parseType();
      if (!panic_ && t->kind != TypeExpr::Array) {
        diags_.error("E000", t->span, "a workgroup array has the type `[T; N]`", "e.g. `workgroup tile: [F32; 256];`");
        panic_ = true;
      } else if (!panic_) {
        e->ival = t->size;
        e->annot = std::move(t->args[0]);
      }
      expect(Tok::Semi, "after the workgroup array");
      frames.push_back(std::move(e));
      ++statements_;
      continue;
    }
    if (at(Tok::KwRegion) && peekTok().kind == Tok::Ident && peekTok(2).kind == Tok::Colon) {
      take();  // region r: rest of the block
      auto e = node(ExprKind::Region, s);
      e->name = take().text;
      take();
      frames.push_back(std::move(e));
      ++statements_;
      continue;
    }
    bool blockLike = at(Tok::KwIf) || at(Tok::KwRegion) || at(Tok::KwMatch) || at(Tok::KwCase) || atIdent("while") ||
                     atIdent("for") ||
                     ((atIdent("dispatch") || atIdent("kernel")) && peekTok().kind == Tok::Ident && peekTok().text == "over");
    ExprP e = blockLike ? parseBlockStatement() : parseStatement();
    if (panic_) break;
    bool braceEnded = blockLike && endsBlock();
    if (at(Tok::RBrace)) {  // the block's value
      tail = std::move(e);
      break;
    }
    if (accept(Tok::Semi) || braceEnded) {
      if (at(Tok::RBrace) && isStatement(*e)) {  // ends in a statement of type ()
        tail = std::move(e);
        break;
      }
      auto seq = node(ExprKind::Seq, e->span);
      seq->kids.push_back(std::move(e));
      frames.push_back(std::move(seq));
      ++statements_;
      continue;
    }
    fail("';' after the statement");
  }
  ExprP rest = tail ? std::move(tail) : node(ExprKind::Unit, at(Tok::RBrace) ? cur().span : open);
  while (!frames.empty()) {
    frames.back()->kids.push_back(std::move(rest));
    rest = std::move(frames.back());
    frames.pop_back();
  }
  return rest;
}

// A statement that starts with a block expression (`if c { .. }`,
// `region r { .. }`, `match .. end`, `dispatch over n { .. }`) ends with
// its `}` or `end`, as in Rust: a next line that starts with `(` or `-` is
// a new expression, not a call or a subtraction. Other forms (`if c then a
// else b`, `region r: e`) go on as expressions.
ExprP Parser::parseBlockStatement() {
  if (atIdent("while") || atIdent("for")) return parseStatement();
  size_t start = pos_;
  ExprP e = parsePrimary();
  if (panic_ || endsBlock()) return e;
  pos_ = start;
  return parseStatement();
}

bool Parser::isStatement(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Assign: case ExprKind::IndexAssign: case ExprKind::While: case ExprKind::For:
    case ExprKind::Return: case ExprKind::Dispatch: return true;
    default: return false;
  }
}

// One statement that does not bind: while, for, return, an assignment or an expression.
ExprP Parser::parseStatement() {
  Span s = cur().span;
  if (accept(Tok::KwReturn)) {
    auto e = node(ExprKind::Return, s);
    e->kids.push_back(at(Tok::Semi) || at(Tok::RBrace) ? node(ExprKind::Unit, s) : parseExprNoSeq());
    return e;
  }
  if (atIdent("while") && peekTok().kind != Tok::Eq && peekTok().kind != Tok::Semi && peekTok().kind != Tok::Dot) {
    take();
    auto e = node(ExprKind::While, s);
    e->kids.push_back(parseExprNoSeq());
    e->kids.push_back(parseBlock("after the loop condition", "write `while c { .. }`"));
    return e;
  }
  if (atIdent("for") && peekTok().kind == Tok::Ident && peekTok(2).kind == Tok::KwIn) {
    take();
    auto e = node(ExprKind::For, s);
    Token v = take();
    e->name = v.text;
    e->nameSpans.push_back(v.span);
    take();  // in
    e->kids.push_back(parseExprNoSeq());
    expect(Tok::DotDot, "between the bounds of the `for` range", "write `for i in a..b { .. }`");
    e->kids.push_back(parseExprNoSeq());
    e->kids.push_back(parseBlock("after the `for` range"));
    return e;
  }
  ExprP lhs = parseExprNoSeq();
  if (panic_) return lhs;
  BinOp op = BinOp::Add;
  bool compound = atCompoundAssign();
  if (compound) op = binOpOf(take().kind);
  if (!at(Tok::Eq)) return lhs;
  Span eq = take().span;
  if (lhs->kind != ExprKind::Var && lhs->kind != ExprKind::Index) {
    diags_.error("E000", lhs->span, "only a variable or an element `b[i]` can be assigned to",
                 "write `x = e;` for a `var x`, or `b[i] = e;`");
    panic_ = true;
    return lhs;
  }
  ExprP value = parseExprNoSeq();
  if (compound) {
    auto b = node(ExprKind::Binary, eq);
    b->bop = op;
    ExprP again = cloneExpr(*lhs);
    if (!again) {
      diags_.error("E000", lhs->span, "this element is too complex for a compound assignment",
                   "compute the index into a `let` first");
      panic_ = true;
      return lhs;
    }
    b->kids.push_back(std::move(again));
    b->kids.push_back(std::move(value));
    value = std::move(b);
  }
  if (lhs->kind == ExprKind::Var) {
    auto a = node(ExprKind::Assign, lhs->span);
    a->name = lhs->name;
    a->kids.push_back(std::move(value));
    return a;
  }
  auto a = node(ExprKind::IndexAssign, lhs->kids[0]->span);
  a->kids.push_back(std::move(lhs->kids[0]));
  a->kids.push_back(std::move(lhs->kids[1]));
  a->kids.push_back(std::move(value));
  return a;
}

// A copy of a simple expression (the target of a compound assignment);
// null for one holding bindings, lambdas or arms.
ExprP Parser::cloneExpr(const Expr& e, unsigned depth) {
  if (depth > kMaxDepth || e.pat || !e.params.empty() || !e.arms.empty() || e.annot || !e.grid.empty()) return nullptr;
  switch (e.kind) {
    case ExprKind::Let: case ExprKind::Lambda: case ExprKind::Region: case ExprKind::Match: case ExprKind::Case:
    case ExprKind::Handle: case ExprKind::Dispatch: case ExprKind::AllocGpu: case ExprKind::Await:
    case ExprKind::StrNew: case ExprKind::Ffi: case ExprKind::Perform:
      return nullptr;
    default: break;
  }
  auto c = node(e.kind, e.span);
  c->name = e.name;
  c->names = e.names;
  c->nameSpans = e.nameSpans;
  c->ival = e.ival;
  c->fval = e.fval;
  c->bval = e.bval;
  c->bop = e.bop;
  c->uop = e.uop;
  for (auto& k : e.kids) {
    ExprP kc = cloneExpr(*k, depth + 1);
    if (!kc) return nullptr;
    c->kids.push_back(std::move(kc));
  }
  return c;
}

// allocate_gpu[@r][<T>](n), or allocate_gpu_on[@r][<T>](k, n) (onDevice),
// after the name.
ExprP Parser::parseAllocGpu(Span s, bool onDevice) {
  auto e = node(ExprKind::AllocGpu, s);
  const char* what = onDevice ? "allocate_gpu_on" : "allocate_gpu";
  if (accept(Tok::At)) e->name = expectIdent("a region name after '@'");
  if (accept(Tok::Lt)) {
    e->annot = parseType();
    expect(Tok::Gt, "after the element type");
  }
  auto args = parseArgs(onDevice ? "after allocate_gpu_on" : "after allocate_gpu");
  size_t want = onDevice ? 2 : 1;
  if (!panic_ && args.size() != want) {
    diags_.error("E106", s,
                 std::string(what) +
                     (onDevice ? " takes 2 arguments (the device index and the element count), got "
                               : " takes 1 argument (the element count), got ") +
                     std::to_string(args.size()));
    panic_ = true;
    return dummy();
  }
  if (!panic_)
    for (auto& a : args) e->kids.push_back(std::move(a));
  return e;
}

// `dispatch k(args) over g`, `dispatch over g [workgroup (x, y, z)] { body }`,
// `kernel over g { body }`; after the first word.
ExprP Parser::parseDispatch(Span s) {
  auto e = node(ExprKind::Dispatch, s);
  bool inlineKernel = atIdent("over");
  if (!inlineKernel) {
    Span ns;
    e->name = expectIdent("the kernel's name", &ns);
    e->nameSpans.push_back(ns);
    e->kids = parseArgs("after the kernel's name");
  }
  if (!atIdent("over")) {
    fail("'over' and the grid", "write `dispatch k(args) over n;`");
    return e;
  }
  take();
  ExprP g = parseExprNoSeq();
  if (g->kind == ExprKind::Tuple) {
    for (auto& k : g->kids) e->grid.push_back(std::move(k));
  } else {
    e->grid.push_back(std::move(g));
  }
  if (!inlineKernel) return e;
  if (atIdent("workgroup")) {
    take();
    int64_t wg[3] = {64, 1, 1};
    parseWorkgroupSize(wg, "after 'workgroup'");
    for (int i = 0; i < 3; ++i) e->workgroupSize[i] = wg[i];
  }
  e->kids.push_back(parseBlock("to open the kernel body"));
  return e;
}

}  // namespace eph::ephapax::parsing
