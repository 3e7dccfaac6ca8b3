#include "frontends/value/Text.h"

#include <charconv>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace eph::value {

namespace {

constexpr unsigned kMaxNesting = 1000;            // parentheses, calls and unary minus, per expression
constexpr uint64_t kMaxElements = uint64_t(1) << 26;  // one declaration's elements

enum class Tok { Name, Number, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string_view text;
  unsigned line = 0, col = 0;
};

bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

struct Fail {};  // thrown to unwind after the error is recorded

class Parser {
 public:
  Parser(std::string_view text, Graph& g, ParseError& err) : text_(text), g_(g), err_(err) {}

  void file() {
    while (pos_ < text_.size() || !toks_.empty()) {
      if (!lexLine()) continue;
      line();
    }
  }

 private:
  // ---- lexing: one line at a time ----
  [[noreturn]] void fail(unsigned line, unsigned col, std::string msg) {
    err_ = {line, col, std::move(msg)};
    throw Fail{};
  }
  [[noreturn]] void fail(const Token& t, std::string msg) { fail(t.line, t.col, std::move(msg)); }

  // Tokens of the next line into toks_ (false for a line with none).
  bool lexLine() {
    toks_.clear();
    next_ = 0;
    ++lineNo_;
    size_t lineStart = pos_;
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      char c = text_[pos_];
      unsigned col = unsigned(pos_ - lineStart) + 1;
      if (c == ' ' || c == '\t' || c == '\r') { ++pos_; continue; }
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        break;
      }
      size_t start = pos_;
      Tok kind;
      if (isNameStart(c)) {
        while (pos_ < text_.size() && (isNameStart(text_[pos_]) || isDigit(text_[pos_]))) ++pos_;
        kind = Tok::Name;
      } else if (isDigit(c) || (c == '.' && pos_ + 1 < text_.size() && isDigit(text_[pos_ + 1]))) {
        while (pos_ < text_.size() && (isDigit(text_[pos_]) || text_[pos_] == '.')) ++pos_;
        if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
          size_t e = pos_ + 1;
          if (e < text_.size() && (text_[e] == '+' || text_[e] == '-')) ++e;
          if (e < text_.size() && isDigit(text_[e])) {
            pos_ = e;
            while (pos_ < text_.size() && isDigit(text_[pos_])) ++pos_;
          }
        }
        kind = Tok::Number;
      } else if (std::string_view("=[](),+-*/^").find(c) != std::string_view::npos) {
        ++pos_;
        kind = Tok::Punct;
      } else {
        fail(lineNo_, col, std::string("unexpected character '") + c + "'");
      }
      toks_.push_back({kind, text_.substr(start, pos_ - start), lineNo_, col});
    }
    endCol_ = unsigned(pos_ - lineStart) + 1;
    if (pos_ < text_.size()) ++pos_;  // the newline
    return !toks_.empty();
  }

  const Token& peek(size_t ahead = 0) {
    static const Token none;
    if (next_ + ahead < toks_.size()) return toks_[next_ + ahead];
    end_ = {Tok::End, "", lineNo_, endCol_};
    return ahead == 0 || next_ + ahead == toks_.size() ? end_ : none;
  }
  Token take() {
    Token t = peek();
    if (next_ < toks_.size()) ++next_;
    return t;
  }
  bool isPunct(const Token& t, char c) { return t.kind == Tok::Punct && t.text.size() == 1 && t.text[0] == c; }
  std::string describe(const Token& t) { return t.kind == Tok::End ? "the end of the line" : "'" + std::string(t.text) + "'"; }
  void expect(char c, std::string_view what) {
    const Token& t = peek();
    if (!isPunct(t, c)) fail(t, "expected '" + std::string(1, c) + "' " + std::string(what) + ", found " + describe(t));
    take();
  }

  double number(const Token& t, bool negative) {
    double v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec == std::errc::result_out_of_range)
      fail(t, "number '" + std::string(negative ? "-" : "") + std::string(t.text) + "' is out of range for a float64");
    if (ec != std::errc() || p != t.text.data() + t.text.size()) fail(t, "malformed number '" + std::string(t.text) + "'");
    return negative ? -v : v;
  }
  // An array size or index ("array size", "index"): a non-negative integer below kMaxElements.
  uint64_t integer(const Token& t, std::string_view noun) {
    std::string what(noun);
    if (t.kind != Tok::Number) fail(t, "expected an " + what + ", found " + describe(t));
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    bool whole = p == t.text.data() + t.text.size();
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && whole && v >= kMaxElements))
      fail(t, what + " " + std::string(t.text) + " is out of range (at most " + std::to_string(kMaxElements - 1) + ")");
    if (ec != std::errc() || !whole) fail(t, "expected an " + what + " (a whole number), found " + describe(t));
    return v;
  }
  // NUMBER or '-' NUMBER.
  double signedNumber(std::string_view what) {
    bool neg = isPunct(peek(), '-');
    if (neg) take();
    const Token& t = peek();
    if (t.kind != Tok::Number) fail(t, std::string(what) + " must be a number, found " + describe(t));
    return number(take(), neg);
  }

  // ---- declarations ----
  struct Name {
    enum { Leaf, Let } kind;
    NodeId node;     // Let: the node; Leaf: the first element
    uint32_t count;  // Leaf
    bool array;
    unsigned line;
  };

  void declare(const Token& t) {
    OpKind k;
    if (callByName(t.text, k) || findCustomOp(t.text) >= 0)
      fail(t, "'" + std::string(t.text) + "' is the name of an op; pick another name");
    if (t.text == "param" || t.text == "const" || t.text == "let" || t.text == "residual")
      fail(t, "'" + std::string(t.text) + "' is a keyword; pick another name");
    auto it = names_.find(std::string(t.text));
    if (it != names_.end())
      fail(t, "redeclaration of '" + std::string(t.text) + "' (declared on line " + std::to_string(it->second.line) + ")");
  }

  void line() {
    Token kw = take();
    if (kw.kind != Tok::Name) fail(kw, "expected 'param', 'const', 'let' or 'residual', found " + describe(kw));
    if (kw.text == "param" || kw.text == "const") {
      Token name = take();
      if (name.kind != Tok::Name) fail(name, "expected a name after '" + std::string(kw.text) + "', found " + describe(name));
      declare(name);
      bool array = false;
      uint64_t count = 1;
      if (isPunct(peek(), '[')) {
        take();
        Token n = take();
        count = integer(n, "array size");
        if (count == 0) fail(n, "an array needs at least one element");
        array = true;
        expect(']', "after the array size");
      }
      expect('=', "before the values");
      std::vector<double> vs;
      while (peek().kind != Tok::End) vs.push_back(signedNumber("a value"));
      if (vs.size() != count)
        fail(vs.size() < count ? peek() : name, "'" + std::string(name.text) + "' needs " + std::to_string(count) +
                                                     (count == 1 ? " value" : " values") + ", got " + std::to_string(vs.size()));
      auto leaves = g_.leaves(std::string(name.text), kw.text == "param", array, vs);
      names_[std::string(name.text)] = {Name::Leaf, leaves[0].id(), uint32_t(count), array, name.line};
    } else if (kw.text == "let") {
      Token name = take();
      if (name.kind != Tok::Name) fail(name, "expected a name after 'let', found " + describe(name));
      declare(name);
      expect('=', "after the name");
      Value v = expr();
      endOfLine();
      if (g_.nameOf(v.id()).empty() && !g_.isLeaf(v.id()) && g_.node(v.id()).kind != OpKind::Literal) g_.name(v, std::string(name.text));
      names_[std::string(name.text)] = {Name::Let, v.id(), 1, false, name.line};
    } else if (kw.text == "residual") {
      Value v = expr();
      endOfLine();
      g_.residual(v);
    } else {
      fail(kw, "expected 'param', 'const', 'let' or 'residual', found " + describe(kw));
    }
  }

  void endOfLine() {
    const Token& t = peek();
    if (t.kind == Tok::End) return;
    if (isPunct(t, ')')) fail(t, "unbalanced parentheses: this ')' closes nothing");
    fail(t, "unexpected " + describe(t) + " after the expression");
  }

  // ---- expressions ----
  struct Depth {
    Parser& p;
    Depth(Parser& p, const Token& at) : p(p) {
      if (++p.depth_ > kMaxNesting)
        p.fail(at, "expression nested more than " + std::to_string(kMaxNesting) + " levels deep; name a part with 'let'");
    }
    ~Depth() { --p.depth_; }
  };

  Value expr() {
    Value v = term();
    while (isPunct(peek(), '+') || isPunct(peek(), '-')) {
      char op = take().text[0];
      Value r = term();
      v = op == '+' ? v + r : v - r;
    }
    return v;
  }
  Value term() {
    Value v = unary();
    while (isPunct(peek(), '*') || isPunct(peek(), '/')) {
      char op = take().text[0];
      Value r = unary();
      v = op == '*' ? v * r : v / r;
    }
    return v;
  }
  Value unary() {
    if (isPunct(peek(), '-')) {
      Token minus = take();
      Depth d(*this, minus);
      // "-2" is the number -2 (but "-2^x" is -(2^x)).
      if (peek().kind == Tok::Number && !isPunct(peek(1), '^')) return g_.literal(number(take(), true));
      return -unary();
    }
    return power();
  }
  Value power() {
    Value base = atom();
    if (!isPunct(peek(), '^')) return base;
    Token caret = take();
    Depth d(*this, caret);
    return g_.op(OpKind::Pow, std::vector<Value>{base, unary()});
  }
  Value atom() {
    Token t = take();
    if (t.kind == Tok::Number) return g_.literal(number(t, false));
    if (isPunct(t, '(')) {
      Depth d(*this, t);
      Value v = expr();
      if (!isPunct(peek(), ')'))
        fail(peek(), "unbalanced parentheses: expected ')' to close the '(' at column " + std::to_string(t.col) +
                         ", found " + describe(peek()));
      take();
      return v;
    }
    if (t.kind != Tok::Name) {
      if (isPunct(t, ')')) fail(t, "unbalanced parentheses: this ')' closes nothing");
      fail(t, "expected an expression, found " + describe(t));
    }
    if (isPunct(peek(), '(')) return call(t);
    auto it = names_.find(std::string(t.text));
    if (it == names_.end()) {
      OpKind k;
      if (callByName(t.text, k) || findCustomOp(t.text) >= 0) fail(t, "'" + std::string(t.text) + "' is an op: call it with '('");
      fail(t, "unknown name '" + std::string(t.text) + "'");
    }
    const Name& n = it->second;
    if (n.kind == Name::Let) return g_.at(n.node);
    if (!isPunct(peek(), '[')) {
      if (n.array)
        fail(t, "'" + std::string(t.text) + "' is an array of " + std::to_string(n.count) + ": use " + std::string(t.text) +
                    "[0] .. " + std::string(t.text) + "[" + std::to_string(n.count - 1) + "]");
      return g_.at(n.node);
    }
    take();
    Token idx = peek();
    if (!n.array) fail(t, "'" + std::string(t.text) + "' is not an array");
    uint64_t i = integer(take(), "index");
    if (i >= n.count)
      fail(idx, "index " + std::to_string(i) + " is out of range for '" + std::string(t.text) + "' (" +
                    std::to_string(n.count) + " elements)");
    expect(']', "after the index");
    return g_.at(n.node + NodeId(i));
  }

  Value call(const Token& name) {
    Token open = take();
    Depth d(*this, open);
    OpKind k;
    int64_t custom = -1;
    int arity;
    if (callByName(name.text, k)) {
      arity = opInfo(k).arity;
      if (k == OpKind::Clamp) arity = 3;
    } else if ((custom = findCustomOp(name.text)) >= 0) {
      k = OpKind::Custom;
      arity = int(customOp(uint32_t(custom)).arity);
    } else {
      fail(name, "unknown call '" + std::string(name.text) + "'");
    }
    std::vector<Value> args;
    double lo = 0, hi = 0;
    bool bounded = false;
    for (;;) {
      args.push_back(expr());
      if (!isPunct(peek(), ',')) break;
      take();
      if (k == OpKind::Clamp && args.size() == 1) {
        // clamp(x, lo, hi): lo and hi are numbers (part of the signature).
        lo = clampBound();
        if (!isPunct(peek(), ',')) fail(name, "'clamp' takes 3 arguments (x, lo, hi), got 2");
        take();
        hi = clampBound();
        bounded = true;
        break;
      }
    }
    if (!isPunct(peek(), ')'))
      fail(peek(), "unbalanced parentheses: expected ')' to close the call of '" + std::string(name.text) + "', found " +
                       describe(peek()));
    take();
    if (k == OpKind::Clamp) {
      if (!bounded)
        fail(name, "'clamp' takes 3 arguments (x, lo, hi), got 1");
    } else if (arity >= 0 && int(args.size()) != arity) {
      fail(name, "'" + std::string(name.text) + "' takes " + std::to_string(arity) + (arity == 1 ? " argument" : " arguments") +
                     ", got " + std::to_string(args.size()));
    }
    if (k == OpKind::Custom) return g_.custom(uint32_t(custom), args);
    return g_.op(k, args, lo, hi);
  }

  // A clamp bound: a number, or '-' and a number, followed by ',' or ')'.
  double clampBound() {
    const Token& at = peek();
    bool neg = isPunct(at, '-');
    const Token& num = peek(neg ? 1 : 0);
    const Token& after = peek(neg ? 2 : 1);
    if (num.kind != Tok::Number || !(isPunct(after, ',') || isPunct(after, ')')))
      fail(at, "clamp bounds must be numbers, found " + describe(at));
    return signedNumber("a clamp bound");
  }

  std::string_view text_;
  Graph& g_;
  ParseError& err_;
  size_t pos_ = 0;
  unsigned lineNo_ = 0, endCol_ = 1, depth_ = 0;
  std::vector<Token> toks_;
  size_t next_ = 0;
  Token end_;
  std::unordered_map<std::string, Name> names_;
};

}  // namespace

