#include "ir/Parser.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "ir/OpTable.h"

namespace eph::ir {
namespace {

enum class Tok {
  End, Ident, ValueRef /* %x */, Symbol /* @f */, TypeVar /* !T */, Int, Float, String,
  LParen, RParen, LBrace, RBrace, LAngle, RAngle, LBracket, RBracket,
  Comma, Colon, Equal, Pipe, Arrow, Error,
};

struct Token {
  Tok kind = Tok::End;
  std::string text;  // identifier / name without sigil / literal spelling / string contents
  std::string error;  // Tok::Error: what is wrong
  unsigned line = 1, col = 1;
};

// How deeply regions, types and attribute arrays may nest: deeper input is an
// error, not a stack overflow.
constexpr unsigned kMaxNesting = 200;

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::End: return "end of input";
    case Tok::ValueRef: return "'%" + t.text + "'";
    case Tok::Symbol: return "'@" + t.text + "'";
    case Tok::TypeVar: return "'!" + t.text + "'";
    case Tok::String: return "string " + quoteString(t.text);
    default: return "'" + t.text + "'";
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  Token next() {
    skipSpace();
    Token t;
    t.line = line_;
    t.col = col_;
    if (pos_ >= src_.size()) return t;
    char c = src_[pos_];
    auto single = [&](Tok k) {
      t.kind = k;
      t.text = std::string(1, c);
      advance();
      return t;
    };
    switch (c) {
      case '(': return single(Tok::LParen);
      case ')': return single(Tok::RParen);
      case '{': return single(Tok::LBrace);
      case '}': return single(Tok::RBrace);
      case '<': return single(Tok::LAngle);
      case '>': return single(Tok::RAngle);
      case '[': return single(Tok::LBracket);
      case ']': return single(Tok::RBracket);
      case ',': return single(Tok::Comma);
      case ':': return single(Tok::Colon);
      case '=': return single(Tok::Equal);
      case '|': return single(Tok::Pipe);
      case '"': return lexString(t);
      case '%': return lexSigil(t, Tok::ValueRef);
      case '@': return lexSigil(t, Tok::Symbol);
      case '!': return lexSigil(t, Tok::TypeVar);
      default: break;
    }
    if (c == '-' && peekChar(1) == '>') {
      advance();
      advance();
      t.kind = Tok::Arrow;
      t.text = "->";
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') return lexNumber(t);
    if (isIdentStart(c)) {
      t.kind = Tok::Ident;
      while (pos_ < src_.size() && isIdentChar(src_[pos_])) t.text += advance();
      return t;
    }
    t.kind = Tok::Error;
    t.text = std::string(1, c);
    t.error = std::isprint(static_cast<unsigned char>(c))
                  ? "unexpected character '" + t.text + "'"
                  : "unexpected character " + quoteString(t.text);
    advance();
    return t;
  }

 private:
  static bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
  static bool isIdentChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }
  char peekChar(size_t k) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  char advance() {
    char c = src_[pos_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  void skipSpace() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == '/' && peekChar(1) == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        advance();
      } else {
        break;
      }
    }
  }
  // %name, @name, !name; the name may be a quoted string (@"my-kernel").
  Token lexSigil(Token& t, Tok kind) {
    char sigil = advance();
    if (peekChar(0) == '"') {
      lexString(t);
      if (t.kind == Tok::Error) return t;
      if (t.text.empty()) return errorToken(t, std::string("empty name after '") + sigil + "'");
      t.kind = kind;
      return t;
    }
    while (pos_ < src_.size() && isIdentChar(src_[pos_])) t.text += advance();
    if (t.text.empty()) {
      t.text = std::string(1, sigil);
      return errorToken(t, "expected a name after '" + t.text + "'");
    }
    t.kind = kind;
    return t;
  }
  Token errorToken(Token& t, std::string msg) {
    t.kind = Tok::Error;
    t.error = std::move(msg);
    return t;
  }
  static int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // A string literal; escapes: \" \\ \n \t \r \xHH.
  Token lexString(Token& t) {
    advance();
    while (pos_ < src_.size() && src_[pos_] != '"' && src_[pos_] != '\n') {
      char c = advance();
      if (c == '\\' && pos_ < src_.size() && src_[pos_] != '\n') {
        char e = advance();
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case '"':
          case '\\': c = e; break;
          case 'x': {
            int hi = hexDigit(peekChar(0)), lo = hi < 0 ? -1 : hexDigit(peekChar(1));
            if (lo < 0) return errorToken(t, "expected two hex digits after '\\x' in a string");
            advance();
            advance();
            c = static_cast<char>(hi * 16 + lo);
            break;
          }
          default:
            return errorToken(t, std::string("unknown escape '\\") + e + "' in a string");
        }
      }
      t.text += c;
    }
    if (pos_ >= src_.size() || src_[pos_] != '"') return errorToken(t, "unterminated string");
    advance();
    t.kind = Tok::String;
    return t;
  }
  Token lexNumber(Token& t) {
    if (src_[pos_] == '-' || src_[pos_] == '+') t.text += advance();
    // inf / nan spelled as words after a sign are floats too.
    if (src_.substr(pos_, 3) == "inf" || src_.substr(pos_, 3) == "nan") {
      t.text += src_.substr(pos_, 3);
      for (int k = 0; k < 3; ++k) advance();
      t.kind = Tok::Float;
      return t;
    }
    bool isFloat = false;
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        t.text += advance();
      } else if (c == '.' || c == 'e' || c == 'E') {
        isFloat = true;
        t.text += advance();
        if ((c == 'e' || c == 'E') && (peekChar(0) == '-' || peekChar(0) == '+')) t.text += advance();
      } else {
        break;
      }
    }
    if (t.text == "-" || t.text == "+") return errorToken(t, "unexpected character '" + t.text + "'");
    t.kind = isFloat ? Tok::Float : Tok::Int;
    return t;
  }

  std::string_view src_;
  size_t pos_ = 0;
  unsigned line_ = 1, col_ = 1;
};

