#include "frontends/ephapax/Lexer.h"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <unordered_map>

namespace eph::ephapax {

namespace {

const std::unordered_map<std::string_view, Tok>& keywords() {
  static const std::unordered_map<std::string_view, Tok> k = {
      {"let", Tok::KwLet},       {"in", Tok::KwIn},         {"fn", Tok::KwFn},
      {"if", Tok::KwIf},         {"then", Tok::KwThen},     {"else", Tok::KwElse},
      {"region", Tok::KwRegion}, {"case", Tok::KwCase},     {"of", Tok::KwOf},
      {"inl", Tok::KwInl},       {"inr", Tok::KwInr},       {"end", Tok::KwEnd},
      {"fst", Tok::KwFst},       {"snd", Tok::KwSnd},       {"drop", Tok::KwDrop},
      {"copy", Tok::KwCopy},     {"type", Tok::KwType},     {"data", Tok::KwData},
      {"match", Tok::KwMatch},   {"extern", Tok::KwExtern}, {"true", Tok::KwTrue},
      {"false", Tok::KwFalse},   {"pub", Tok::KwPub},       {"import", Tok::KwImport},
      {"module", Tok::KwModule}, {"linear", Tok::KwLinear}, {"mut", Tok::KwMut},
      {"perform", Tok::KwPerform}, {"handle", Tok::KwHandle}, {"with", Tok::KwWith},
      {"return", Tok::KwReturn}, {"resume", Tok::KwResume}, {"once", Tok::KwOnce},
      {"multi", Tok::KwMulti},   {"Bool", Tok::KwBool},     {"I32", Tok::KwI32},
      {"I64", Tok::KwI64},       {"F32", Tok::KwF32},       {"F64", Tok::KwF64},
      {"String", Tok::KwString},
  };
  return k;
}

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

class Lexer {
 public:
  Lexer(std::string_view src, DiagSink& diags, uint16_t file) : src_(src), diags_(diags), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      skipSpaceAndComments();
      Token t = next(out.empty() ? Tok::End : out.back().kind);
      out.push_back(std::move(t));
      if (out.back().kind == Tok::End) break;
    }
    return out;
  }

 private:
  std::string_view src_;
  DiagSink& diags_;
  uint16_t file_ = 0;  // Span::file of every token
  size_t pos_ = 0;
  unsigned line_ = 1, col_ = 1;