bool parse(std::string_view text, Graph& out, ParseError& err) {
  out = Graph();
  try {
    Parser(text, out, err).file();
  } catch (const Fail&) {
    return false;
  }
  return true;
}

std::string ParseError::render(std::string_view file, std::string_view text) const {
  std::string out = std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error[E300]: " + message + "\n";
  size_t start = 0;
  for (unsigned l = 1; l < line && start <= text.size(); ++l) {
    size_t nl = text.find('\n', start);
    start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
  }
  if (start > text.size()) return out;
  size_t end = text.find('\n', start);
  std::string_view src = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  if (!src.empty() && src.back() == '\r') src.remove_suffix(1);
  if (src.size() > 400) return out;
  std::string shown, pad;
  for (size_t i = 0; i < src.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(src[i]);
    shown += (c < 0x20 && c != '\t') || c == 0x7f ? '?' : src[i];
    if (i + 1 < col) pad += c == '\t' ? '\t' : ' ';
  }
  return out + "  " + shown + "\n  " + pad + "^\n";
}

// ---- printing ---------------------------------------------------------------------

std::string formatNumber(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, p);
}

namespace {

constexpr unsigned kMaxInlineDepth = 64;

class Printer {
 public:
  explicit Printer(const Graph& g) : g_(g), letName_(g.nodes().size()) {}

