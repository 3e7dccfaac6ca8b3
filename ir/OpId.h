// Typed handles of the built-in ops, generated from ir/OpIds.def.
#pragma once

#include <cstdint>
#include <string_view>

namespace eph::ir {

// The typed handle of a built-in op (the list is ir/OpIds.def). Passes and
// targets test `op.is(OpId::Add)` or switch on `op.id()` instead of comparing
// names; ops a plugin registers are OpId::Custom.
enum class OpId : uint16_t {
#define EPH_OP(id, name) id,
#include "ir/OpIds.def"
#undef EPH_OP
  Custom,
};
constexpr unsigned kNumOpIds = static_cast<unsigned>(OpId::Custom);
// The text name of a built-in op ("" for Custom).
std::string_view opIdName(OpId id);
// The OpId of a built-in op's name, or OpId::Custom.
OpId opIdOf(std::string_view name);

}  // namespace eph::ir
