// Diagnostics: source locations, the one diagnostic type every part of ephc
// reports through (the IR parser, the verifier, the passes, the interpreter and
// every frontend), its renderer, and Expected<T>. A recoverable user error
// (malformed input, a type error, an interpreter trap) is a Diagnostic, never
// an exception; internal invariants use assert instead. Rendered as
//
//   file:line:col: error[CODE]: message
//     the source line
//     ^~~~ (under the span)
//     hint: what usually fixes it
//
// Codes name the kind of error, stable across releases: E… for the Ephapax
// frontend, I… IR parse, V… verifier, L… linearity, P… other passes.
// docs/errors.md lists every code with an example; ErrorCodesTest keeps the
// code tables (irErrorCodes(), each frontend's), the sources and the doc in step.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace eph {

// A position in some source file (an .eir, an .eph, ...). line/col are 1-based;
// line 0 means "unknown". `file` is interned (by the IR context, or internName),
// so copying is cheap; null means "the input being compiled" (its name is given
// when rendering).
struct Loc {
  const std::string* file = nullptr;
  unsigned line = 0;
  unsigned col = 0;

  bool known() const { return line != 0; }
  // "file:line:col" (or "<unknown>").
  std::string str() const;
  bool operator==(const Loc& o) const {
    return line == o.line && col == o.col &&
           (file == o.file || (file && o.file && *file == *o.file));
  }
};

// A process-wide interned copy of `name`: the same pointer for equal names,
// valid until exit (for Loc::file outside an IR context).
const std::string* internName(std::string_view name);

// A user-facing error: a code, where it is (loc, and `len` bytes from there),
// what is wrong as one line, and an optional hint.
struct Diagnostic {
  Loc loc;
  std::string message;
  std::string code;  // "V008", "E001"; empty for errors outside the code tables (usage, I/O)
  std::string hint;  // may be empty
  unsigned len = 1;  // bytes of loc's line the caret line underlines
  // "file:line:col: error[CODE]: message" ("error: message" without a code).
  std::string str() const;
};
using Error = Diagnostic;

inline Error makeError(Loc loc, std::string message, std::string code = {}) {
  return Error{loc, std::move(message), std::move(code)};
}

// Line `line` (1-based) of `text` without its line end; empty when there is none.
std::string_view sourceLine(std::string_view text, unsigned line);

// The one renderer: "file:line:col: error[CODE]: message" (`file` names the
// input when d.loc.file is null), then, when `source` (the whole text of that
// file) has the line, the line and a caret line under the span, then
// "  hint: ..." when there is a hint. Each line ends in '\n'. Control
// characters are shown as '?', tabs kept and UTF-8 counted as one column, so
// the caret lines up; a long line is cut to a window around the column.
std::string renderDiag(const Diagnostic& d, std::string_view file, std::string_view source);

// A code and its one-line meaning. The IR's table is irErrorCodes(); each
// frontend registers its own through frontends::Frontend::errorCodes.
struct ErrorCodeInfo {
  std::string_view code, meaning;
};
const std::vector<ErrorCodeInfo>& irErrorCodes();

// Either a T or an Error. Check with `if (!e)`, read the error with e.error().
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Error err) : v_(std::move(err)) {}
  explicit operator bool() const { return v_.index() == 0; }
  T& operator*() { assert(*this); return std::get<0>(v_); }
  const T& operator*() const { assert(*this); return std::get<0>(v_); }
  T* operator->() { return &**this; }
  const T* operator->() const { return &**this; }
  const Error& error() const { assert(!*this); return std::get<1>(v_); }
  Error takeError() { assert(!*this); return std::move(std::get<1>(v_)); }

 private:
  std::variant<T, Error> v_;
};

// Success or an Error, for operations with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error err) : err_(std::move(err)) {}
  static Status ok() { return Status(); }
  explicit operator bool() const { return !err_; }
  const Error& error() const { assert(err_); return *err_; }

 private:
  std::optional<Error> err_;
};

}  // namespace eph
