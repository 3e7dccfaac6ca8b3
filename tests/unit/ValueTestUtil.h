// Shared by the Value-graph tests: running ephc in-process, the targets of
// this build, and a small JSON reader for FORMAT.md's reports.
#pragma once

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/Device.h"
#include "tools/ephc/Driver.h"

namespace eph::value::test {

struct Ephc {
  int status;
  std::string out, err;
};
inline Ephc ephc(std::vector<std::string> args) {
  std::ostringstream out, err;
  int status = ephc::ephcMain(args, out, err);
  return {status, out.str(), err.str()};
}

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::filesystem::path examplesDir() {
  return std::filesystem::path(EPH_SOURCE_DIR) / "tests" / "value" / "examples";
}

// interp, and cpu and vulkan where this build and machine have them (vulkan
// always under EPH_REQUIRE_VULKAN=1, so that a missing driver fails).
inline std::vector<std::string> targets() {
  static const std::vector<std::string> list = [] {
    std::vector<std::string> out = {"interp"};
    for (const std::string& t : runtime::availableTargets())
      if (t == "cpu") out.push_back(t);
    const char* req = std::getenv("EPH_REQUIRE_VULKAN");
    if ((req && std::string(req) == "1") || runtime::openDevice("vulkan")) out.push_back("vulkan");
    return out;
  }();
  return list;
}

// JSON of the shape FORMAT.md prints: numbers (or null), arrays, objects.
struct Json {
  enum Kind { Null, Number, Array, Object } kind = Null;
  double number = 0;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;  // in order
  const Json& operator[](const std::string& key) const {
    for (auto& [k, v] : fields)
      if (k == key) return v;
    static const Json none;
    return none;
  }
  bool has(const std::string& key) const {
    for (auto& f : fields)
      if (f.first == key) return true;
    return false;
  }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}
  bool read(Json& out) {
    if (!value(out, 0)) return false;
    skip();
    return i_ == s_.size();
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool value(Json& out, int depth) {
    if (depth > 16) return false;
    skip();
    if (i_ >= s_.size()) return false;
    if (s_[i_] == '[' || s_[i_] == '{') {
      bool object = s_[i_++] == '{';
      out.kind = object ? Json::Object : Json::Array;
      skip();
      if (i_ < s_.size() && s_[i_] == (object ? '}' : ']')) return ++i_, true;
      for (;;) {
        skip();
        std::string key;
        if (object) {
          if (i_ >= s_.size() || s_[i_] != '"') return false;
          size_t end = s_.find('"', i_ + 1);
          if (end == std::string::npos) return false;
          key = s_.substr(i_ + 1, end - i_ - 1);
          i_ = end + 1;
          skip();
          if (i_ >= s_.size() || s_[i_++] != ':') return false;
        }
        Json v;
        if (!value(v, depth + 1)) return false;
        if (object) out.fields.emplace_back(key, std::move(v));
        else out.items.push_back(std::move(v));
        skip();
        if (i_ < s_.size() && s_[i_] == ',') { ++i_; continue; }
        if (i_ < s_.size() && s_[i_] == (object ? '}' : ']')) return ++i_, true;
        return false;
      }
    }
    if (s_.compare(i_, 4, "null") == 0) return i_ += 4, out.kind = Json::Null, true;
    // true / false read as the numbers 1 / 0 (ephc solve's "converged").
    if (s_.compare(i_, 4, "true") == 0) return i_ += 4, out.kind = Json::Number, out.number = 1, true;
    if (s_.compare(i_, 5, "false") == 0) return i_ += 5, out.kind = Json::Number, out.number = 0, true;
    char* end = nullptr;
    out.number = std::strtod(s_.c_str() + i_, &end);
    if (end == s_.c_str() + i_) return false;
    i_ = size_t(end - s_.c_str());
    out.kind = Json::Number;
    return true;
  }
  const std::string& s_;
  size_t i_ = 0;
};

inline bool parseJson(const std::string& s, Json& out) { return JsonReader(s).read(out); }

// |a - b| <= rel·max(|a|, |b|) + abs.
inline bool close(double a, double b, double rel, double abs = 0) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)) + abs;
}

// Compares a report with the expected one: residuals, sum, cost and gradient
// (names in order) within rel/abs, kernels exactly. "" when they agree.
inline std::string compareReports(const Json& have, const Json& want, double rel, double abs) {
  std::ostringstream why;
  const Json &hr = have["residuals"], &wr = want["residuals"];
  if (hr.items.size() != wr.items.size()) return "residual count differs";
  for (size_t i = 0; i < wr.items.size(); ++i)
    if (!close(hr.items[i].number, wr.items[i].number, rel, abs))
      why << "residual " << i << ": " << hr.items[i].number << " vs " << wr.items[i].number << "\n";
  for (const char* k : {"sum", "cost"})
    if (!close(have[k].number, want[k].number, rel, abs)) why << k << ": " << have[k].number << " vs " << want[k].number << "\n";
  const Json &hg = have["gradient"], &wg = want["gradient"];
  if (hg.fields.size() != wg.fields.size()) return "gradient entry count differs";
  for (size_t i = 0; i < wg.fields.size(); ++i) {
    if (hg.fields[i].first != wg.fields[i].first) why << "gradient key " << hg.fields[i].first << " vs " << wg.fields[i].first << "\n";
    if (!close(hg.fields[i].second.number, wg.fields[i].second.number, rel, abs))
      why << "gradient " << wg.fields[i].first << ": " << hg.fields[i].second.number << " vs " << wg.fields[i].second.number << "\n";
  }
  if (have["kernels"].number != want["kernels"].number)
    why << "kernels: " << have["kernels"].number << " vs " << want["kernels"].number << "\n";
  return why.str();
}

}  // namespace eph::value::test
