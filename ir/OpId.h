// Typed handles of the built-in ops, generated from ir/OpIds.def.
#pragma once

#include <array>
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
// How a target handles a built-in op (each target's lowersOp answers it;
// OpTableWalkTest asks for every op usable in kernels).
enum class Lowering : uint8_t {
  Missing,      // no entry: a new op nobody lowered yet
  Lowered,      // the target has a lowering
  Unsupported,  // explicitly not on this target (emitting it is a clear error)
};

// A value per built-in op, indexed by OpId: the targets' lowering tables.
// Custom ops have no slot (reading one gives a value-initialised T).
template <class T>
struct PerOp {
  std::array<T, kNumOpIds> slots{};
  T& operator[](OpId id) { return slots[static_cast<unsigned>(id)]; }
  T operator[](OpId id) const { return id == OpId::Custom ? T{} : slots[static_cast<unsigned>(id)]; }
};

// Families of built-in ops, as ranges of ir/OpIds.def (OpTableTest checks
// each against its ops' name prefix, so an op added out of place fails there).
// atomic.add ... atomic.cmpxchg.
constexpr bool isAtomic(OpId id) { return id >= OpId::AtomicAdd && id <= OpId::AtomicCmpXchg; }
// The subgroup.* collectives, subgroup.reduce_add ... subgroup.shuffle (not
// the subgroup_size, subgroup_id, subgroup_local_id builtins).
constexpr bool isSubgroupCollective(OpId id) {
  return id >= OpId::SubgroupReduceAdd && id <= OpId::SubgroupShuffle;
}
// The cooperative-matrix ops, coop.fill ... coop.muladd.
constexpr bool isCoop(OpId id) { return id >= OpId::CoopFill && id <= OpId::CoopConvert; }

}  // namespace eph::ir
