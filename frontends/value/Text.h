// The `.vg` text form of a Value graph (FORMAT.md, docs/value.md): a parser
// with file:line:col errors and a printer, with parse(print(g)) == g.
#pragma once

#include <string>
#include <string_view>

#include "frontends/value/Graph.h"

namespace eph::value {

struct ParseError {
  unsigned line = 0, col = 0;
  std::string message;
  // "file:line:col: error[E300]: message", the source line and a caret under the column.
  std::string render(std::string_view file, std::string_view text) const;
};

// Parses `text` into `out` (a fresh graph); false with `err` set on the first error.
bool parse(std::string_view text, Graph& out, ParseError& err);

// The graph as `.vg` text: declarations, then a `let` for every named node, every
// node used more than once and wherever an expression would nest deeper than
// 64 levels (so the parser never recurses deeply), then the residuals.
std::string print(const Graph& g);

// The shortest decimal that reads back to the same double ("2", "0.1", "1e-300").
std::string formatNumber(double v);

}  // namespace eph::value
