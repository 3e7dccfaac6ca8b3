// docs/ir.md documents every op in the table: adding an op without a line in
// the doc's op table fails this test. Its C++ program ("Building IR from
// C++") is tests/doc/build_ir.cpp, which ctest builds and runs (doc-build-ir):
// the doc must show that file exactly.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ir/OpTable.h"

namespace eph::ir {
namespace {

std::string readSource(const std::string& path) {
  std::ifstream in(std::string(EPH_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in) << path << " is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(IrDoc, MentionsEveryOp) {
  std::string doc = readSource("docs/ir.md");
  ASSERT_FALSE(OpTable::get().all().empty());
  for (const OpInfo* op : OpTable::get().all()) {
    std::string row = "| `" + std::string(op->name) + "` |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/ir.md has no table row for '" << op->name << "'";
  }
}

TEST(IrDoc, ShowsTheCompiledBuilderProgram) {
  std::string doc = readSource("docs/ir.md");
  std::string program = readSource("tests/doc/build_ir.cpp");
  ASSERT_FALSE(program.empty());
  EXPECT_NE(doc.find("```cpp\n" + program + "```\n"), std::string::npos)
      << "docs/ir.md does not show tests/doc/build_ir.cpp as it is (copy the file into the ```cpp block)";
}

}  // namespace
}  // namespace eph::ir
