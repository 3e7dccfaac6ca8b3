#include "examples/value/Developable.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "examples/value/DeviceGraph.h"
#include "frontends/value/Eval.h"
#include "frontends/value/Vec.h"
#include "frontends/value/solve/GraphProblem.h"

namespace eph::value::demo {

Mesh icosphere(int level) {
  const double t = (1 + std::sqrt(5.0)) / 2;
  Mesh m;
  m.xyz = {-1, t, 0, 1, t, 0, -1, -t, 0, 1, -t, 0, 0, -1, t, 0, 1, t,
           0, -1, -t, 0, 1, -t, t, 0, -1, t, 0, 1, -t, 0, -1, -t, 0, 1};
  m.faces = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
             {11, 10, 2}, {10, 7, 6}, {7, 1, 8},  {3, 9, 4},  {3, 4, 2},   {3, 2, 6}, {3, 6, 8},
             {3, 8, 9},  {4, 9, 5},  {2, 4, 11}, {6, 2, 10}, {8, 6, 7},   {9, 8, 1}};
  auto project = [&](uint32_t v) {
    double* p = &m.xyz[3 * v];
    double n = std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    for (int i = 0; i < 3; ++i) p[i] /= n;
  };
  for (uint32_t v = 0; v < 12; ++v) project(v);
  for (int l = 0; l < level; ++l) {
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> mid;
    auto midpoint = [&](uint32_t a, uint32_t b) {
      auto key = std::minmax(a, b);
      auto [it, fresh] = mid.try_emplace({key.first, key.second}, uint32_t(m.vertices()));
      if (fresh) {
        for (int i = 0; i < 3; ++i) m.xyz.push_back((m.xyz[3 * a + i] + m.xyz[3 * b + i]) / 2);
        project(it->second);
      }
      return it->second;
    };
    std::vector<std::array<uint32_t, 3>> faces;
    for (auto [a, b, c] : m.faces) {
      uint32_t ab = midpoint(a, b), bc = midpoint(b, c), ca = midpoint(c, a);
      faces.insert(faces.end(), {{a, ab, ca}, {b, bc, ab}, {c, ca, bc}, {ab, bc, ca}});
    }
    m.faces = std::move(faces);
  }
  return m;
}

std::vector<std::vector<uint32_t>> oneRings(const Mesh& m) {
  // next[v]: for each face (v, a, b), a -> b; the ring follows it around v.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> fan(m.vertices());
  for (auto f : m.faces)
    for (int k = 0; k < 3; ++k) fan[f[k]].push_back({f[(k + 1) % 3], f[(k + 2) % 3]});
  std::vector<std::vector<uint32_t>> rings(m.vertices());
  for (size_t v = 0; v < fan.size(); ++v) {
    std::vector<uint32_t>& ring = rings[v];
    uint32_t cur = fan[v][0].first;
    for (size_t k = 0; k < fan[v].size(); ++k) {
      ring.push_back(cur);
      for (auto [a, b] : fan[v])
        if (a == cur) { cur = b; break; }
    }
  }
  return rings;
}

std::vector<std::array<uint32_t, 2>> edges(const Mesh& m) {
  std::vector<std::array<uint32_t, 2>> out;
  for (auto f : m.faces)
    for (int k = 0; k < 3; ++k)
      if (f[k] < f[(k + 1) % 3]) out.push_back({f[k], f[(k + 1) % 3]});  // each edge once: a closed mesh
  return out;
}

Mesh jittered(const Mesh& m, double amount) {
  Mesh out = m;
  double mean = 0;
  std::vector<std::array<uint32_t, 2>> es = edges(m);
  for (auto [i, j] : es)
    mean += std::sqrt(std::pow(m.xyz[3 * i] - m.xyz[3 * j], 2) + std::pow(m.xyz[3 * i + 1] - m.xyz[3 * j + 1], 2) +
                      std::pow(m.xyz[3 * i + 2] - m.xyz[3 * j + 2], 2));
  mean /= double(std::max<size_t>(es.size(), 1));
  uint64_t state = 0x9E3779B97F4A7C15ull;  // splitmix64: the same offsets everywhere
  for (double& c : out.xyz) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    c += amount * mean * (double(z >> 11) * 0x1.0p-53 * 2 - 1);
  }
  return out;
}

