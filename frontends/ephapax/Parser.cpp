#include "frontends/ephapax/Parser.h"

#include "frontends/ephapax/Lexer.h"

#include <algorithm>

namespace eph::ephapax {

namespace {

class Parser {
 public:
  Parser(std::vector<Token> toks, DiagSink& diags) : toks_(std::move(toks)), diags_(diags) {}

  Program run() {
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

 private:
  std::vector<Token> toks_;
  DiagSink& diags_;
  size_t pos_ = 0;
  bool panic_ = false;
  unsigned depth_ = 0;
  std::vector<std::string> pendingAnnotations_;
  int64_t pendingWorkgroupSize_[3] = {64, 1, 1};

  // ---- tokens ---------------------------------------------------------------
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

  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Tok::Ident: return "'" + t.text + "'";
      case Tok::Int: return "'" + t.text + "'";
      case Tok::String: return "a string";
      default: return tokName(t.kind);
    }
  }

  // Reports a syntax error at the current token (once per declaration).
  void fail(const std::string& what, std::string hint = {}) {
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
  bool expect(Tok k, std::string_view context = {}, std::string hint = {}) {
    if (panic_) return false;
    if (accept(k)) return true;
    fail(tokName(k) + (context.empty() ? "" : " " + std::string(context)), std::move(hint));
    return false;
  }
  std::string expectIdent(const char* what, Span* span = nullptr) {
    if (panic_) return "_";
    if (at(Tok::Ident) || at(Tok::KwResume)) {
      Token t = take();
      if (span) *span = t.span;
      return t.kind == Tok::KwResume ? "resume" : t.text;
    }
    fail(what);
    return "_";
  }

  void syncToDecl() {
    while (!at(Tok::End)) {
      Tok k = cur().kind;
      if (k == Tok::KwFn || k == Tok::KwData || k == Tok::KwType || k == Tok::KwExtern ||
          k == Tok::KwModule || k == Tok::KwImport || k == Tok::KwPub || k == Tok::KwLinear)
        if (cur().span.col == 1) return;
      if ((k == Tok::KwLet || k == Tok::At || atIdent("affine") || atIdent("async")) && cur().span.col == 1) return;
      take();
    }
  }

  // Depth guard: true when nesting is still allowed (else reports once).
  struct DepthGuard {
    Parser& p;
    unsigned n;
    DepthGuard(Parser& p, unsigned n = 1) : p(p), n(n) { p.depth_ += n; }
    ~DepthGuard() { p.depth_ -= n; }
  };
  bool tooDeep() {
    if (depth_ <= kMaxDepth) return false;
    if (!panic_) {
      diags_.error("E000", cur().span, "nesting is too deep (more than " + std::to_string(kMaxDepth) + " levels)",
                   "split the expression with `let` bindings or helper functions");
      panic_ = true;
    }
    return true;
  }

  // ---- declarations ---------------------------------------------------------
  void parseDecl(Program& p) {
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

  void resetWorkgroupSize() {
    pendingWorkgroupSize_[0] = 64;
    pendingWorkgroupSize_[1] = pendingWorkgroupSize_[2] = 1;
  }

  // `(x[, y[, z]])`: positive integer literals; the missing ones are 1.
  static constexpr int64_t kMaxWorkgroup = 1024;
  void parseWorkgroupSize(int64_t (&out)[3], const char* context) {
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
  std::string parsePath() {
    std::string last = expectIdent("a module name");
    while (at(Tok::Slash) || at(Tok::Dot)) {
      take();
      last = expectIdent("a module name");
    }
    return last;
  }

  // `untypedOk`: a @gpu function's parameters may leave out their types
  // (inferred from the dispatch sites).
  std::vector<Param> parseParams(bool untypedOk = false) {
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

  std::unique_ptr<FnDecl> parseFn(bool isExtern = false) {
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

  std::vector<std::string> parseTypeParamList() {
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

  std::unique_ptr<TypeDecl> parseData() {
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

  std::unique_ptr<TypeDecl> parseTypeDecl(bool inExtern = false) {
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

  void parseExtern(Program& p) {
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

  std::unique_ptr<ConstDecl> parseConst() {
    auto c = std::make_unique<ConstDecl>();
    take();
    c->name = expectIdent("a constant name", &c->span);
    if (accept(Tok::Colon)) c->annot = parseType();
    expect(Tok::Eq, "after the constant name");
    c->value = parseExpr();
    return c;
  }

  // ---- types ------------------------------------------------------------------
  TypeP typeNode(TypeExpr::Kind k, Span s) {
    auto t = std::make_unique<TypeExpr>();
    t->kind = k;
    t->span = s;
    return t;
  }

  TypeP parseType() {
    DepthGuard g(*this);
    if (tooDeep()) return typeNode(TypeExpr::Unit, cur().span);
    TypeP t = parseSumType();
    if (at(Tok::Arrow)) {
      Span s = take().span;
      auto f = typeNode(TypeExpr::Fn, s);
      f->span = t->span;
      f->args.push_back(std::move(t));
      f->args.push_back(parseType());
      return f;
    }
    return t;
  }

  TypeP parseSumType() {
    TypeP t = parseTypeAtom();
    unsigned chain = 0;
    while (!panic_ && at(Tok::Plus)) {
      take();
      DepthGuard g(*this, ++chain > 1 ? 1 : 0);
      if (tooDeep()) break;
      auto s = typeNode(TypeExpr::Sum, t->span);
      s->args.push_back(std::move(t));
      s->args.push_back(parseTypeAtom());
      t = std::move(s);
      depth_ += 0;
    }
    return t;
  }

  TypeP parseTypeAtom() {
    DepthGuard g(*this);
    Span s = cur().span;
    if (panic_ || tooDeep()) return typeNode(TypeExpr::Unit, s);
    auto prim = [&](const char* name) {
      take();
      auto t = typeNode(TypeExpr::Prim, s);
      t->name = name;
      return t;
    };
    switch (cur().kind) {
      case Tok::KwI32: return prim("I32");
      case Tok::KwI64: return prim("I64");
      case Tok::KwF32: return prim("F32");
      case Tok::KwF64: return prim("F64");
      case Tok::KwBool: return prim("Bool");
      case Tok::KwString: {
        take();
        auto t = typeNode(TypeExpr::String, s);
        if (accept(Tok::At)) t->region = expectIdent("a region name after '@'");
        return t;
      }
      case Tok::LParen: {
        take();
        if (accept(Tok::RParen)) return typeNode(TypeExpr::Unit, s);
        TypeP first = parseType();
        if (accept(Tok::RParen)) return first;
        auto t = typeNode(TypeExpr::Tuple, s);
        t->args.push_back(std::move(first));
        while (!panic_ && accept(Tok::Comma)) t->args.push_back(parseType());
        expect(Tok::RParen, "after the tuple type");
        return t;
      }
      case Tok::Amp: {
        take();
        auto t = typeNode(TypeExpr::Ref, s);
        t->mut = accept(Tok::KwMut);
        t->args.push_back(parseTypeAtom());
        return t;
      }
      case Tok::LBracket: {
        take();
        auto t = typeNode(TypeExpr::List, s);
        t->args.push_back(parseType());
        if (accept(Tok::Semi)) {  // [T; N]: a workgroup array
          t->kind = TypeExpr::Array;
          if (!at(Tok::Int) || cur().ival <= 0 || cur().ival > (1 << 24)) {
            fail("a positive element count in `[T; N]`");
            return t;
          }
          t->size = take().ival;
        }
        expect(Tok::RBracket, t->kind == TypeExpr::Array ? "after the array size" : "after the list element type");
        return t;
      }
      case Tok::KwFn: {  // fn(A, B) -> R, curried
        take();
        expect(Tok::LParen, "after 'fn' in a type");
        std::vector<TypeP> ps;
        while (!panic_ && !at(Tok::RParen)) {
          ps.push_back(parseType());
          if (!accept(Tok::Comma)) break;
        }
        expect(Tok::RParen, "after the parameter types");
        expect(Tok::Arrow, "after the parameter types of a function type");
        TypeP r = parseType();
        if (ps.empty()) ps.push_back(typeNode(TypeExpr::Unit, s));
        for (size_t i = ps.size(); i-- > 0;) {
          auto f = typeNode(TypeExpr::Fn, s);
          f->args.push_back(std::move(ps[i]));
          f->args.push_back(std::move(r));
          r = std::move(f);
        }
        return r;
      }
      case Tok::Ident: {
        std::string name = take().text;
        static const std::pair<const char*, const char*> lower[] = {
            {"i32", "I32"}, {"i64", "I64"}, {"f32", "F32"}, {"f64", "F64"}, {"bool", "Bool"}, {"u32", "U32"}, {"U32", "U32"}};
        for (auto& [l, u] : lower)
          if (name == l) {
            auto t = typeNode(TypeExpr::Prim, s);
            t->name = u;
            return t;
          }
        if (TypeP g = parseGpuType(name, s)) return g;
        auto t = typeNode(TypeExpr::Named, s);
        t->name = name;
        t->span.len = static_cast<unsigned>(name.size());
        if (at(Tok::LParen) || at(Tok::Lt)) {
          Tok close = at(Tok::LParen) ? Tok::RParen : Tok::Gt;
          take();
          while (!panic_ && !at(close)) {
            t->args.push_back(parseType());
            if (!accept(Tok::Comma)) break;
          }
          expect(close, "after the type arguments");
        }
        return t;
      }
      default:
        fail("a type");
        return typeNode(TypeExpr::Unit, s);
    }
  }

  // The GPU extension's types (after their name): GPUBuffer<T>, GPUBuffer<T>!,
  // GPUBufferAffine<T>, Future<T>, vec2..vec4, mat2..mat4. Null for any other name.
  TypeP parseGpuType(const std::string& name, Span s) {
    s.len = static_cast<unsigned>(name.size());
    if ((name.rfind("vec", 0) == 0 || name.rfind("mat", 0) == 0) && name.size() == 4 && name[3] >= '2' && name[3] <= '4') {
      auto t = typeNode(name[0] == 'v' ? TypeExpr::Vec : TypeExpr::Mat, s);
      t->name = name;
      t->size = name[3] - '0';
      return t;
    }
    bool buffer = name == "GPUBuffer" || name == "GPUBufferAffine";
    if (!buffer && name != "Future") return nullptr;
    auto t = typeNode(buffer ? TypeExpr::Gpu : TypeExpr::Future, s);
    t->name = name;
    expect(Tok::Lt, ("after '" + name + "'").c_str(), "write `" + name + "<T>`");
    t->args.push_back(parseType());
    expect(Tok::Gt, "after the element type");
    if (name == "GPUBuffer" && !panic_ && at(Tok::Bang)) {
      take();
      t->bang = true;
    }
    return t;
  }

  // ---- patterns -----------------------------------------------------------------
  PatternP pat(Pattern::Kind k, Span s) {
    auto p = std::make_unique<Pattern>();
    p->kind = k;
    p->span = s;
    return p;
  }

  PatternP parsePattern() {
    DepthGuard g(*this);
    Span s = cur().span;
    if (panic_ || tooDeep()) return pat(Pattern::Wild, s);
    switch (cur().kind) {
      case Tok::Int: {
        Token t = take();
        auto p = pat(Pattern::Int, s);
        p->ival = t.ival;
        p->wide = t.wide;
        if (t.ival < 0) {  // 2^63 without a minus
          diags_.error("E000", s, "integer literal '" + t.text + "' is out of range for I64");
          panic_ = true;
        }
        return p;
      }
      case Tok::Minus: {
        take();
        if (!at(Tok::Int)) {
          fail("an integer after '-' in a pattern");
          return pat(Pattern::Wild, s);
        }
        Token t = take();
        auto p = pat(Pattern::Int, s);
        p->ival = int64_t(0 - uint64_t(t.ival));  // -2^63 is the one value whose magnitude is negative
        p->wide = t.ival < 0 || t.ival > 2147483648LL;
        p->span.len = t.span.col + t.span.len - s.col;
        return p;
      }
      case Tok::KwTrue:
      case Tok::KwFalse: {
        auto p = pat(Pattern::Bool, s);
        p->bval = take().kind == Tok::KwTrue;
        return p;
      }
      case Tok::String: {
        auto p = pat(Pattern::String, s);
        p->sval = take().text;
        return p;
      }
      case Tok::LParen: {
        take();
        if (accept(Tok::RParen)) return pat(Pattern::Unit, s);
        PatternP first = parsePattern();
        if (accept(Tok::RParen)) return first;
        auto p = pat(Pattern::Tuple, s);
        p->args.push_back(std::move(first));
        while (!panic_ && accept(Tok::Comma)) p->args.push_back(parsePattern());
        expect(Tok::RParen, "after the tuple pattern");
        return p;
      }
      case Tok::KwInl:
      case Tok::KwInr: {
        auto p = pat(Pattern::Ctor, s);
        p->name = take().kind == Tok::KwInl ? "inl" : "inr";
        expect(Tok::LParen, "after '" + p->name + "' in a pattern");
        p->args.push_back(parsePattern());
        expect(Tok::RParen, "after the pattern");
        return p;
      }
      case Tok::Ident: {
        Token t = take();
        if (t.text == "_") return pat(Pattern::Wild, s);
        bool upper = t.text[0] >= 'A' && t.text[0] <= 'Z';
        if (!upper && !at(Tok::LParen)) {
          auto p = pat(Pattern::Var, s);
          p->name = t.text;
          return p;
        }
        auto p = pat(Pattern::Ctor, s);
        p->name = t.text;
        if (accept(Tok::LParen)) {
          while (!panic_ && !at(Tok::RParen)) {
            p->args.push_back(parsePattern());
            if (!accept(Tok::Comma)) break;
          }
          expect(Tok::RParen, "after the constructor's patterns");
        }
        return p;
      }
      default:
        fail("a pattern");
        return pat(Pattern::Wild, s);
    }
  }

  // ---- expressions -----------------------------------------------------------
  ExprP node(ExprKind k, Span s) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->span = s;
    return e;
  }
  ExprP dummy() { return node(ExprKind::Unit, cur().span); }

  // expr := exprNoSeq (';' exprNoSeq)*   (right-nested Seq)
  //
  // Depth: every way expressions nest counts one level — an atom that holds
  // expressions (parsePrimary), a prefix operator, each `;` of a sequence,
  // and each operator or postfix of a chain — so kMaxDepth levels of
  // parentheses, `let` lines or `else if`s are fine and more are an error.
  ExprP parseExpr() {
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

  bool startsExpr() const {
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

  ExprP parseExprNoSeq() { return parseBinary(0); }

  // ---- blocks and statements (GPU extension) ------------------------------------
  // A block `{ s; s; e }` desugars into nested nodes whose last kid is the
  // rest of the block (Ast.h). The statements are collected in a loop and
  // nested afterwards, so a long block costs no parser recursion; a chain
  // longer than kMaxStatements (counting enclosing blocks) is an E000 error,
  // which bounds the recursion of the passes that walk the result.
  static constexpr unsigned kMaxStatements = 10000;
  unsigned statements_ = 0;

  // `+=` `-=` `*=` `/=` `%=`: an operator token right before `=`.
  bool atCompoundAssign() const {
    Tok k = cur().kind;
    if (k != Tok::Plus && k != Tok::Minus && k != Tok::Star && k != Tok::Slash && k != Tok::Percent) return false;
    const Token& n = peekTok();
    return n.kind == Tok::Eq && n.span.line == cur().span.line && n.span.col == cur().span.col + 1;
  }

  ExprP parseBlock(const char* context, std::string hint = {}) {
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
  ExprP parseStatements(Span open) {
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
  ExprP parseBlockStatement() {
    if (atIdent("while") || atIdent("for")) return parseStatement();
    size_t start = pos_;
    ExprP e = parsePrimary();
    if (panic_ || endsBlock()) return e;
    pos_ = start;
    return parseStatement();
  }
  bool endsBlock() const {
    return pos_ > 0 && (toks_[pos_ - 1].kind == Tok::RBrace || toks_[pos_ - 1].kind == Tok::KwEnd);
  }

  static bool isStatement(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Assign: case ExprKind::IndexAssign: case ExprKind::While: case ExprKind::For:
      case ExprKind::Return: case ExprKind::Dispatch: return true;
      default: return false;
    }
  }

  // One statement that does not bind: while, for, return, an assignment or an expression.
  ExprP parseStatement() {
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
  ExprP cloneExpr(const Expr& e, unsigned depth = 0) {
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
  ExprP parseAllocGpu(Span s, bool onDevice) {
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
  ExprP parseDispatch(Span s) {
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

  static int precOf(Tok k) {
    switch (k) {
      case Tok::OrOr: return 1;
      case Tok::AndAnd: return 2;
      case Tok::EqEq: case Tok::NotEq: case Tok::Lt: case Tok::Le: case Tok::Gt: case Tok::Ge: return 3;
      case Tok::Plus: case Tok::Minus: return 4;
      case Tok::Star: case Tok::Slash: case Tok::Percent: return 5;
      default: return 0;
    }
  }
  static BinOp binOpOf(Tok k) {
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
  ExprP parseBinary(int minPrec) {
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

  ExprP parseUnary() {
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

  std::vector<ExprP> parseArgs(const char* what) {
    std::vector<ExprP> args;
    expect(Tok::LParen, what);
    while (!panic_ && !at(Tok::RParen)) {
      args.push_back(parseExpr());
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RParen, "after the arguments");
    return args;
  }

  ExprP parsePostfix(ExprP e) {
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

  ExprP parseLet() {
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

  ExprP parsePrimary() {
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
  ExprP parseIntLit(Span s) {
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
  ExprP parseFloatLit(Span s) {
    auto e = node(ExprKind::FloatLit, s);
    e->fval = take().fval;
    return e;
  }

  // A string literal.
  ExprP parseStringLit(Span s) {
    auto e = node(ExprKind::StrLit, s);
    e->name = take().text;
    return e;
  }

  // `true`, `false`.
  ExprP parseBoolLit(Span s) {
    auto e = node(ExprKind::BoolLit, s);
    e->bval = take().kind == Tok::KwTrue;
    return e;
  }

  // A name: a variable, `__ffi(..)`, `allocate_gpu(..)`, an inline dispatch.
  ExprP parseName(Span s) {
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
  ExprP parseParenthesized(Span s) {
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
  ExprP parseRecordLit(Span s) {
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
  ExprP parseListLit(Span s) {
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
  ExprP parseLambda(Span s) {
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
  ExprP parseIf(Span s) {
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
  ExprP parseRegion(Span s) {
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
  ExprP parseMatch(Span s) {
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
  ExprP parseCase(Span s) {
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
  ExprP parseHandle(Span s) {
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
  ExprP parsePerform(Span s) {
    take();
    auto e = node(ExprKind::Perform, s);
    e->name = expectIdent("an operation name after 'perform'");
    e->kids = parseArgs("after the operation name");
    return e;
  }

  // `inl(e)`, `inr(e)`, with an optional `[T]`.
  ExprP parseInjection(Span s) {
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
  ExprP parseUnaryBuiltin(Span s) {
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
  ExprP parseStringOp(Span s) {
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
};

}  // namespace

Program parseProgram(std::string_view src, DiagSink& diags, uint16_t file) {
  std::vector<Token> toks = lex(src, diags, file);
  return Parser(std::move(toks), diags).run();
}

}  // namespace eph::ephapax
