// Developable-surface flow on icospheres (Stein, Grinspun and Crane 2018,
// "Developability of triangle meshes"): the covariance energy E^λ = Σ_v λ_v,
// λ_v the smallest eigenvalue of Σ_t θ_t n_t n_tᵀ over the triangles t around
// vertex v (n_t the unit normal, θ_t the interior angle at v: the paper's
// tip-angle weights; Weights::Uniform uses θ_t = 1), plus a weak edge-length
// term that fixes the scale and keeps the triangles well shaped:
//
//   E(x) = Σ_v λ_v(x) + w Σ_e (|e|² / |e₀|² − 1)²,  w = stretch · mean_v λ_v(x₀)
//
// One residual per vertex, traced with the C++ API (two signatures: valence 5
// and valence 6) and one per edge (one signature), minimised by L-BFGS on
// Σ r (the solver's energy form). docs/value.md, "Demo: developable flow".
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "frontends/value/Graph.h"
#include "frontends/value/solve/Solver.h"

namespace eph::value::demo {

struct Mesh {
  std::vector<double> xyz;                       // 3 per vertex
  std::vector<std::array<uint32_t, 3>> faces;    // counter-clockwise seen from outside
  size_t vertices() const { return xyz.size() / 3; }
};

// The icosahedron subdivided `level` times (each triangle into four), vertices
// on the unit sphere: 10·4^level + 2 vertices, 20·4^level faces.
Mesh icosphere(int level);
// Each vertex's neighbours in counter-clockwise order (a closed mesh).
std::vector<std::vector<uint32_t>> oneRings(const Mesh& m);
// Each undirected edge once, (i, j) with i < j.
std::vector<std::array<uint32_t, 2>> edges(const Mesh& m);

enum class Weights { Angle, Uniform };

struct FlowOptions {
  std::string target = "cpu";  // interp, cpu, vulkan (compiled kernels) or host (the float64 reference evaluator)
  int maxIterations = 200;
  Weights weights = Weights::Angle;
  double stretch = 1.0;             // the edge term's weight relative to the sphere's mean λ
  double developableRatio = 1e-2;   // a vertex is developable when λ_v < ratio · mean λ on the sphere
  // Each vertex moves by up to jitter · (mean edge length) first, the same
  // pseudo-random way on every target: on the exact icosphere the valence-5
  // vertices have a double smallest eigenvalue, where λ is not differentiable
  // and the gradient's direction there would be picked by rounding.
  double jitter = 1e-3;
};

struct FlowResult {
  size_t vertices = 0, faces = 0, kernels = 0;
  double energyBefore = 0, energyAfter = 0;  // Σ_v λ_v
  double totalBefore = 0, totalAfter = 0;    // E, with the edge term
  double threshold = 0;                      // λ below which a vertex counts as developable
  double developableBefore = 0, developableAfter = 0;  // fractions of vertices
  double maxStretch = 0;                     // max_e | |e|/|e₀| − 1 | at the end
  SolveResult solve;
  double setupSeconds = 0;                   // graph, grouping, lowering and kernel compilation
  std::vector<double> start;                 // the jittered starting positions
  std::vector<double> x;                     // the final positions
  std::vector<double> lambda;                // per vertex, at the end
};

// `m` with every vertex moved by a deterministic pseudo-random offset of at
// most `amount` times the mean edge length in each coordinate.
Mesh jittered(const Mesh& m, double amount);
// Builds the graph of `m` (params x[3V], consts rest[E]) with edge weight `w`.
Graph developableGraph(const Mesh& m, Weights weights, double w);
// Runs the flow from `m`'s positions, jittered by o.jitter (FlowResult::start).
Expected<FlowResult> runFlow(const Mesh& m, const FlowOptions& o);

// Wavefront OBJ: `v x y z` lines then `f a b c` (1-based).
Status writeObj(const std::string& path, const Mesh& m, std::span<const double> xyz);
// Reads an OBJ back (v and f lines; other lines are skipped): errors name the line.
Expected<Mesh> readObj(const std::string& path);

}  // namespace eph::value::demo