Graph developableGraph(const Mesh& m, Weights weights, double w) {
  Graph g;
  std::vector<std::array<uint32_t, 2>> es = edges(m);
  std::vector<double> rest;
  for (auto [i, j] : es) {
    double d2 = 0;
    for (int k = 0; k < 3; ++k) d2 += (m.xyz[3 * i + k] - m.xyz[3 * j + k]) * (m.xyz[3 * i + k] - m.xyz[3 * j + k]);
    rest.push_back(d2);
  }
  std::vector<Value> x = g.params("x", m.xyz);
  std::vector<Value> restLen = g.constants("rest", rest);
  Value wv = g.constant("w", w);
  // λ_v: the smallest eigenvalue of Σ θ n nᵀ over the fan (center, ring[j], ring[j+1]).
  auto vertexEnergy = [weights](std::span<const Value> l) {
    size_t k = l.size() / 3 - 1;
    Vec3 c = vec<3>(l, 0);
    Value cov[6];
    for (size_t j = 0; j < k; ++j) {
      Vec3 a = vec<3>(l, 3 + 3 * j), b = vec<3>(l, 3 + 3 * ((j + 1) % k));
      Vec3 n = triangleNormal(c, a, b);
      Vec3 wn = n;
      if (weights == Weights::Angle) wn = n * interiorAngle(c, a, b);
      Value terms[6] = {wn[0] * n[0], wn[0] * n[1], wn[0] * n[2], wn[1] * n[1], wn[1] * n[2], wn[2] * n[2]};
      for (int e = 0; e < 6; ++e) cov[e] = j ? cov[e] + terms[e] : terms[e];
    }
    return eigmin3(cov[0], cov[1], cov[2], cov[3], cov[4], cov[5]);
  };
  std::vector<std::vector<uint32_t>> rings = oneRings(m);
  std::vector<Value> leaves;
  for (size_t v = 0; v < rings.size(); ++v) {
    leaves.assign(x.begin() + 3 * v, x.begin() + 3 * v + 3);  // the vertex, then its ring
    for (uint32_t u : rings[v])
      for (int k = 0; k < 3; ++k) leaves.push_back(x[3 * u + k]);
    g.trace(leaves, vertexEnergy);
  }
  // w·(|e|²/|e₀|² − 1)²: the scale and the triangles' shape.
  for (size_t e = 0; e < es.size(); ++e) {
    auto [i, j] = es[e];
    Value l[] = {x[3 * i], x[3 * i + 1], x[3 * i + 2], x[3 * j], x[3 * j + 1], x[3 * j + 2], restLen[e], wv};
    g.trace(l, [](std::span<const Value> v) {
      Vec3 d = vec<3>(v, 0) - vec<3>(v, 3);
      return v[7] * square(dot(d, d) / v[6] - 1);
    });
  }
  return g;
}

namespace {
double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}
}  // namespace

