// docs/ir.md documents every op in the table: adding an op without a line in
// the doc's op table fails this test.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ir/OpTable.h"

namespace eph::ir {
namespace {

TEST(IrDoc, MentionsEveryOp) {
  std::ifstream in(std::string(EPH_SOURCE_DIR) + "/docs/ir.md");
  ASSERT_TRUE(in) << "docs/ir.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  ASSERT_FALSE(OpTable::get().all().empty());
  for (const OpInfo* op : OpTable::get().all()) {
    std::string row = "| `" + std::string(op->name) + "` |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/ir.md has no table row for '" << op->name << "'";
  }
}

}  // namespace
}  // namespace eph::ir
