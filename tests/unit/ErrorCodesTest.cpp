// The error-code index: every code a diagnostic can have (the IR's table
// eph::irErrorCodes() and each frontend's, frontends::allErrorCodes()) has a
// section in docs/errors.md, every section is a code in a table, and every
// code string the sources emit ("V008" in ir/, passes/, frontends/) is in a
// table, and every code in a table is emitted somewhere.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "frontends/Frontend.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The files whose string literals are the codes they emit. The code tables
// themselves are left out: they list codes, they do not emit them.
std::vector<fs::path> emittingSources() {
  const fs::path root(EPH_SOURCE_DIR);
  const std::set<fs::path> tables = {root / "ir" / "ErrorCodes.cpp", root / "frontends" / "ephapax" / "Diag.cpp"};
  std::vector<fs::path> out;
  for (const char* dir : {"ir", "passes", "frontends"})
    for (auto& e : fs::recursive_directory_iterator(root / dir)) {
      std::string ext = e.path().extension().string();
      if ((ext == ".cpp" || ext == ".h") && !tables.count(e.path())) out.push_back(e.path());
    }
  return out;
}

}  // namespace

TEST(ErrorCodes, TablesSourcesAndDocAgree) {
  std::vector<eph::ErrorCodeInfo> codes = eph::frontends::allErrorCodes();
  std::set<std::string> listed;
  for (const eph::ErrorCodeInfo& c : codes) {
    EXPECT_TRUE(std::regex_match(std::string(c.code), std::regex("[EIVLP][0-9]{3}"))) << c.code;
    EXPECT_FALSE(c.meaning.empty()) << c.code;
    EXPECT_TRUE(listed.insert(std::string(c.code)).second) << c.code << " is listed twice";
  }
  EXPECT_GE(listed.size(), 60u);

  // docs/errors.md: one "## CODE — meaning" section per listed code, with an example.
  std::string doc = slurp(fs::path(EPH_SOURCE_DIR) / "docs" / "errors.md");
  std::regex heading("\n## ([A-Z][0-9]{3}) ");
  std::set<std::string> documented;
  for (std::sregex_iterator it(doc.begin(), doc.end(), heading), end; it != end; ++it) {
    std::string code = (*it)[1];
    EXPECT_TRUE(documented.insert(code).second) << code << " has two sections in docs/errors.md";
    EXPECT_TRUE(listed.count(code)) << code << " is in docs/errors.md but in no code table";
    size_t next = doc.find("\n## ", it->position() + 1);
    std::string section = doc.substr(it->position(), next == std::string::npos ? std::string::npos : next - it->position());
    EXPECT_TRUE(section.find("```") != std::string::npos || section.find("No example") != std::string::npos)
        << code << " has no example in docs/errors.md";
  }
  for (const std::string& c : listed) EXPECT_TRUE(documented.count(c)) << c << " is not in docs/errors.md";

  // The overview table at the top of docs/errors.md ("| `P001`–`P013` | ..."):
  // every listed code is in one of its ranges, and every range ends on a code
  // some table lists (so a family's range grows with it), unless it reserves a
  // block of a hundred (`E200`–`E299`).
  std::regex row("\n\\| `([A-Z])([0-9]{3})`(?:–`[A-Z]([0-9]{3})`)? \\|");
  std::vector<std::tuple<char, int, int>> ranges;
  for (std::sregex_iterator it(doc.begin(), doc.end(), row), end; it != end; ++it) {
    std::string last = (*it)[3].matched ? (*it)[3].str() : (*it)[2].str();
    ranges.emplace_back((*it)[1].str()[0], std::stoi((*it)[2]), std::stoi(last));
  }
  EXPECT_GE(ranges.size(), 7u) << "the overview table of docs/errors.md";
  for (const std::string& c : listed) {
    bool covered = false;
    int n = std::stoi(c.substr(1));
    for (auto [family, lo, hi] : ranges) covered |= c[0] == family && lo <= n && n <= hi;
    EXPECT_TRUE(covered) << c << " is in no range of the overview table of docs/errors.md";
  }
  for (auto [family, lo, hi] : ranges) {
    char top[8];
    std::snprintf(top, sizeof top, "%c%03d", family, hi);
    if (hi % 100 != 99)
      EXPECT_TRUE(listed.count(top)) << "docs/errors.md's overview ends a range on " << top << ", which no table lists";
  }

  // The sources: every emitted code is listed, every listed code is emitted.
  std::regex literal("\"([EIVLP][0-9]{3})\"");
  std::set<std::string> emitted;
  for (const fs::path& p : emittingSources()) {
    std::string text = slurp(p);
    for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it) {
      emitted.insert((*it)[1]);
      EXPECT_TRUE(listed.count((*it)[1])) << (*it)[1] << " (in " << p << ") is in no code table";
    }
  }
  for (const std::string& c : listed) EXPECT_TRUE(emitted.count(c)) << c << " is listed but no source emits it";
}
