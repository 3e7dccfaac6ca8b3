// The Ephapax lexer: source text to tokens with spans. Comments are `-- ...`,
// `// ...` and `/* ... */`; `let!` is one token; integer literals are I32
// when they fit and I64 otherwise; float literals (`1.5`) are F64.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/ephapax/Diag.h"

namespace eph::ephapax {

enum class Tok : uint8_t {
  End,
  Ident,   // x, Foo, _
  Int,     // 42
  Float,   // 1.5
  String,  // "text" (value holds the unescaped bytes)
  // keywords
  KwLet, KwLetBang, KwIn, KwFn, KwIf, KwThen, KwElse, KwRegion, KwCase, KwOf, KwInl, KwInr,
  KwEnd, KwFst, KwSnd, KwDrop, KwCopy, KwType, KwData, KwMatch, KwExtern, KwTrue, KwFalse,
  KwPub, KwImport, KwModule, KwLinear, KwMut, KwPerform, KwHandle, KwWith, KwReturn,
  KwResume, KwOnce, KwMulti, KwBool, KwI32, KwI64, KwF32, KwF64, KwString,
  // punctuation
  LParen, RParen, LBrace, RBrace, LBracket, RBracket, Comma, Semi, Colon, Dot, At, Arrow,
  FatArrow, Eq, EqEq, NotEq, Lt, Le, Gt, Ge, Plus, Minus, Star, Slash, Percent, Bang, AndAnd,
  OrOr, Bar, Amp, Slash2,
  DotDot,  // `..` of `for i in a..b`
  Error,  // a malformed token (the lexer reported it)
};

struct Token {
  Tok kind = Tok::End;
  Span span;
  std::string text;   // identifier name, or the unescaped string literal
  int64_t ival = 0;   // Int
  bool wide = false;  // Int: does not fit I32
  double fval = 0;    // Float
};

// The spelling of a token kind for messages: "'then'", "an identifier".
std::string tokName(Tok t);

// Tokenizes all of `src`; lexical errors go to `diags` (E000) and produce a
// Tok::Error token. The last token is always Tok::End.
std::vector<Token> lex(std::string_view src, DiagSink& diags, uint16_t file = 0);

}  // namespace eph::ephapax
