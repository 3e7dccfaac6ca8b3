#include "tests/support/Minimise.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

namespace eph::test {

std::string minimiseProgram(const std::string& text, const std::function<bool(const std::string&)>& stillFails) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  // Lines [from, to) left out.
  auto join = [&](size_t from, size_t to) {
    std::string s;
    for (size_t i = 0; i < lines.size(); ++i)
      if (i < from || i >= to) s += lines[i];
    return s;
  };
  // The end (exclusive) of the statement starting at line i: past the line
  // that closes its regions ("}" at its indentation, not "} {"), or i + 1.
  auto statementEnd = [&](size_t i) {
    const std::string& l = lines[i];
    size_t indent = l.find_first_not_of(' ');
    if (l.find_last_not_of(" \n") == std::string::npos || l[l.find_last_not_of(" \n")] != '{') return i + 1;
    for (size_t j = i + 1; j < lines.size(); ++j) {
      const std::string& c = lines[j];
      if (c.find_first_not_of(' ') == indent && c.compare(indent, 1, "}") == 0 &&
          c.find('{', indent) == std::string::npos)
        return j + 1;
    }
    return i + 1;
  };
  auto hasBarrier = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      if (lines[i].find("barrier") != std::string::npos) return true;
    return false;
  };
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (size_t i = lines.size(); i-- > 0;) {
      size_t end = statementEnd(i);
      if (hasBarrier(i, end) || !stillFails(join(i, end))) continue;
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i), lines.begin() + static_cast<std::ptrdiff_t>(end));
      dropped = true;
    }
  }
  return join(0, 0);
}

std::string keepMinimised(const std::string& name, const std::string& text,
                          const std::function<bool(const std::string&)>& stillFails) {
  std::string small = minimiseProgram(text, stillFails);
  std::string path = ::testing::TempDir() + name + ".eir";
  std::ofstream(path) << small;
  return "minimised (" + path + "); once understood, keep it as a regression test: copy it to "
         "tests/regressions/random/" + name + ".eir with a comment saying what went wrong:\n" + small;
}

}  // namespace eph::test
