// Prints modules in the .eir text form (docs/ir.md describes it). The parser
// (ir/Parser.h) reads it back: print(parse(print(m))) == print(m).
#pragma once

#include <string>

#include "ir/IR.h"

namespace eph::ir {

struct PrintOptions {
  // Append `loc("file":line:col)` to every op and function that has a location.
  bool locations = false;
};

std::string print(const Module& m, const PrintOptions& opts = {});
std::string print(const Function& f, const PrintOptions& opts = {});

}  // namespace eph::ir
