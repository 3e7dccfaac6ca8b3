// Test-case reduction for the random-program tests: a failing program is cut
// down, greedily, to the lines it needs to fail, and kept as a regression
// test in tests/regressions/random/ (RandomPrograms.RegressionsAgreeOnEveryTarget
// runs every file there on every target).
#pragma once

#include <functional>
#include <string>

namespace eph::test {

// Drops statements of `text` one at a time (a line, or an op with regions
// from its first line to the "}" that closes them), last first, keeping
// each drop after which `stillFails` holds, and repeats until none can go. `stillFails`
// gets the smaller text and must answer false for one that no longer parses,
// verifies or runs on the reference. Lines with a barrier are kept (dropping
// one makes a race, a different failure).
std::string minimiseProgram(const std::string& text, const std::function<bool(const std::string&)>& stillFails);

// Minimises `text`, writes it to `name`.eir in the test's temporary directory
// and returns a message with its path, the reduced text and where to keep it.
std::string keepMinimised(const std::string& name, const std::string& text,
                          const std::function<bool(const std::string&)>& stillFails);

}  // namespace eph::test
