// The Ephapax parser: type expressions and patterns.
// (Parser methods; see ParserImpl.h for the other parts.)
#include "frontends/ephapax/ParserImpl.h"

namespace eph::ephapax::parsing {

// ---- types ------------------------------------------------------------------
TypeP Parser::parseType() {
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

TypeP Parser::parseSumType() {
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

TypeP Parser::parseTypeAtom() {
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
TypeP Parser::parseGpuType(const std::string& name, Span s) {
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
PatternP Parser::parsePattern() {
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

}  // namespace eph::ephapax::parsing
