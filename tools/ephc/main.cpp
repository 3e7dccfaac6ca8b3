// ephc: the command-line driver. It only parses flags and calls the libraries;
// see Driver.h for the pieces and docs/ephc.md for the commands.
#include <iostream>
#include <string>
#include <vector>

#include "tools/ephc/Driver.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return eph::ephc::ephcMain(args, std::cout, std::cerr);
}
