// eph_value_ceres_bench: residual + Jacobian evaluations on the CPU, ephc's
// compiled Value-graph kernels (cpu target) against Ceres Solver's
// AutoDiffCostFunction (issue 12 item 8: goal at least 3x Ceres).
//
// The same residuals (bench/value/ValueBench.h: edge lengths of a grid mesh,
// and dihedral angles of its quads, from one template) are traced into a
// Value graph and compiled by ephc, and given to Ceres as one
// AutoDiffCostFunction per residual (parameter blocks: the vertices, 3 each,
// in vertex order). One evaluation is, at the same thread count:
//   ephc            upload x, the residual kernel and the Jacobian kernel
//                   (frontends/value/Lower.h: @vg0 and @vg0.j), download r and
//                   the Jacobian values
//   Ceres Evaluate  Problem::Evaluate(num_threads) with residuals and the
//                   Jacobian (a CRSMatrix), the documented API
//   Ceres loop      every CostFunction::Evaluate called directly into
//                   preallocated arrays (OpenMP, static schedule): the least
//                   Ceres's autodiff itself costs, without its Program
//                   and Evaluator set-up
// Both sides are checked against each other (residuals, every Jacobian entry)
// and the residuals against the template on doubles before anything is
// timed. Each time is the median of --runs runs, each run the mean of as many
// evaluations as fill --min-ms (after a warm-up evaluation); the runs of the
// four are interleaved (ephc, kernels, Evaluate, loop, ephc, ...). The JSON
// has every run, and the fastest run of each (best-of, for loaded machines).
//
//   eph_value_ceres_bench [--sizes 10000,100000,1000000] [--families edge,hinge]
//                         [--threads N] [--runs 7] [--min-ms 100] [--json FILE]
// --threads sets EPH_THREADS for the cpu device and num_threads for Ceres
// (default: EPH_THREADS, else 1).
#include <ceres/ceres.h>
#include <ceres/version.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "bench/value/ValueBench.h"

using namespace vbench;

namespace {

struct EdgeCost {
  double len;
  template <class T>
  bool operator()(const T* a, const T* b, T* r) const {
    r[0] = edgeResidual(a, b, T(len));
    return true;
  }
};

struct HingeCost {
  double rest;
  template <class T>
  bool operator()(const T* a, const T* b, const T* c, const T* d, T* r) const {
    r[0] = hingeResidual(a, b, c, d, T(rest));
    return true;
  }
};

// Per-call milliseconds of each of fns, interleaved so that a loaded machine
// slows each alike: one warm-up call each (which sets how many calls fill
// minMs), then `runs` rounds, each timing every fn over its calls in turn.
std::vector<std::vector<double>> timeCalls(const std::vector<std::function<void()>>& fns, int runs, double minMs) {
  std::vector<int> reps;
  for (auto& fn : fns) {
    auto t0 = Clock::now();
    fn();
    reps.push_back(std::max(1, int(minMs / std::max(msSince(t0), 1e-3))));
  }
  std::vector<std::vector<double>> out(fns.size());
  for (int r = 0; r < runs; ++r)
    for (size_t f = 0; f < fns.size(); ++f) {
      auto t = Clock::now();
      for (int i = 0; i < reps[f]; ++i) fns[f]();
      out[f].push_back(msSince(t) / reps[f]);
    }
  return out;
}

double minOf(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

struct Row {
  std::string family;
  size_t n = 0, params = 0;
  double traceMs = 0, compileMs = 0, ceresSetupMs = 0;
  double resErr = 0, jacErr = 0, refErr = 0;
  std::vector<double> ours, oursKernels, evaluate, loop;
};

std::vector<size_t> parseSizes(const std::string& s) {
  std::vector<size_t> out;
  std::stringstream in(s);
  for (std::string t; std::getline(in, t, ',');) {
    double v = std::atof(t.c_str());
    if (v < 1) fail("--sizes wants positive counts, got '" + t + "'");
    out.push_back(size_t(v));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "10000,100000,1000000", families = "edge,hinge", json;
  int runs = 7;
  double minMs = 100;
  int threads = 1;
  if (const char* e = std::getenv("EPH_THREADS")) threads = std::max(1, std::atoi(e));
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " wants a value");
      return argv[++i];
    };
    if (a == "--sizes") sizes = next();
    else if (a == "--families") families = next();
    else if (a == "--threads") threads = std::max(1, std::atoi(next().c_str()));
    else if (a == "--runs") runs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--min-ms") minMs = std::atof(next().c_str());
    else if (a == "--json") json = next();
    else fail("usage: eph_value_ceres_bench [--sizes N,..] [--families edge,hinge] [--threads N] [--runs R] "
              "[--min-ms MS] [--json FILE]");
  }
  setenv("EPH_THREADS", std::to_string(threads).c_str(), 1);
  auto dev = eph::runtime::openDevice("cpu");
  if (!dev) fail(dev.error().str());
  std::fprintf(stderr, "device: %s; Ceres %s, num_threads %d\n", (*dev)->caps().name.c_str(),
               CERES_VERSION_STRING, threads);

