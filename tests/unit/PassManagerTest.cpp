// The pass manager: pipeline parsing, verification after each pass,
// --print-after output, timing, and plugin loading errors.
#include <gtest/gtest.h>

#include <sstream>

#include "ir/Parser.h"
#include "passes/PassManager.h"

using namespace eph;

TEST(PassManager, ParsesAPipelineWithWhitespace) {
  auto pm = passes::PassManager::parse(" canonicalize , cse,dce ");
  ASSERT_TRUE(pm);
  ASSERT_EQ(pm->passes().size(), 3u);
  EXPECT_EQ(pm->passes()[0]->name, "canonicalize");
  EXPECT_EQ(pm->passes()[1]->name, "cse");
  EXPECT_EQ(pm->passes()[2]->name, "dce");
}