  char peek(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  void advance() {
    if (pos_ >= src_.size()) return;
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  void skipSpaceAndComments() {
    while (pos_ < src_.size()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        advance();
      } else if ((c == '-' && peek(1) == '-') || (c == '/' && peek(1) == '/')) {
        while (pos_ < src_.size() && peek() != '\n') advance();
      } else if (c == '/' && peek(1) == '*') {
        Span at{line_, col_, 2};
        advance();
        advance();
        while (pos_ < src_.size() && !(peek() == '*' && peek(1) == '/')) advance();
        if (pos_ >= src_.size()) {
          diags_.error("E000", at, "unterminated block comment", "close it with `*/`");
          return;
        }
        advance();
        advance();
      } else {
        return;
      }
    }
  }

  Token make(Tok k, Span s) {
    Token t;
    t.kind = k;
    t.span = s;
    return t;
  }

  Token next(Tok prev) {
    Span s{line_, col_, 1, file_};
    if (pos_ >= src_.size()) return make(Tok::End, s);
    char c = peek();
    if (isIdentStart(c)) return ident(s);
    if (isDigit(c)) return number(s, prev == Tok::Dot);
    if (c == '"') return string(s);
    auto two = [&](char a, char b) { return c == a && peek(1) == b; };
    struct P { char a, b; Tok k; };
    static const P pairs[] = {{'-', '>', Tok::Arrow}, {'=', '>', Tok::FatArrow}, {'=', '=', Tok::EqEq},
                              {'!', '=', Tok::NotEq}, {'<', '=', Tok::Le},       {'>', '=', Tok::Ge},
                              {'&', '&', Tok::AndAnd}, {'|', '|', Tok::OrOr},  {'.', '.', Tok::DotDot}};
    for (const P& p : pairs)
      if (two(p.a, p.b)) {
        advance();
        advance();
        s.len = 2;
        return make(p.k, s);
      }
    Tok k = Tok::Error;
    switch (c) {
      case '(': k = Tok::LParen; break;
      case ')': k = Tok::RParen; break;
      case '{': k = Tok::LBrace; break;
      case '}': k = Tok::RBrace; break;
      case '[': k = Tok::LBracket; break;
      case ']': k = Tok::RBracket; break;
      case ',': k = Tok::Comma; break;
      case ';': k = Tok::Semi; break;
      case ':': k = Tok::Colon; break;
      case '.': k = Tok::Dot; break;
      case '@': k = Tok::At; break;
      case '=': k = Tok::Eq; break;
      case '<': k = Tok::Lt; break;
      case '>': k = Tok::Gt; break;
      case '+': k = Tok::Plus; break;
      case '-': k = Tok::Minus; break;
      case '*': k = Tok::Star; break;
      case '/': k = Tok::Slash; break;
      case '%': k = Tok::Percent; break;
      case '!': k = Tok::Bang; break;
      case '|': k = Tok::Bar; break;
      case '&': k = Tok::Amp; break;
      default: break;
    }
    advance();
    if (k == Tok::Error) {
      unsigned char u = static_cast<unsigned char>(c);
      std::string shown = u >= 0x20 && u < 0x7f ? std::string(1, c) : "\\x" + hex(u);
      diags_.error("E000", s, "unexpected character '" + shown + "'",
                   c == '#' ? "`#` is not a comment in Ephapax; use `--` or `//`" : "");
      // Skip the rest of a UTF-8 sequence so it is reported once.
      while (pos_ < src_.size() && (static_cast<unsigned char>(peek()) & 0xc0) == 0x80) advance();
    }
    return make(k, s);
  }

  static std::string hex(unsigned char u) {
    const char* d = "0123456789abcdef";
    return std::string{d[u >> 4], d[u & 15]};
  }

  Token ident(Span s) {
    size_t start = pos_;
    while (isIdentChar(peek())) advance();
    std::string_view word = src_.substr(start, pos_ - start);
    s.len = static_cast<unsigned>(word.size());
    if (word == "let" && peek() == '!') {
      advance();
      s.len = 4;
      return make(Tok::KwLetBang, s);
    }
    auto it = keywords().find(word);
    if (it != keywords().end()) return make(it->second, s);
    Token t = make(Tok::Ident, s);
    t.text = std::string(word);
    return t;
  }

  Token number(Span s, bool afterDot) {
    size_t start = pos_;
    while (isDigit(peek()) || peek() == '_') advance();
    bool isFloat = false;
    if (!afterDot && peek() == '.' && isDigit(peek(1))) {
      isFloat = true;
      advance();
      while (isDigit(peek())) advance();
    }
    if (!afterDot && (peek() == 'e' || peek() == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
      isFloat = true;
      advance();
      if (peek() == '+' || peek() == '-') advance();
      while (isDigit(peek())) advance();
    }
    std::string text;
    for (char c : src_.substr(start, pos_ - start))
      if (c != '_') text += c;
    s.len = static_cast<unsigned>(pos_ - start);
    if (isIdentChar(peek())) {
      while (isIdentChar(peek())) advance();
      s.len = static_cast<unsigned>(pos_ - start);
      diags_.error("E000", s, "invalid number '" + std::string(src_.substr(start, pos_ - start)) + "'");
      return make(Tok::Error, s);
    }
    if (isFloat) {
      Token t = make(Tok::Float, s);
      errno = 0;
      t.fval = std::strtod(text.c_str(), nullptr);
      if (errno == ERANGE && (t.fval > 1 || t.fval < -1)) {
        diags_.error("E000", s, "float literal '" + text + "' is out of range");
        return make(Tok::Error, s);
      }
      return t;
    }
    // Integers: up to 2^63 (the magnitude of I64's minimum, for `-9223372036854775808`).
    unsigned __int128 v = 0;
    for (char c : text) {
      v = v * 10 + static_cast<unsigned>(c - '0');
      if (v > (static_cast<unsigned __int128>(1) << 63)) {
        diags_.error("E000", s, "integer literal '" + text + "' is out of range for I64");
        return make(Tok::Error, s);
      }
    }
    Token t = make(Tok::Int, s);
    t.ival = static_cast<int64_t>(static_cast<uint64_t>(v));
    t.wide = v > static_cast<unsigned __int128>(std::numeric_limits<int32_t>::max());
    t.text = text;
    return t;
  }

  Token string(Span s) {
    size_t start = pos_;
    advance();  // opening quote
    std::string value;
    while (true) {
      if (pos_ >= src_.size() || peek() == '\n') {
        s.len = static_cast<unsigned>(pos_ - start);
        diags_.error("E000", s, "unterminated string literal", "close it with `\"` on the same line");
        return make(Tok::Error, s);
      }
      char c = peek();
      if (c == '"') {
        advance();
        break;
      }
      if (c == '\\') {
        Span esc{line_, col_, 2};
        advance();
        char e = peek();
        switch (e) {
          case 'n': value += '\n'; break;
          case 'r': value += '\r'; break;
          case 't': value += '\t'; break;
          case '\\': value += '\\'; break;
          case '"': value += '"'; break;
          case '0': value += '\0'; break;
          default:
            diags_.error("E000", esc, std::string("unknown escape '\\") + (e ? std::string(1, e) : "") + "' in a string",
                         "the escapes are \\n \\r \\t \\\\ \\\" and \\0");
            break;
        }
        if (pos_ < src_.size() && peek() != '\n') advance();
        continue;
      }
      value += c;
      advance();
    }
    s.len = static_cast<unsigned>(pos_ - start);
    Token t = make(Tok::String, s);
    t.text = std::move(value);
    return t;
  }
};

}  // namespace

std::string tokName(Tok t) {
  switch (t) {
    case Tok::End: return "end of file";
    case Tok::Ident: return "an identifier";
    case Tok::Int: return "an integer";
    case Tok::Float: return "a float";
    case Tok::String: return "a string";
    case Tok::Error: return "an invalid token";
    case Tok::KwLetBang: return "'let!'";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::LBrace: return "'{'";
    case Tok::RBrace: return "'}'";
    case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'";
    case Tok::Comma: return "','";
    case Tok::Semi: return "';'";
    case Tok::Colon: return "':'";
    case Tok::Dot: return "'.'";
    case Tok::At: return "'@'";
    case Tok::Arrow: return "'->'";
    case Tok::FatArrow: return "'=>'";
    case Tok::Eq: return "'='";
    case Tok::EqEq: return "'=='";
    case Tok::NotEq: return "'!='";
    case Tok::Lt: return "'<'";
    case Tok::Le: return "'<='";
    case Tok::Gt: return "'>'";
    case Tok::Ge: return "'>='";
    case Tok::Plus: return "'+'";
    case Tok::Minus: return "'-'";
    case Tok::Star: return "'*'";
    case Tok::Slash: return "'/'";
    case Tok::Percent: return "'%'";
    case Tok::Bang: return "'!'";
    case Tok::AndAnd: return "'&&'";
    case Tok::OrOr: return "'||'";
    case Tok::Bar: return "'|'";
    case Tok::Amp: return "'&'";
    case Tok::Slash2: return "'//'";
    case Tok::DotDot: return "'..'";
    default: break;
  }
  for (const auto& [word, k] : keywords())
    if (k == t) return "'" + std::string(word) + "'";
  return "a token";
}

std::vector<Token> lex(std::string_view src, DiagSink& diags, uint16_t file) { return Lexer(src, diags, file).run(); }

}  // namespace eph::ephapax