  std::vector<Row> rows;
  std::stringstream famIn(families);
  for (std::string fname; std::getline(famIn, fname, ',');) {
    Family fam;
    if (!parseFamily(fname, fam)) fail("--families: unknown family '" + fname + "' (edge, hinge)");
    for (size_t n : parseSizes(sizes)) {
      Row row;
      row.family = fname;
      row.n = n;
      Mesh m = makeMesh(fam, n);
      auto t0 = Clock::now();
      eph::value::Graph g = buildGraph(m);
      row.traceMs = msSince(t0);
      KernelRunner ours(**dev, g, m, /*jacobian=*/true);
      row.compileMs = ours.compileMs;
      row.params = ours.numParams();
      g = eph::value::Graph();  // the kernels need only the buffers now

      // Ceres: one parameter block per vertex, one AutoDiffCostFunction per residual.
      t0 = Clock::now();
      std::vector<double> x = m.xyz, xc = m.xyz;
      ceres::Problem problem;
      size_t V = m.vertices();
      for (size_t v = 0; v < V; ++v) problem.AddParameterBlock(&xc[3 * v], 3);
      unsigned k = pointsPer(fam);
      std::vector<ceres::CostFunction*> costs(n);
      for (size_t i = 0; i < n; ++i) {
        double* p[4];
        for (unsigned j = 0; j < k; ++j) p[j] = &xc[3 * size_t(m.vert[k * i + j])];
        if (fam == Family::Edge) {
          costs[i] = new ceres::AutoDiffCostFunction<EdgeCost, 1, 3, 3>(new EdgeCost{m.rest[i]});
          problem.AddResidualBlock(costs[i], nullptr, p[0], p[1]);
        } else {
          costs[i] = new ceres::AutoDiffCostFunction<HingeCost, 1, 3, 3, 3, 3>(new HingeCost{m.rest[i]});
          problem.AddResidualBlock(costs[i], nullptr, p[0], p[1], p[2], p[3]);
        }
      }
      row.ceresSetupMs = msSince(t0);
      ceres::Problem::EvaluateOptions eo;
      eo.num_threads = threads;
      double cost = 0;
      std::vector<double> cr;
      ceres::CRSMatrix cj;
      auto ceresEvaluate = [&] {
        if (!problem.Evaluate(eo, &cost, &cr, nullptr, &cj)) fail("Ceres: Problem::Evaluate failed");
      };
      std::vector<double> lr(n), lj(n * 3 * k);
      auto ceresLoop = [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (long i = 0; i < long(n); ++i) {
          const double* p[4];
          double* jac[4];
          for (unsigned j = 0; j < k; ++j) {
            p[j] = &xc[3 * size_t(m.vert[k * i + j])];
            jac[j] = &lj[size_t(i) * 3 * k + 3 * j];
          }
          costs[i]->Evaluate(p, &lr[i], jac);
        }
      };
      std::vector<double> r, J;
      auto oursEval = [&] {
        ours.uploadParams(x);
        ours.dispatch();
        ours.download(r, J);
      };

      // Check: the same residuals and Jacobians on both sides.
      oursEval();
      ceresEvaluate();
      ceresLoop();
      std::vector<double> ref = referenceResiduals(m);
      for (size_t i = 0; i < n; ++i) {
        row.resErr = std::max({row.resErr, std::abs(r[i] - cr[i]), std::abs(lr[i] - cr[i])});
        row.refErr = std::max(row.refErr, std::abs(r[i] - ref[i]));
      }
      if (cj.num_rows != int(n) || cj.num_cols != int(ours.numParams()))
        fail("Ceres's Jacobian is " + std::to_string(cj.num_rows) + " x " + std::to_string(cj.num_cols));
      std::vector<uint32_t> cols = ours.jacobianColumns();
      size_t T = ours.trainableSlots();
      if (T != 3 * k) fail("expected " + std::to_string(3 * k) + " trainable slots");
      // Each row as (column, value) sorted by column: ours (slot order), Ceres's
      // CRS row and the loop's blocks (vertex order).
      std::vector<std::pair<uint32_t, double>> a(T), b(T), c(T);
      for (size_t inst = 0; inst < n; ++inst) {
        size_t rowIdx = ours.rowOf()[inst];
        if (size_t(cj.rows[rowIdx + 1] - cj.rows[rowIdx]) != T) fail("Ceres's row has a different entry count");
        for (size_t j = 0; j < T; ++j) {
          a[j] = {cols[inst * T + j], J[inst * T + j]};
          b[j] = {uint32_t(cj.cols[cj.rows[rowIdx] + j]), cj.values[cj.rows[rowIdx] + j]};
          c[j] = {uint32_t(3 * m.vert[k * rowIdx + j / 3] + j % 3), lj[rowIdx * T + j]};
        }
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        std::sort(c.begin(), c.end());
        for (size_t j = 0; j < T; ++j) {
          if (a[j].first != b[j].first || c[j].first != b[j].first)
            fail("Jacobian columns differ in row " + std::to_string(rowIdx));
          double scale = std::max(1.0, std::abs(b[j].second));
          row.jacErr = std::max({row.jacErr, std::abs(a[j].second - b[j].second) / scale,
                                 std::abs(c[j].second - b[j].second) / scale});
        }
      }
      if (row.resErr > 1e-12 || row.refErr > 1e-12 || row.jacErr > 1e-10)
        fail(fname + " " + std::to_string(n) + ": the sides disagree: residuals " + std::to_string(row.resErr) +
             ", against the template on doubles " + std::to_string(row.refErr) + ", Jacobian " +
             std::to_string(row.jacErr));

      auto times = timeCalls({oursEval, [&] { ours.dispatch(); }, ceresEvaluate, ceresLoop}, runs, minMs);
      row.ours = times[0], row.oursKernels = times[1], row.evaluate = times[2], row.loop = times[3];
      std::fprintf(stderr, "%s %zu: ephc %.3f ms (kernels %.3f), Ceres Evaluate %.3f ms, Ceres loop %.3f ms\n",
                   fname.c_str(), n, median(row.ours), median(row.oursKernels), median(row.evaluate),
                   median(row.loop));
      rows.push_back(std::move(row));
    }
  }