  std::string run() {
    const size_t n = g_.nodes().size();
    std::unordered_set<std::string> taken;
    for (const LeafDecl& d : g_.decls()) {
      taken.insert(d.name);
      out_ += (d.trainable ? "param " : "const ") + d.name + (d.array ? "[" + std::to_string(d.count) + "]" : "") + " =";
      for (uint32_t i = 0; i < d.count; ++i) out_ += " " + formatNumber(g_.node(d.first + i).value);
      out_ += "\n";
    }
    // Uses among the nodes the residuals reach.
    std::vector<uint32_t> uses(n, 0);
    std::vector<char> reached(n, 0);
    for (NodeId r : g_.residuals()) reached[r] = 1;
    for (size_t k = n; k-- > 0;)
      if (reached[k])
        for (NodeId a : g_.args(NodeId(k))) ++uses[a], reached[a] = 1;
    for (NodeId r : g_.residuals()) ++uses[r];
    // Which nodes get a `let`, in id order (arguments first), bounding the inline depth.
    std::vector<unsigned> depth(n, 0);
    std::vector<NodeId> lets;
    for (NodeId k = 0; k < n; ++k) {
      if (!reached[k] || g_.isLeaf(k) || g_.node(k).kind == OpKind::Literal) continue;
      unsigned d = 1;
      for (NodeId a : g_.args(k)) d = std::max(d, letName_[a].empty() ? depth[a] + 1 : 1);
      depth[k] = d;
      if (!g_.nameOf(k).empty() || uses[k] > 1 || d >= kMaxInlineDepth) {
        std::string name = g_.nameOf(k).empty() ? "t" + std::to_string(k) : g_.nameOf(k);
        for (int i = 1; taken.count(name); ++i) name = (g_.nameOf(k).empty() ? "t" + std::to_string(k) : g_.nameOf(k)) + "_" + std::to_string(i);
        taken.insert(name);
        letName_[k] = name;
        lets.push_back(k);
        depth[k] = 0;
      }
    }
    for (NodeId k : lets) {
      out_ += "let " + letName_[k] + " = ";
      inlineExpr(k, 0);
      out_ += "\n";
    }
    for (NodeId r : g_.residuals()) {
      out_ += "residual ";
      expr(r, 0);
      out_ += "\n";
    }
    return out_;
  }

