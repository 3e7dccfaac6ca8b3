// Source locations, errors and Expected<T>: how every library in ephc reports
// a recoverable user error (malformed input, a type error, an interpreter trap)
// without exceptions. Internal invariants use assert instead.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace eph {

// A position in some source file (an .eir, an .eph, ...). line/col are 1-based;
// line 0 means "unknown". `file` is interned by the IR context, so copying is cheap.
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

// A user-facing error: where it is and what is wrong, as one line.
struct Error {
  Loc loc;
  std::string message;
  // "file:line:col: error: message"
  std::string str() const;
};

inline Error makeError(Loc loc, std::string message) { return Error{loc, std::move(message)}; }

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
