// Grouping residuals into signatures (issue 12: a million in under 2 s).
// Builds N edge-length residuals of a triangle strip through the C++ API
// (half of them list their points the other way round), then times
// groupResiduals and prints one line:
//   group N residuals (M nodes): T ms, K signatures
// usage: eph_value_group_bench [N]   (default 1000000)
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "frontends/value/Signature.h"
#include "frontends/value/Vec.h"

using namespace eph::value;

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  if (n < 1) return std::fprintf(stderr, "usage: %s [N]\n", argv[0]), 2;
  Graph g;
  std::vector<double> xy(size_t(2 * (n + 2)));
  for (size_t i = 0; i < xy.size(); ++i) xy[i] = double(i % 11) * 0.1;
  auto p = g.params("p", xy);
  auto len = g.constants("len", std::vector<double>(size_t(n), 1.0));
  auto t0 = std::chrono::steady_clock::now();
  for (long e = 0; e < n; ++e) {
    long i = e, j = e + 1 + (e % 2);  // strip edges (e, e+1) and (e, e+2)
    Value l[] = {p[2 * i], p[2 * i + 1], p[2 * j], p[2 * j + 1], len[e]};
    g.trace(l, [&](std::span<const Value> v) {
      Vec2 a = vec<2>(v, 0), b = vec<2>(v, 2);
      return e % 2 ? magnitude(b - a) - v[4] : magnitude(a - b) - v[4];
    });
  }
  auto t1 = std::chrono::steady_clock::now();
  auto groups = groupResiduals(g);
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("trace %ld residuals (%zu nodes): %.0f ms\n", n, g.nodes().size(), ms(t1 - t0));
  std::printf("group %ld residuals (%zu nodes): %.0f ms, %zu signatures\n", n, g.nodes().size(), ms(t2 - t1), groups.size());
  return groups.size() == 1 ? 0 : 1;
}