 private:
  // Precedence: 1 + -, 2 * /, 3 unary minus (and negative numbers), 4 ^, 5 atoms.
  unsigned level(NodeId k) const {
    const Node& n = g_.node(k);
    if (!letName_[k].empty() || g_.isLeaf(k)) return 5;
    switch (n.kind) {
      case OpKind::Literal: return std::signbit(n.value) ? 3 : 5;
      case OpKind::Add: case OpKind::Sub: return 1;
      case OpKind::Mul: case OpKind::Div: return 2;
      case OpKind::Neg: return 3;
      case OpKind::Pow: return 4;
      default: return 5;
    }
  }
  // A reference to node k where the context needs precedence >= min.
  void expr(NodeId k, unsigned min) {
    if (!letName_[k].empty()) return void(out_ += letName_[k]);
    bool parens = level(k) < min;
    if (parens) out_ += "(";
    inlineExpr(k, min);
    if (parens) out_ += ")";
  }
  // Node k's own expression (even when it has a let name).
  void inlineExpr(NodeId k, unsigned) {
    const Node& n = g_.node(k);
    auto args = g_.args(k);
    auto binary = [&](const char* op, unsigned lv) {
      expr(args[0], lv);
      out_ += op;
      expr(args[1], lv + 1);
    };
    switch (n.kind) {
      case OpKind::Param: case OpKind::Const: out_ += g_.leafName(k); return;
      case OpKind::Literal: out_ += formatNumber(n.value); return;
      case OpKind::Add: return binary(" + ", 1);
      case OpKind::Sub: return binary(" - ", 1);
      case OpKind::Mul: return binary(" * ", 2);
      case OpKind::Div: return binary(" / ", 2);
      case OpKind::Neg: {
        out_ += "-";
        // -(2) stays the negation of 2: "-2" would read back as the number -2.
        bool number = letName_[args[0]].empty() && g_.node(args[0]).kind == OpKind::Literal;
        if (number) out_ += "(";
        expr(args[0], number ? 0 : 3);
        if (number) out_ += ")";
        return;
      }
      case OpKind::Pow:
        expr(args[0], 5);
        out_ += " ^ ";
        expr(args[1], 3);
        return;
      default: break;
    }
    out_ += n.kind == OpKind::Custom ? customOp(n.aux).name : std::string(opInfo(n.kind).name);
    out_ += "(";
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) out_ += ", ";
      expr(args[i], 0);
    }
    if (n.kind == OpKind::Clamp) out_ += ", " + formatNumber(n.value) + ", " + formatNumber(n.hi);
    out_ += ")";
  }

  const Graph& g_;
  std::vector<std::string> letName_;
  std::string out_;
};

}  // namespace

std::string print(const Graph& g) { return Printer(g).run(); }

}  // namespace eph::value
