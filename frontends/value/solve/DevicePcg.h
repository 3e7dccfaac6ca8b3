// The solvers' vector and sparse-matrix arithmetic on a runtime Device
// (docs/value-solvers.md, "On the device"): small IR kernels built with
// ir/Builder.h, compiled once per DeviceLinalg, dispatched through the
// Device API on f64 buffers that stay on the device. Only reductions (dot
// products, max |v_i|) come back to the host: each as a fixed number of
// partial results (kReduceThreads), summed on the host in a fixed order, so a
// reduction gives the same bits on every run.
//
// A DeviceJacobian is J in the layout the lowered graph's `@vgK.j` kernels
// write (jacobianLayout: per signature, per instance, its trainable slots),
// with the row tables (for J·v) and the column tables (for Jᵀ·u and
// diag(JᵀJ)) uploaded once; its values may be f32 (--precision=f32 kernels),
// widened to f64 as they are read.
//
// DevicePcgOps is PcgOps (Pcg.h) over device buffers: every slot, the
// residual-space temporary, the damping and the Jacobi preconditioner live on
// the device; per PCG iteration two dot products come back, never a vector.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <vector>

#include "frontends/value/solve/Pcg.h"
#include "ir/IR.h"
#include "runtime/Device.h"

namespace eph::value {

struct DeviceJacobian {
  size_t rows = 0, cols = 0, values = 0;  // residuals, parameters, entries of the values buffer
  uint64_t vals = 0;                      // the values (f64, or f32 when the DeviceLinalg says so)
  // Row i's entries are vals[rowStart[i] .. rowStart[i] + rowLen[i]), their
  // columns col[p] (p in the values' order).
  uint64_t rowStart = 0, rowLen = 0, col = 0;
  // Column c's entries: positions colPos[colStart[c] .. colStart[c + 1]), of rows colRow[...].
  uint64_t colStart = 0, colPos = 0, colRow = 0;
};

class DeviceLinalg {
 public:
  static constexpr uint32_t kReduceThreads = 256;

  // `f32Jacobian`: the Jacobian values (and narrow/widen's other side) are f32.
  // `ctx`: the IR context of the buffers' element types, when other kernels
  // (the graph's) share the buffers (the interpreter's device checks types by
  // identity); else its own.
  static Expected<std::unique_ptr<DeviceLinalg>> create(runtime::Device& dev, bool f32Jacobian = false,
                                                        ir::Context* ctx = nullptr);
  ~DeviceLinalg();
  runtime::Device& device() const { return dev_; }
  bool f32() const { return f32_; }

  // A device buffer of max(n, 1) f64 (or, with `narrowType`, the Jacobian's
  // element type), owned by this object.
  Expected<uint64_t> alloc(size_t n, bool narrowType = false);
  Expected<uint64_t> allocU32(std::span<const uint32_t> init);
  void release(uint64_t buf);
  Status upload(uint64_t buf, std::span<const double> v);
  Status download(uint64_t buf, std::span<double> v);

  // J's tables from a row structure: per row its entries' positions start at
  // start[i] (consecutive), with columns cols[...] (rowStart/cols of SparseRows
  // when start = rowStart). `values` entries.
  Expected<DeviceJacobian> jacobian(size_t rows, size_t cols, size_t values, std::span<const uint64_t> start,
                                    std::span<const uint32_t> rowLen, std::span<const uint32_t> colOfValue);
  // The same for a host SparseRows, its values uploaded into a new buffer.
  Expected<DeviceJacobian> upload(const SparseRows& J);

