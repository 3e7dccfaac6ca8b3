// Shared pieces of the Value-graph benchmarks (issue 12 item 8): the test
// problems, their residuals written once as templates (traced into a Value
// graph by us, differentiated as ceres::Jet by Ceres, evaluated on doubles by
// the checks), and a driver that runs the compiled kernels of a graph on any
// runtime Device.
//
// Problems (deterministic: the PyTorch peer, bench/device/torch_value.py,
// builds the same numbers):
//   edge   r = |p_i − p_j| − L_e over the edges of a triangulated grid
//          (right, down and diagonal edges per vertex, in vertex order; the
//          first N), 6 parameters and 1 constant per residual.
//   hinge  r = dihedral angle across the diagonal of each grid quad − θ_q
//          (atan2 of cross and dot products of the two triangle normals),
//          12 parameters and 1 constant per residual: a nonlinear family.
// Vertex v = y·W + x sits at (x + 0.1 sin(0.7 v), y + 0.1 cos(1.3 v),
// 0.2 sin(0.05 x) cos(0.07 y) + 0.05 sin(0.9 v)).
//
// The driver (KernelRunner) lowers a one-instance copy of the problem with
// frontends/value's lowerGraph (the same signature, so the same kernels: the
// bench checks the keys are equal) and dispatches its kernels itself over
// the full problem's index tables, built from groupResiduals as lowerGraph's
// @main builds them. (That @main uploads every leaf and table entry with one
// IR store each, so lowering a million residuals through it would build an
// IR of tens of millions of ops: the host side is the bench's.) The
// derivative kernel (@vg0.g or @vg0.j) stores the residuals too.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontends/value/Graph.h"
#include "frontends/value/Signature.h"
#include "ir/IR.h"
#include "runtime/Device.h"

namespace vbench {

enum class Family { Edge, Hinge };
const char* familyName(Family f);
bool parseFamily(const std::string& s, Family& f);
unsigned pointsPer(Family f);  // vertices one residual reads: 2 or 4

struct Mesh {
  Family family = Family::Edge;
  uint32_t W = 0, H = 0;       // grid vertices
  std::vector<double> xyz;     // 3 per vertex
  std::vector<uint32_t> vert;  // pointsPer(family) vertex indices per residual
  std::vector<double> rest;    // L_e or θ_q per residual
  size_t residuals() const { return rest.size(); }
  size_t vertices() const { return size_t(W) * H; }
};
Mesh makeMesh(Family f, size_t n);

// The residual of one instance from its points (3 scalars each) and its
// constant: the same source for Value (traced), ceres::Jet and double.
template <class T>
T edgeResidual(const T* a, const T* b, const T& len) {
  using std::sqrt;
  T dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  return sqrt(dx * dx + dy * dy + dz * dz) - len;
}

// The signed dihedral angle across edge (a, b) between triangles (a, b, c)
// and (a, d, b), minus the rest angle.
template <class T>
T hingeResidual(const T* a, const T* b, const T* c, const T* d, const T& rest) {
  using std::atan2;
  using std::sqrt;
  T e[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
  T u[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
  T w[3] = {d[0] - a[0], d[1] - a[1], d[2] - a[2]};
  auto cross = [](const T* x, const T* y, T* out) {
    out[0] = x[1] * y[2] - x[2] * y[1];
    out[1] = x[2] * y[0] - x[0] * y[2];
    out[2] = x[0] * y[1] - x[1] * y[0];
  };
  auto dot = [](const T* x, const T* y) { return x[0] * y[0] + x[1] * y[1] + x[2] * y[2]; };
  T n1[3], n2[3], m[3];
  cross(u, e, n1);  // normal of (a, b, c): (c − a) × (b − a) keeps both normals on one side for flat quads
  cross(e, w, n2);
  cross(n1, n2, m);
  T el = sqrt(dot(e, e));
  return atan2(dot(m, e) / el, dot(n1, n2)) - rest;
}

// The Value graph of a mesh: param p[3V], const rest[N], one residual per instance.
eph::value::Graph buildGraph(const Mesh& m);
// Residuals of the mesh on doubles (the template on double).
std::vector<double> referenceResiduals(const Mesh& m);

using Clock = std::chrono::steady_clock;
inline double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
double median(std::vector<double> v);
[[noreturn]] void fail(const std::string& msg);
void check(const eph::Status& s);

// The compiled kernels of a one-signature graph on a device, with the full
// problem's buffers uploaded: params (x), consts, the index table, r, and
// either the Jacobian values (6 or 12 per residual, jacobian=true) or the
// gradient of Σr (one per parameter).
class KernelRunner {
 public:
  KernelRunner(eph::runtime::Device& dev, const eph::value::Graph& g, const Mesh& m, bool jacobian,
               unsigned workgroupSize = 64);
  ~KernelRunner();
  // One evaluation: with the gradient, the zero kernel over grad first; then
  // the Jacobian (or gradient) kernel, which stores the residuals too.
  void dispatch();
  void uploadParams(const std::vector<double>& x);
  // Downloads r (one per residual) and the Jacobian values or the gradient
  // into the vectors (resized once, then reused).
  void download(std::vector<double>& r, std::vector<double>& out);
  // The Jacobian's columns: per instance, the parameter index of each
  // trainable slot in slot order (the order of its values in out); the
  // instance's residual (its row) is rowOf()[instance].
  std::vector<uint32_t> jacobianColumns() const;
  const std::vector<uint32_t>& rowOf() const { return rowOf_; }
  size_t trainableSlots() const { return trainable_; }
  size_t numParams() const { return numParams_; }
  size_t numResiduals() const { return numResiduals_; }
  double compileMs = 0;  // grouping the full graph, lowering the kernels and prepare()
  int dispatchesPerEval() const { return jacobian_ ? 1 : 2; }

 private:
  eph::runtime::Device& dev_;
  eph::ir::Context ctx_;
  std::unique_ptr<eph::ir::Module> mod_;
  const eph::ir::Function *dKernel_ = nullptr, *zeroKernel_ = nullptr;
  bool jacobian_;
  unsigned wg_;
  size_t numParams_ = 0, numConsts_ = 0, numResiduals_ = 0, trainable_ = 0, outLen_ = 0;
  uint64_t params_ = 0, consts_ = 0, table_ = 0, r_ = 0, out_ = 0;
  std::vector<uint32_t> tableHost_, rowOf_;
  size_t slots_ = 0;
  std::vector<char> trainableSlot_;
};

std::string jsonEscape(const std::string& s);
std::string utcNow();  // "2026-11-23 20:15 UTC"

}  // namespace vbench