class Parser {
 public:
  Parser(Context& ctx, std::string_view text, std::string_view fileName)
      : ctx_(ctx), lex_(text), file_(ctx.intern(fileName)) {
    tok_ = lex_.next();
    ahead_ = lex_.next();
    noteLexError();
  }

  Expected<std::unique_ptr<Module>> module() {
    auto m = std::make_unique<Module>(ctx_);
    m->sourceName = *file_;
    while (tok_.kind != Tok::End && !error_) {
      if (!function(*m)) return *error_;
    }
    if (error_) return *error_;
    return m;
  }

  Expected<const Type*> typeOnly() {
    const Type* t = type();
    if (!t) return *error_;
    if (error_) return *error_;
    if (tok_.kind != Tok::End) {
      fail("I001", "expected end of type, got " + describe(tok_));
      return *error_;
    }
    return t;
  }

 private:
  // ---- tokens and errors --------------------------------------------------
  Loc here() const { return Loc{file_, tok_.line, tok_.col}; }
  void consume() {
    tok_ = ahead_;
    ahead_ = lex_.next();
    noteLexError();
  }
  // No rule accepts a token the lexer rejected, so reaching one is the error
  // to report, whatever the parser would have said about it.
  void noteLexError() {
    if (tok_.kind == Tok::Error && !error_) error_ = Error{here(), tok_.error, "I001"};
  }
  // Records the first error. At a token the lexer rejected, the lexer's reason
  // is the clearer message.
  bool fail(const char* code, std::string msg, Loc at = {}) {
    if (!error_) {
      if (tok_.kind == Tok::Error && !at.known()) msg = tok_.error, code = "I001";
      error_ = Error{at.known() ? at : here(), std::move(msg), code};
    }
    return false;
  }
  // Counts one level of nesting; false (with an error) past kMaxNesting.
  bool enter() {
    if (++depth_ <= kMaxNesting) return true;
    return fail("I007", "nesting is too deep (more than " + std::to_string(kMaxNesting) +
                " levels of regions, types or attribute arrays)");
  }
  struct Leave {
    unsigned& depth;
    ~Leave() { --depth; }
  };
  bool expect(Tok kind, const char* what) {
    if (tok_.kind != kind) return fail("I001", std::string("expected ") + what + ", got " + describe(tok_));
    consume();
    return true;
  }
  bool isIdent(const char* word) const { return tok_.kind == Tok::Ident && tok_.text == word; }