  // Over the first n elements of f64 buffers (x and y distinct unless said).
  Expected<double> dot(uint64_t a, uint64_t b, size_t n);
  Expected<double> maxAbs(uint64_t a, size_t n);  // max |a_i|; NaN when some a_i is NaN
  Status axpy(double a, uint64_t x, uint64_t y, size_t n);  // y ← a·x + y
  Status xpay(uint64_t x, double a, uint64_t y, size_t n);  // y ← x + a·y
  Status scale(double a, uint64_t x, uint64_t y, size_t n); // y ← a·x
  Status copy(uint64_t x, uint64_t y, size_t n) { return scale(1.0, x, y, n); }
  Status fill(uint64_t y, double v, size_t n);
  Status mulAdd(uint64_t d, uint64_t x, uint64_t y, size_t n);  // y ← y + d ⊙ x
  Status mul(uint64_t d, uint64_t x, uint64_t y, size_t n);     // y ← d ⊙ x
  // y ← λ·clamp(D, lo, hi) (LM's damping).
  Status clampScale(uint64_t D, double lambda, double lo, double hi, uint64_t y, size_t n);
  // y ← 1 / (D + d) where positive, else 1 (the Jacobi preconditioner).
  Status invDiag(uint64_t D, uint64_t d, uint64_t y, size_t n);
  // Between f64 and the Jacobian's element type (f32 mode only).
  Status narrow(uint64_t x64, uint64_t y, size_t n);
  Status widen(uint64_t x, uint64_t y64, size_t n);

  Status multiplyJ(const DeviceJacobian& J, uint64_t v, uint64_t out);     // out = J·v (rows)
  Status multiplyJt(const DeviceJacobian& J, uint64_t u, uint64_t out);    // out = Jᵀ·u (cols)
  Status columnSquares(const DeviceJacobian& J, uint64_t out);             // out = diag(JᵀJ)
  Expected<double> valuesSquared(const DeviceJacobian& J);                 // Σ J_ij² (non-finite: some entry is)

 private:
  DeviceLinalg(runtime::Device& dev, bool f32, ir::Context* ctx)
      : dev_(dev), f32_(f32), own_(ctx ? nullptr : std::make_unique<ir::Context>()), ctx_(ctx ? *ctx : *own_) {}
  Status build();
  Status run(const char* kernel, size_t threads, std::vector<interp::RtValue> args);
  Expected<double> reduce(const char* kernel, std::vector<interp::RtValue> args, bool isMax);
  interp::RtValue buf(const char* kernel, unsigned i, uint64_t h) const;
  interp::RtValue num(const char* kernel, unsigned i, double v) const;
  interp::RtValue count(const char* kernel, unsigned i, size_t n) const;

  runtime::Device& dev_;
  bool f32_;
  std::unique_ptr<ir::Context> own_;
  ir::Context& ctx_;
  std::unique_ptr<ir::Module> m_;
  std::vector<uint64_t> owned_;
  uint64_t partials_ = 0;
};

// PcgOps on the device. `J` and `damping` (an f64 buffer of J.cols) must
// outlive it; the slots are its own buffers (buffer(v) gives them, to set B
// and read X on the device).
class DevicePcgOps : public PcgOps {
 public:
  static Expected<std::unique_ptr<DevicePcgOps>> create(DeviceLinalg& la, const DeviceJacobian& J, uint64_t damping);
  ~DevicePcgOps();
  uint64_t buffer(Vec v) const { return v_[v]; }
  // The first error of a vector operation (PcgOps returns none): the caller
  // checks it after pcg().
  const Status& status() const { return status_; }
  // Recomputes the preconditioner for new damping values (same buffer).
  Status setDamping(uint64_t damping);

  double dot(Vec a, Vec b) override;
  void axpy(double a, Vec x, Vec y) override;
  void xpay(Vec x, double a, Vec y) override;
  void copy(Vec from, Vec to) override;
  void zero(Vec v) override;
  void multiplyJ(Vec in) override;
  void multiplyJt(Vec out) override;
  void addDamping(Vec in, Vec out) override;
  void precondition(Vec in, Vec out) override;

 private:
  DevicePcgOps(DeviceLinalg& la, const DeviceJacobian& J, uint64_t d) : la_(la), J_(J), d_(d) {}
  void keep(Status s) {
    if (!s && status_) status_ = std::move(s);
  }
  DeviceLinalg& la_;
  const DeviceJacobian& J_;
  uint64_t d_;
  uint64_t t_ = 0, colSq_ = 0, invDiag_ = 0;
  std::array<uint64_t, NumVecs> v_{};
  Status status_;
};

}  // namespace eph::value
