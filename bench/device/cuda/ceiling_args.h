// The command line of the ceiling programs (sgemm_ceiling.cu,
// hgemm_ceiling.cu): --sizes A,B,.. --runs N --rounds R --json FILE.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

struct CeilingArgs {
  std::vector<int> sizes;
  int runs = 20, rounds = 3;
  FILE* json = nullptr;  // one JSON line per (kernel, size) when given
};

inline CeilingArgs parseCeilingArgs(int argc, char** argv, std::vector<int> sizes) {
  CeilingArgs c;
  c.sizes = std::move(sizes);
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--sizes") {
      c.sizes.clear();
      for (size_t p = 0; p < v.size();) {
        size_t q = v.find(',', p);
        c.sizes.push_back(std::stoi(v.substr(p, q - p)));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else if (a == "--runs") c.runs = std::stoi(v);
    else if (a == "--rounds") c.rounds = std::stoi(v);
    else if (a == "--json") c.json = std::fopen(v.c_str(), "w");
  }
  return c;
}
