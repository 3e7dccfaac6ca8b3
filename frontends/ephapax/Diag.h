// Ephapax diagnostics: a code (E000 syntax, E001.. linearity and regions,
// E101.. types, E200.. code generation), a span in the .eph source, a message
// and an optional hint. Rendered as
//
//   file:line:col: error[E001]: linear variable `x` is never consumed
//     let! x = 42 in
//     ^~~~
//   hint: use `x` exactly once, or bind it with `let` to allow dropping it
//
// docs/errors.md lists every code with a failing example and the fix.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace eph::ephapax {

// A range of source text: 1-based line and column of its start, and its
// length in bytes (the caret line underlines that much of the first line).
// `file` says which text: 0 the program being compiled, k > 0 the source a
// DiagSink registered as k (a merged standard library module, addSource).
struct Span {
  unsigned line = 0, col = 0, len = 1;
  uint16_t file = 0;
  bool known() const { return line != 0; }
};

struct Diag {
  std::string code;  // "E001"
  Span span;
  std::string message;
  std::string hint;  // may be empty
};

// Every code the frontend can emit, with a one-line meaning (docs/errors.md
// documents each; a unit test keeps the two in step).
struct ErrorCodeInfo {
  std::string_view code, meaning;
};
const std::vector<ErrorCodeInfo>& errorCodes();

// A source text other than the program's own that spans may point into.
struct SourceFile {
  std::string name;  // as rendered: "gpu.eph"
  std::string text;
};

// Collects diagnostics in the order they are found, and the other sources
// (standard library modules) their spans may point into.
class DiagSink {
 public:
  void error(std::string code, Span span, std::string message, std::string hint = {});
  const std::vector<Diag>& all() const { return diags_; }
  bool empty() const { return diags_.empty(); }
  size_t size() const { return diags_.size(); }
  // Registers a source and returns its Span::file id (1, 2, ..); a name
  // registered before keeps its id.
  uint16_t addSource(std::string name, std::string_view text);
  // The source with Span::file id `file`, or null (0: the program's own).
  const SourceFile* source(uint16_t file) const;

 private:
  std::vector<Diag> diags_;
  std::vector<SourceFile> sources_;
};

// "file:line:col: error[CODE]: message", the source line, a caret line and
// "hint: ..." when there is a hint; each line ends in '\n'.
std::string renderDiag(const Diag& d, std::string_view file, std::string_view source);

}  // namespace eph::ephapax