  // ---- types --------------------------------------------------------------
  bool uintLiteral(unsigned& out, const char* what) {
    if (tok_.kind != Tok::Int) return fail("I001", std::string("expected ") + what + ", got " + describe(tok_));
    auto r = std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), out);
    if (r.ec != std::errc() || r.ptr != tok_.text.data() + tok_.text.size())
      return fail("I002", std::string("expected ") + what + " (a non-negative 32-bit integer), got '" +
                  tok_.text + "'");
    consume();
    return true;
  }

  bool typeList(std::vector<const Type*>& out, Tok close) {
    if (tok_.kind == close) return true;
    do {
      const Type* t = type();
      if (!t) return false;
      out.push_back(t);
    } while (tok_.kind == Tok::Comma && (consume(), true));
    return true;
  }

  const Type* type() {
    Leave leave{depth_};
    if (!enter()) return nullptr;
    Loc at = here();
    if (tok_.kind == Tok::TypeVar) {
      std::string n = tok_.text;
      consume();
      return ctx_.varType(n);
    }
    if (tok_.kind != Tok::Ident) {
      fail("I001", "expected a type, got " + describe(tok_));
      return nullptr;
    }
    std::string w = tok_.text;
    if (w == "bool") return consume(), ctx_.boolType();
    if (w == "box") return consume(), ctx_.boxType();
    if (w.size() >= 2 && w.size() <= 4 && (w[0] == 'i' || w[0] == 'u' || w[0] == 'f') &&
        std::all_of(w.begin() + 1, w.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      unsigned bits = static_cast<unsigned>(std::stoul(w.substr(1)));
      bool okInt = bits == 8 || bits == 16 || bits == 32 || bits == 64;
      bool okFloat = bits == 16 || bits == 32 || bits == 64;
      if (w[0] == 'f' ? okFloat : okInt) {
        consume();
        return w[0] == 'f' ? ctx_.floatType(bits) : ctx_.intType(bits, w[0] == 'i');
      }
      fail("I003", "unknown type '" + w + "'", at);
      return nullptr;
    }
    if (w == "fn") {
      consume();
      std::vector<const Type*> params, results;
      if (!expect(Tok::LParen, "'('") || !typeList(params, Tok::RParen) ||
          !expect(Tok::RParen, "')'") || !expect(Tok::Arrow, "'->'") ||
          !expect(Tok::LParen, "'('") || !typeList(results, Tok::RParen) ||
          !expect(Tok::RParen, "')'"))
        return nullptr;
      return ctx_.functionType(std::move(params), std::move(results));
    }
    bool known = w == "vec" || w == "array" || w == "struct" || w == "sum" || w == "buffer" || w == "coopmat";
    if (!known) {
      fail("I003", "unknown type '" + w + "'", at);
      return nullptr;
    }
    consume();
    if (!expect(Tok::LAngle, "'<'")) return nullptr;
    const Type* result = nullptr;
    if (w == "struct" || w == "sum") {
      std::vector<const Type*> members;
      if (!typeList(members, Tok::RAngle)) return nullptr;
      result = w == "struct" ? ctx_.structType(std::move(members)) : ctx_.sumType(std::move(members));
    } else {
      const Type* elem = type();
      if (!elem || !expect(Tok::Comma, "','")) return nullptr;
      if (w == "buffer") {
        result = bufferRest(elem);
        if (!result) return nullptr;
      } else if (w == "coopmat") {
        Loc nAt = here();
        unsigned rows = 0, cols = 0;
        if (!uintLiteral(rows, "a row count") || !expect(Tok::Comma, "','") || !uintLiteral(cols, "a column count"))
          return nullptr;
        CoopScope scope = CoopScope::Subgroup;
        CoopUse use = CoopUse::Any;
        if (tok_.kind == Tok::Comma) {  // , workgroup, a|b|acc
          consume();
          Loc sAt = here();
          std::string sw = tok_.kind == Tok::Ident ? std::string(tok_.text) : "";
          if (sw != "workgroup") {
            fail("I008", "expected 'workgroup' after a cooperative matrix's columns", sAt);
            return nullptr;
          }
          consume();
          if (!expect(Tok::Comma, "','")) return nullptr;
          Loc uAt = here();
          std::string uw = tok_.kind == Tok::Ident ? std::string(tok_.text) : "";
          use = uw == "a" ? CoopUse::A : uw == "b" ? CoopUse::B : uw == "acc" ? CoopUse::Acc : CoopUse::Any;
          if (use == CoopUse::Any) {
            fail("I008", "a workgroup's cooperative matrix is 'a', 'b' or 'acc'", uAt);
            return nullptr;
          }
          consume();
          scope = CoopScope::Workgroup;
        }
        const unsigned most = scope == CoopScope::Workgroup ? 256 : 64;
        if (!(elem->isInt() || elem->isFloat()) || rows == 0 || cols == 0 || rows > most || cols > most) {
          fail("I008",
               "cooperative matrices have 1 to " + std::to_string(most) + " rows and columns of integers or floats",
               nAt);
          return nullptr;
        }
        result = ctx_.coopMatrixType(elem, rows, cols, scope, use);
      } else {
        Loc nAt = here();
        unsigned n = 0;
        if (!uintLiteral(n, "an element count")) return nullptr;
        if (w == "vec" && (!elem->isScalar() || n < 2 || n > 4)) {
          fail("I008", "vectors have 2 to 4 bool, integer or float elements", nAt);
          return nullptr;
        }
        result = w == "vec" ? ctx_.vectorType(elem, n) : ctx_.arrayType(elem, n);
      }
    }
    if (!expect(Tok::RAngle, "'>'")) return nullptr;
    return result;
  }

  const Type* bufferRest(const Type* elem) {
    static const std::pair<const char*, Space> spaces[] = {
        {"host", Space::Host}, {"device", Space::Device}, {"workgroup", Space::Workgroup}};
    static const std::pair<const char*, Ownership> owns[] = {{"linear", Ownership::Linear},
                                                             {"affine", Ownership::Affine},
                                                             {"read", Ownership::Read},
                                                             {"write", Ownership::Write}};
    Space space{};
    Ownership own{};
    bool found = false;
    for (auto& [n, s] : spaces)
      if (isIdent(n)) space = s, found = true;
    if (!found) return fail("I001", "expected a buffer space (host, device, workgroup), got " + describe(tok_)), nullptr;
    consume();
    if (!expect(Tok::Comma, "','")) return nullptr;
    found = false;
    for (auto& [n, o] : owns)
      if (isIdent(n)) own = o, found = true;
    if (!found)
      return fail("I001", "expected a buffer ownership (linear, affine, read, write), got " + describe(tok_)), nullptr;
    consume();
    return ctx_.bufferType(elem, space, own);
  }

  // ---- attributes ---------------------------------------------------------
  bool attrValue(Attr& out) {
    Leave leave{depth_};
    if (!enter()) return false;
    switch (tok_.kind) {
      case Tok::Int: {
        int64_t v = 0;
        const char* b = tok_.text.data() + (tok_.text[0] == '+');
        auto r = std::from_chars(b, tok_.text.data() + tok_.text.size(), v);
        if (r.ec != std::errc()) {  // u64 values beyond i64 are kept by their bits
          uint64_t u = 0;
          auto r2 = std::from_chars(b, tok_.text.data() + tok_.text.size(), u);
          if (r2.ec != std::errc()) return fail("I002", "integer '" + tok_.text + "' is out of range");
          v = static_cast<int64_t>(u);
        }
        out = Attr::integer(v);
        consume();
        return true;
      }
      case Tok::Float: {
        std::string s = tok_.text;
        bool neg = !s.empty() && s[0] == '-';
        std::string body = s.substr(s[0] == '-' || s[0] == '+');
        double v;
        if (body == "inf") v = std::numeric_limits<double>::infinity();
        else if (body == "nan") v = std::numeric_limits<double>::quiet_NaN();
        else {
          auto r = std::from_chars(body.data(), body.data() + body.size(), v);
          if (r.ec == std::errc::result_out_of_range) return fail("I002", "float '" + s + "' is out of range");
          if (r.ec != std::errc() || r.ptr != body.data() + body.size())
            return fail("I002", "invalid float '" + s + "'");
        }
        out = Attr::floating(neg ? -v : v);
        consume();
        return true;
      }
      case Tok::String: out = Attr::string(tok_.text); consume(); return true;
      case Tok::Symbol: out = Attr::symbol(tok_.text); consume(); return true;
      case Tok::LBracket: {
        consume();
        std::vector<Attr> elems;
        while (tok_.kind != Tok::RBracket) {
          Attr a;
          if (!attrValue(a)) return false;
          elems.push_back(std::move(a));
          if (tok_.kind != Tok::Comma) break;
          consume();
        }
        if (!expect(Tok::RBracket, "']'")) return false;
        out = Attr::array(std::move(elems));
        return true;
      }
      case Tok::Ident:
        if (isIdent("true") || isIdent("false")) {
          out = Attr::boolean(tok_.text == "true");
          consume();
          return true;
        }
        if (isIdent("inf") || isIdent("nan")) {  // the printer writes them unsigned
          out = Attr::floating(isIdent("inf") ? std::numeric_limits<double>::infinity()
                                              : std::numeric_limits<double>::quiet_NaN());
          consume();
          return true;
        }
        [[fallthrough]];
      case Tok::TypeVar: {
        const Type* t = type();
        if (!t) return false;
        out = Attr::typeAttr(t);
        return true;
      }
      default: return fail("I001", "expected an attribute value, got " + describe(tok_));
    }
  }

  bool attrDict(std::map<std::string, Attr>& out) {
    if (!expect(Tok::LBrace, "'{'")) return false;
    while (tok_.kind != Tok::RBrace) {
      if (tok_.kind != Tok::Ident && tok_.kind != Tok::String)
        return fail("I001", "expected an attribute name, got " + describe(tok_));
      std::string name = tok_.text;
      Loc at = here();
      consume();
      if (!expect(Tok::Equal, "'='")) return false;
      Attr a;
      if (!attrValue(a)) return false;
      if (out.count(name)) return fail("I005", "attribute '" + name + "' given twice", at);
      out[name] = std::move(a);
      if (tok_.kind != Tok::Comma) break;
      consume();
    }
    return expect(Tok::RBrace, "'}'");
  }

  bool optionalLoc(Loc& loc) {
    if (!isIdent("loc") || ahead_.kind != Tok::LParen) return true;
    consume();
    consume();
    if (tok_.kind != Tok::String) return fail("I001", "expected a file name string in loc(...), got " + describe(tok_));
    const std::string* file = ctx_.intern(tok_.text);
    consume();
    unsigned line = 0, col = 0;
    if (!expect(Tok::Colon, "':'") || !uintLiteral(line, "a line number") ||
        !expect(Tok::Colon, "':'") || !uintLiteral(col, "a column number") ||
        !expect(Tok::RParen, "')'"))
      return false;
    loc = Loc{file, line, col};
    return true;
  }

  // ---- values and scopes --------------------------------------------------
  struct Scope {
    std::unordered_map<std::string, Value*> values;
  };

  bool define(const Token& name, Value* v) {
    for (auto& s : scopes_)
      if (s.values.count(name.text))
        return fail("I005", "value '%" + name.text + "' is defined twice", Loc{file_, name.line, name.col});
    scopes_.back().values[name.text] = v;
    bool numeric = std::all_of(name.text.begin(), name.text.end(),
                               [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!numeric) v->setName(name.text);
    return true;
  }

  Value* lookupValue(const Token& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->values.find(name.text);
      if (f != it->values.end()) return f->second;
    }
    fail("I004", "use of undefined value '%" + name.text + "'", Loc{file_, name.line, name.col});
    return nullptr;
  }

  // ---- functions, regions, ops --------------------------------------------
  bool function(Module& m) {
    Loc at = here();
    FunctionKind kind;
    if (isIdent("kernel")) kind = FunctionKind::Kernel;
    else if (isIdent("device")) kind = FunctionKind::Device;
    else if (isIdent("host")) kind = FunctionKind::Host;
    else return fail("I001", "expected a function ('kernel', 'device' or 'host'), got " + describe(tok_));
    consume();
    if (tok_.kind != Tok::Symbol) return fail("I001", "expected a function name like '@main', got " + describe(tok_));
    std::string name = tok_.text;
    Loc nameAt = here();
    consume();
    if (m.lookup(name)) return fail("I005", "function '@" + name + "' is defined twice", nameAt);

    std::vector<Token> paramNames;
    std::vector<const Type*> params, results;
    if (!expect(Tok::LParen, "'('")) return false;
    while (tok_.kind != Tok::RParen) {
      if (tok_.kind != Tok::ValueRef) return fail("I001", "expected a parameter like '%x: i32', got " + describe(tok_));
      paramNames.push_back(tok_);
      consume();
      if (!expect(Tok::Colon, "':'")) return false;
      const Type* t = type();
      if (!t) return false;
      params.push_back(t);
      if (tok_.kind != Tok::Comma) break;
      consume();
    }
    if (!expect(Tok::RParen, "')'")) return false;
    if (tok_.kind == Tok::Arrow) {
      consume();
      if (tok_.kind == Tok::LParen) {
        consume();
        if (!typeList(results, Tok::RParen) || !expect(Tok::RParen, "')'")) return false;
      } else {
        const Type* t = type();
        if (!t) return false;
        results.push_back(t);
      }
    }
    std::array<unsigned, 3> wg = {1, 1, 1};
    if (isIdent("workgroup")) {
      if (kind != FunctionKind::Kernel) return fail("I008", "only kernels have a workgroup size");
      consume();
      if (!expect(Tok::LParen, "'('")) return false;
      for (int i = 0; i < 3; ++i) {
        if (i && !expect(Tok::Comma, "','")) return false;
        if (!uintLiteral(wg[i], "a workgroup size")) return false;
      }
      if (!expect(Tok::RParen, "')'")) return false;
    }
    std::map<std::string, Attr> attrs;
    if (isIdent("attributes")) {
      consume();
      if (!attrDict(attrs)) return false;
    }
    Loc loc = at;
    if (!optionalLoc(loc)) return false;

    Function* f = m.addFunction(name, kind, ctx_.functionType(params, results), loc);
    f->workgroupSize = wg;
    f->attrs = std::move(attrs);
    scopes_.assign(1, Scope{});
    for (unsigned i = 0; i < paramNames.size(); ++i)
      if (!define(paramNames[i], f->param(i))) return false;
    if (!expect(Tok::LBrace, "'{' to start the function body")) return false;
    if (!opsUntilBrace(f->body())) return false;
    return expect(Tok::RBrace, "'}'");
  }

  bool opsUntilBrace(Region& r) {
    while (tok_.kind != Tok::RBrace) {
      if (tok_.kind == Tok::End) return fail("I001", "expected '}', got end of input");
      if (!op(r)) return false;
    }
    return true;
  }

  bool region(Region& r) {
    Leave leave{depth_};
    if (!enter()) return false;
    if (!expect(Tok::LBrace, "'{'")) return false;
    scopes_.emplace_back();
    if (tok_.kind == Tok::Pipe) {
      consume();
      while (tok_.kind != Tok::Pipe) {
        if (tok_.kind != Tok::ValueRef) return fail("I001", "expected a region argument like '%i: i32', got " + describe(tok_));
        Token n = tok_;
        consume();
        if (!expect(Tok::Colon, "':'")) return false;
        const Type* t = type();
        if (!t) return false;
        if (!define(n, r.addArg(t))) return false;
        if (tok_.kind != Tok::Comma) break;
        consume();
      }
      if (!expect(Tok::Pipe, "'|'")) return false;
    }
    if (!opsUntilBrace(r)) return false;
    scopes_.pop_back();
    return expect(Tok::RBrace, "'}'");
  }

  // At `%a, %b =`: the results of the next op, not operands of an op that has
  // none (`barrier` followed by `%x = ...` on the next line).
  bool atResultList() const {
    if (ahead_.kind == Tok::Equal) return true;
    if (ahead_.kind != Tok::Comma) return false;
    Lexer peek = lex_;
    while (true) {
      if (peek.next().kind != Tok::ValueRef) return false;
      Token after = peek.next();
      if (after.kind == Tok::Equal) return true;
      if (after.kind != Tok::Comma) return false;
    }
  }

  static std::string countText(int n, const char* noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
  }

  bool op(Region& r) {
    Loc at = here();
    std::vector<Token> resultNames;
    if (tok_.kind == Tok::ValueRef) {
      while (true) {
        if (tok_.kind != Tok::ValueRef) return fail("I001", "expected a result name, got " + describe(tok_));
        resultNames.push_back(tok_);
        consume();
        if (tok_.kind != Tok::Comma) break;
        consume();
      }
      if (!expect(Tok::Equal, "'='")) return false;
    }
    if (tok_.kind != Tok::Ident) return fail("I001", "expected an op name, got " + describe(tok_));
    Loc nameAt = here();
    const OpInfo* info = OpTable::get().lookup(tok_.text);
    if (!info) return fail("I003", "unknown op '" + tok_.text + "'", nameAt);
    consume();

    std::vector<Value*> operands;
    if (tok_.kind == Tok::ValueRef && !atResultList()) {
      while (true) {
        if (tok_.kind != Tok::ValueRef) return fail("I001", "expected an operand, got " + describe(tok_));
        Value* v = lookupValue(tok_);
        if (!v) return false;
        operands.push_back(v);
        consume();
        if (tok_.kind != Tok::Comma) break;
        consume();
      }
    }
    std::map<std::string, Attr> attrs;
    if (tok_.kind == Tok::LBrace && (ahead_.kind == Tok::Ident || ahead_.kind == Tok::String)) {
      // `{name = ...` is an attribute dictionary; a region starts with an op or '|'.
      // `{name 1}` (a forgotten '=') is a broken dictionary, not a region.
      Lexer peek = lex_;
      Token third = peek.next();
      bool literal = third.kind == Tok::Int || third.kind == Tok::Float ||
                     third.kind == Tok::String || third.kind == Tok::Symbol ||
                     third.kind == Tok::LBracket;
      bool isDict = third.kind == Tok::Equal ||
                    (literal && !OpTable::get().lookup(ahead_.text));
      if (isDict && !attrDict(attrs)) return false;
    }
    std::vector<const Type*> types;
    if (tok_.kind == Tok::Colon) {
      consume();
      if (!typeList(types, Tok::LBrace)) return false;
    }
    std::string opName(info->name);
    if (types.size() != resultNames.size())
      return fail("I006", "'" + opName + "' names " + countText(int(resultNames.size()), "result") + " but gives " +
                      countText(int(types.size()), "type"), at);
    if (info->numOperands != kVariadic && int(operands.size()) != info->numOperands)
      return fail("I006", "'" + opName + "' takes " + countText(info->numOperands, "operand") + ", got " +
                      std::to_string(operands.size()), nameAt);
    if (info->numResults != kVariadic && int(types.size()) != info->numResults)
      return fail("I006", "'" + opName + "' has " + countText(info->numResults, "result") + ", got " +
                      std::to_string(types.size()), nameAt);

    auto op = Op::create(*info, operands, types, std::move(attrs), 0, at);
    Op* raw = r.append(std::move(op));
    while (tok_.kind == Tok::LBrace) {
      if (!region(raw->addRegion())) return false;
    }
    if (info->numRegions != kVariadic && int(raw->numRegions()) != info->numRegions)
      return fail("I006", "'" + opName + "' has " + countText(info->numRegions, "region") + ", got " +
                      std::to_string(raw->numRegions()), nameAt);
    Loc loc = at;
    if (!optionalLoc(loc)) return false;
    raw->setLoc(loc);
    for (unsigned i = 0; i < resultNames.size(); ++i)
      if (!define(resultNames[i], raw->result(i))) return false;
    return true;
  }

  Context& ctx_;
  Lexer lex_;
  const std::string* file_;
  Token tok_, ahead_;
  std::optional<Error> error_;
  std::vector<Scope> scopes_;
  unsigned depth_ = 0;
};

}  // namespace

Expected<std::unique_ptr<Module>> parseModule(Context& ctx, std::string_view text,
                                              std::string_view fileName) {
  return Parser(ctx, text, fileName).module();
}

Expected<const Type*> parseType(Context& ctx, std::string_view text) {
  return Parser(ctx, text, "<type>").typeOnly();
}

}  // namespace eph::ir
