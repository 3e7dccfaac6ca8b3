// The op table's typed handles and region kinds: every OpId names a
// registered op, every built-in op has its OpId, and an op with regions says
// what kind they are.
#include <gtest/gtest.h>

#include "ir/IR.h"
#include "ir/OpTable.h"
#include "ir/Parser.h"

namespace eph::ir {
namespace {

TEST(OpTable, EveryOpIdNamesARegisteredOpWithThatId) {
  const OpTable& t = OpTable::get();
  for (unsigned i = 0; i < kNumOpIds; ++i) {
    OpId id = static_cast<OpId>(i);
    const OpInfo* info = t.lookup(opIdName(id));
    ASSERT_NE(info, nullptr) << "ir/OpIds.def lists '" << opIdName(id) << "' but no ops/*.cpp registers it";
    EXPECT_EQ(info->id, id) << info->name;
    EXPECT_EQ(&t[id], info) << info->name;
    EXPECT_EQ(opIdOf(info->name), id);
  }
}

TEST(OpTable, EveryOpOfTheIrLibraryHasAnOpId) {
  // Ops the IR library registers (OpTable::get()'s own tables); frontends and
  // plugins may add Custom ones, whose names have a dotted prefix of their own
  // (AutodiffTest registers test.* ops in this binary).
  for (const OpInfo* info : OpTable::get().all()) {
    if (info->name.starts_with("ephapax.") || info->name.starts_with("test.")) continue;
    EXPECT_NE(info->id, OpId::Custom) << "'" << info->name << "' is missing from ir/OpIds.def";
  }
  EXPECT_EQ(opIdOf("no.such.op"), OpId::Custom);
  EXPECT_EQ(opIdName(OpId::Custom), "");
}

TEST(OpTable, OpFamiliesAreTheOpsOfTheirNamePrefix) {
  // ir::isAtomic, isSubgroupCollective and isCoop are ranges of
  // ir/OpIds.def: an op of the family listed outside its range (or another
  // op listed inside it) fails here.
  for (unsigned i = 0; i < kNumOpIds; ++i) {
    OpId id = static_cast<OpId>(i);
    std::string_view name = opIdName(id);
    EXPECT_EQ(isAtomic(id), name.starts_with("atomic.")) << name;
    EXPECT_EQ(isSubgroupCollective(id), name.starts_with("subgroup.")) << name;
    EXPECT_EQ(isCoop(id), name.starts_with("coop.")) << name;
  }
  EXPECT_FALSE(isAtomic(OpId::Custom) || isSubgroupCollective(OpId::Custom) || isCoop(OpId::Custom));
}

TEST(OpTable, OpsWithRegionsSayWhatKindTheyAre) {
  for (const OpInfo* info : OpTable::get().all()) {
    if (info->numRegions == 0)
      EXPECT_EQ(info->regionKind, RegionKind::None) << info->name;
    else
      EXPECT_NE(info->regionKind, RegionKind::None) << info->name << " has regions but no RegionKind";
  }
  EXPECT_EQ(OpTable::get()[OpId::If].regionKind, RegionKind::Branches);
  EXPECT_EQ(OpTable::get()[OpId::Match].regionKind, RegionKind::Branches);
  EXPECT_EQ(OpTable::get()[OpId::For].regionKind, RegionKind::Loop);
  EXPECT_EQ(OpTable::get()[OpId::While].regionKind, RegionKind::Loop);
}

TEST(OpTable, ParsedOpsCarryTheirHandle) {
  Context ctx;
  auto m = parseModule(ctx, R"(
host @f(%a: i32, %b: i32) -> i32 {
  %s = add %a, %b : i32
  return %s
}
)",
                       "t.eir");
  ASSERT_TRUE(m) << m.error().str();
  Op& add = *(*m)->lookup("f")->body().front();
  EXPECT_TRUE(add.is(OpId::Add));
  EXPECT_FALSE(add.is(OpId::Sub));
  EXPECT_EQ(add.id(), OpId::Add);
}

}  // namespace
}  // namespace eph::ir
