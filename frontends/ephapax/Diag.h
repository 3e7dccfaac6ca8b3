// Ephapax diagnostics: the shared eph::Diagnostic (ir/Diagnostics.h) with a
// code (E000 syntax, E001.. linearity and regions, E101.. types, E200.. code
// generation), a span in the .eph source, a message and an optional hint,
// rendered by the one renderer (eph::renderDiag) as
//
//   file:line:col: error[E001]: linear variable `x` is never consumed
//     let! x = 42 in
//     ^~~~
//   hint: use `x` exactly once, or bind it with `let` to allow dropping it
//
// docs/errors.md lists every code with a failing example and the fix.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Diagnostics.h"

namespace eph::ephapax {

// A range of source text: 1-based line and column of its start, and its
// length in bytes (the caret line underlines that much of the first line).
// `file` says which text: 0 the program being compiled, k > 0 the source a
// DiagSink registered as k (a merged standard library module, addSource).
// The AST keeps these (small); a diagnostic's Loc names the file itself.
struct Span {
  unsigned line = 0, col = 0, len = 1;
  uint16_t file = 0;
  bool known() const { return line != 0; }
};

using Diag = eph::Diagnostic;
using eph::ErrorCodeInfo;

// Every code the frontend can emit, with a one-line meaning (docs/errors.md
// documents each; ErrorCodesTest keeps the two in step). Registered with the
// frontend (frontends::Frontend::errorCodes).
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
  // A diagnostic at `span`: its Loc names the registered source for span.file
  // k > 0, or no file (the program, named when rendering) for 0.
  void error(std::string code, Span span, std::string message, std::string hint = {});
  const std::vector<Diag>& all() const { return diags_; }
  bool empty() const { return diags_.empty(); }
  size_t size() const { return diags_.size(); }
  // Wraps the message of diagnostic `i` in `prefix` and `suffix`.
  void amend(size_t i, std::string_view prefix, std::string_view suffix);
  // Registers a source and returns its Span::file id (1, 2, ..); a name
  // registered before keeps its id.
  uint16_t addSource(std::string name, std::string_view text);
  // The source with Span::file id `file`, or null (0: the program's own).
  const SourceFile* source(uint16_t file) const;
  // The registered source a diagnostic's Loc::file names, or null.
  const SourceFile* sourceNamed(const std::string* name) const;

 private:
  std::vector<Diag> diags_;
  std::deque<SourceFile> sources_;
};

}  // namespace eph::ephapax