  std::string date = utcNow(), cpu = (*dev)->caps().name;
  std::printf("eph_value_ceres_bench on %s, %s; Ceres %s, %d thread(s); median of %d runs\n", cpu.c_str(),
              date.c_str(), CERES_VERSION_STRING, threads, runs);
  std::printf("residual + Jacobian evaluations (ms per evaluation of all N residuals; M/s = million residuals per s)\n");
  std::printf("%-6s %9s %10s %10s %8s %12s %10s %9s %9s %9s %9s %9s\n", "family", "N", "ephc ms", "kernels", "M/s",
              "Ceres Eval", "Ceres loop", "x Eval", "x loop", "best xEv", "best xlp", "max err");
  // (best: the ratios of the fastest runs)
  for (const Row& r : rows) {
    double o = median(r.ours), e = median(r.evaluate), l = median(r.loop);
    double bo = minOf(r.ours);
    std::printf("%-6s %9zu %10.3f %10.3f %8.1f %12.3f %10.3f %8.2fx %8.2fx %8.2fx %8.2fx %9.1e\n", r.family.c_str(),
                r.n, o, median(r.oursKernels), double(r.n) / o / 1e3, e, l, e / o, l / o, minOf(r.evaluate) / bo,
                minOf(r.loop) / bo, std::max(r.resErr, r.jacErr));
  }
  if (!json.empty()) {
    std::ofstream out(json);
    auto arr = [](const std::vector<double>& v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
      return s + "]";
    };
    out << "{\n  \"bench\": \"eph_value_ceres_bench\",\n  \"device\": \"" << jsonEscape(cpu) << "\",\n  \"date\": \""
        << date << "\",\n  \"ceres\": \"" << CERES_VERSION_STRING << "\",\n  \"threads\": " << threads
        << ",\n  \"runs\": " << runs << ",\n  \"unit\": \"ms per evaluation (residuals + Jacobian)\",\n  \"results\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      out << "    {\"family\": \"" << r.family << "\", \"residuals\": " << r.n << ", \"params\": " << r.params
          << ", \"ephc_ms\": " << median(r.ours) << ", \"ephc_kernels_ms\": " << median(r.oursKernels)
          << ", \"ceres_evaluate_ms\": " << median(r.evaluate) << ", \"ceres_loop_ms\": " << median(r.loop)
          << ", \"ratio_vs_evaluate\": " << median(r.evaluate) / median(r.ours)
          << ", \"ratio_vs_loop\": " << median(r.loop) / median(r.ours) << ", \"ephc_min_ms\": " << minOf(r.ours)
          << ", \"ceres_evaluate_min_ms\": " << minOf(r.evaluate) << ", \"ceres_loop_min_ms\": " << minOf(r.loop)
          << ", \"trace_ms\": " << r.traceMs
          << ", \"compile_ms\": " << r.compileMs << ", \"ceres_setup_ms\": " << r.ceresSetupMs
          << ", \"residual_error\": " << r.resErr << ", \"jacobian_error\": " << r.jacErr
          << ",\n     \"ephc_runs_ms\": " << arr(r.ours) << ", \"ephc_kernels_runs_ms\": " << arr(r.oursKernels)
          << ", \"ceres_evaluate_runs_ms\": " << arr(r.evaluate) << ", \"ceres_loop_runs_ms\": " << arr(r.loop)
          << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    out << "  ]\n}\n";
  }
  return 0;
}
