// What `ephc run F.vg` prints (FORMAT.md).
#include <cmath>

#include "frontends/value/Eval.h"
#include "frontends/value/Frontend.h"
#include "frontends/value/Text.h"

namespace eph::value {

namespace {
// A JSON number: the shortest decimal that reads back; non-finite values are null.
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  std::string s = formatNumber(v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
std::string quote(const std::string& s) { return "\"" + s + "\""; }  // leaf names need no escapes
}  // namespace

std::string runReport(const Graph& g, const std::vector<double>& residuals, const std::vector<double>& gradient,
                      size_t kernels, bool json) {
  double sum = 0, cost = 0;
  for (double r : residuals) sum += r, cost += 0.5 * r * r;
  std::vector<NodeId> leaves = gradientLeaves(g);
  std::string out;
  if (json) {
    out += "{\"residuals\": [";
    for (size_t i = 0; i < residuals.size(); ++i) out += (i ? ", " : "") + num(residuals[i]);
    out += "],\n \"sum\": " + num(sum) + ",\n \"cost\": " + num(cost) + ",\n \"gradient\": {";
    for (size_t i = 0; i < leaves.size(); ++i) out += (i ? ", " : "") + quote(g.leafName(leaves[i])) + ": " + num(gradient[i]);
    out += "},\n \"kernels\": " + std::to_string(kernels) + "}\n";
    return out;
  }
  out += "residuals:";
  for (double r : residuals) out += " " + formatNumber(r);
  out += "\nsum: " + formatNumber(sum) + "\ncost: " + formatNumber(cost) + "\ngradient:";
  for (size_t i = 0; i < leaves.size(); ++i) out += " " + g.leafName(leaves[i]) + "=" + formatNumber(gradient[i]);
  out += "\nkernels: " + std::to_string(kernels) + "\n";
  return out;
}

}  // namespace eph::value