Expected<FlowResult> runFlow(const Mesh& sphere, const FlowOptions& o) {
  auto start = std::chrono::steady_clock::now();
  const Mesh m = jittered(sphere, o.jitter);
  FlowResult res;
  const size_t nv = m.vertices();
  res.vertices = nv, res.faces = m.faces.size();
  Graph g = developableGraph(m, o.weights, 0.0);
  // The edge weight: `stretch` times the sphere's mean λ (the reference evaluator, once).
  {
    Evaluation e = evaluate(g);
    double mean = std::accumulate(e.residuals.begin(), e.residuals.begin() + nv, 0.0) / double(nv);
    const LeafDecl& wd = g.decls().back();
    g.setLeaf(wd.first, o.stretch * mean);
    res.threshold = o.developableRatio * mean;
  }
  std::vector<double> x(m.xyz);
  res.start = m.xyz;
  // The problem: compiled kernels on a device, or the host's reference evaluator.
  std::unique_ptr<runtime::Device> dev;
  std::unique_ptr<DeviceEnergy> kernels;
  std::unique_ptr<GraphProblem> host;
  std::unique_ptr<SumOfResiduals> hostEnergy;
  std::vector<double> r(g.residuals().size());
  std::function<Status(std::span<const double>)> residualsAt;
  EnergyProblem* problem = nullptr;
  if (o.target == "host") {
    host = std::make_unique<GraphProblem>(g);
    hostEnergy = std::make_unique<SumOfResiduals>(*host);
    problem = hostEnergy.get();
    res.kernels = 0;
    residualsAt = [&](std::span<const double> at) { return host->evaluate(at, r, nullptr); };
  } else {
    auto d = runtime::openDevice(o.target);
    if (!d) return d.error();
    dev = std::move(*d);
    auto k = DeviceEnergy::create(g, *dev);
    if (!k) return k.error();
    kernels = std::move(*k);
    problem = kernels.get();
    res.kernels = kernels->kernels();
    residualsAt = [&](std::span<const double> at) -> Status {
      auto f = kernels->evaluate(at, {});
      if (!f) return f.error();
      r = kernels->residuals();
      return {};
    };
  }
  auto summarise = [&](double& energy, double& total, double& developable) {
    energy = std::accumulate(r.begin(), r.begin() + nv, 0.0);
    total = std::accumulate(r.begin(), r.end(), 0.0);
    size_t count = 0;
    for (size_t v = 0; v < nv; ++v) count += r[v] < res.threshold;
    developable = double(count) / double(nv);
  };
  if (Status s = residualsAt(x); !s) return s.error();
  summarise(res.energyBefore, res.totalBefore, res.developableBefore);
  res.setupSeconds = seconds(start);

  SolverOptions so;
  so.method = Method::Lbfgs;
  so.maxIterations = o.maxIterations;
  so.gradientTolerance = 1e-12;
  so.costChangeTolerance = 1e-9;
  auto solved = lbfgs(*problem, x, so);
  if (!solved) return solved.error();
  res.solve = *solved;

  if (Status s = residualsAt(x); !s) return s.error();
  summarise(res.energyAfter, res.totalAfter, res.developableAfter);
  res.lambda.assign(r.begin(), r.begin() + nv);
  for (auto [i, j] : edges(m)) {
    double d0 = 0, d = 0;
    for (int k = 0; k < 3; ++k) {
      d0 += std::pow(m.xyz[3 * i + k] - m.xyz[3 * j + k], 2);
      d += std::pow(x[3 * i + k] - x[3 * j + k], 2);
    }
    res.maxStretch = std::max(res.maxStretch, std::abs(std::sqrt(d / d0) - 1));
  }
  res.x = std::move(x);
  return res;
}

Status writeObj(const std::string& path, const Mesh& m, std::span<const double> xyz) {
  std::ofstream out(path);
  if (!out) return Error{{}, "cannot write '" + path + "'"};
  char line[128];
  for (size_t v = 0; v < m.vertices(); ++v) {
    std::snprintf(line, sizeof line, "v %.17g %.17g %.17g\n", xyz[3 * v], xyz[3 * v + 1], xyz[3 * v + 2]);
    out << line;
  }
  for (auto [a, b, c] : m.faces) out << "f " << a + 1 << " " << b + 1 << " " << c + 1 << "\n";
  out.close();
  if (!out) return Error{{}, "writing '" + path + "' failed"};
  return {};
}

Expected<Mesh> readObj(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{{}, "cannot read '" + path + "'"};
  Mesh m;
  std::string line;
  for (size_t no = 1; std::getline(in, line); ++no) {
    std::istringstream s(line);
    std::string kind;
    s >> kind;
    auto bad = [&](const std::string& why) { return Error{{}, path + ":" + std::to_string(no) + ": " + why}; };
    if (kind == "v") {
      double p[3];
      if (!(s >> p[0] >> p[1] >> p[2])) return bad("a vertex needs three numbers");
      m.xyz.insert(m.xyz.end(), p, p + 3);
    } else if (kind == "f") {
      std::array<uint32_t, 3> f;
      for (uint32_t& i : f) {
        std::string tok;
        if (!(s >> tok)) return bad("a face needs three vertices");
        long k = std::strtol(tok.c_str(), nullptr, 10);  // "a", "a/t" or "a/t/n"
        if (k < 1 || size_t(k) > m.vertices()) return bad("vertex index '" + tok + "' is out of range");
        i = uint32_t(k - 1);
      }
      std::string more;
      if (s >> more) return bad("only triangles are read");
      m.faces.push_back(f);
    }
  }
  return m;
}

}  // namespace eph::value::demo
