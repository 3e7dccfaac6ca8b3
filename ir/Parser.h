// Parses the .eir text form into a Module. Errors are `file:line:col: error:
// expected X, got 'Y'`-style values, never crashes. Ops without an explicit
// `loc(...)` get their position in the text as their location.
//
// The parser checks syntax, names (every %value defined once and in scope) and
// each op's operand/result/region counts against the op table; types and
// everything else are the verifier's job (ir/Verifier.h).
#pragma once

#include <memory>
#include <string_view>

#include "ir/IR.h"

namespace eph::ir {

Expected<std::unique_ptr<Module>> parseModule(Context& ctx, std::string_view text,
                                              std::string_view fileName = "<input>");

// Parses a single type such as "buffer<f32, device, linear>".
Expected<const Type*> parseType(Context& ctx, std::string_view text);

}  // namespace eph::ir
