// eph_gpu_bench: GPU benchmarks of kernels written in our IR, run through
// VulkanDevice and timed with GPU timestamps.
//
//   copy    dst = src over n floats (vec4 loads and stores)       GB/s (read + write)
//   saxpy   y = a*x + y over n floats (vec4)                      GB/s (2 reads + 1 write)
//   sum     one float from n floats: grid-stride vec4 loop, a     GB/s (read)
//           workgroup tree in shared memory, then a second pass
//   sgemm   C = A B, square fp32, 128x128 tiles, 8x8 per thread,  TFLOP/s
//           register prefetch of the next k-tile
//
// Each result is checked against a CPU reference (with a tolerance) before
// it is timed; the output is poisoned (NaN) first so unwritten elements fail.
// Times are the median of --runs dispatches recorded into one command buffer,
// after at least 300 ms of untimed warm-up runs.
// Prints a table and writes JSON (--json FILE).
//
// With --eph DIR the kernels come from Ephapax instead (issue #6):
// DIR/vadd.eph, DIR/reduce.eph and DIR/gemm.eph are compiled by the Ephapax
// frontend (the module `ephc run --target=vulkan` would run: no passes
// unless --passes), and their kernels timed the same way:
//
//   vadd            c = a + b, one float per invocation           GB/s (2 reads + 1 write)
//   vadd.x4         vadd after the vectorize pass (four floats an invocation, vec.load/vec.store)
//   vadd4           the same, one vec4 per invocation, written by hand
//   saxpy           y = a x + y, one float per invocation         GB/s (2 reads + 1 write)
//   saxpy.x4        saxpy after the vectorize pass
//   reduce          reduce_partial + reduce_final                 GB/s (read)
//   sgemm           128x128 tiles, 8x8 per invocation, k-loop     TFLOP/s
//   sgemm_unrolled  the same with the k-tile's 8 steps written out
//   sgemm_db        sgemm with the k-tiles double-buffered in workgroup memory
//
// A kernel without barrier() has the lowering's three hidden grid
// parameters (function attribute hidden_params = 3): the bench passes the
// grid in invocations, as `dispatch ... over` does.
//
//   eph_gpu_bench                 full sizes: copy/saxpy 1 GiB, sum 256M floats, sgemm 1024/4096/8192
//   eph_gpu_bench --small         sizes a CPU driver (lavapipe) runs in seconds
//   eph_gpu_bench --check-only    check every kernel at small sizes, no timing
//   eph_gpu_bench --eph bench/ephapax [--vadd N,..] [--reduce N,..] [--sgemm N,..]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "frontends/ephapax/Frontend.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"
#include "passes/Vectorize.h"
#include "runtime/vulkan/VulkanDevice.h"

namespace {

using eph::runtime::VulkanDevice;
namespace ir = eph::ir;
namespace interp = eph::interp;

// ---------------------------------------------------------------------------
// The kernels, as IR text.

// copy and saxpy: one vec4 per invocation; the workgroups form a 2D grid
// (gx, gy) so that more than 65535 fit on any device; invocation index =
// (workgroup_id.y * gx + workgroup_id.x) * 256 + local_id.
const char* kStreamKernels = R"(
device @flat_index() -> u32 {
  %lid = local_id {dim = 0} : u32
  %wx = workgroup_id {dim = 0} : u32
  %wy = workgroup_id {dim = 1} : u32
  %gx = num_workgroups {dim = 0} : u32
  %row = mul %wy, %gx : u32
  %g = add %row, %wx : u32
  %wg = const {value = 256} : u32
  %base = mul %g, %wg : u32
  %i = add %base, %lid : u32
  return %i
}

kernel @copy4(%src: buffer<vec<f32, 4>, device, read>, %dst: buffer<vec<f32, 4>, device, write>) workgroup(256, 1, 1) {
  %i = call {callee = @flat_index} : u32
  %n = buffer.len %dst : u32
  %inside = lt %i, %n : bool
  if %inside {
    %v = load %src, %i : vec<f32, 4>
    store %dst, %i, %v
    yield
  } {
    yield
  }
  return
}

// y = a*x + y, four floats per access.
kernel @saxpy4(%a: f32, %x: buffer<vec<f32, 4>, device, read>, %y: buffer<vec<f32, 4>, device, write>) workgroup(256, 1, 1) {
  %i = call {callee = @flat_index} : u32
  %n = buffer.len %y : u32
  %inside = lt %i, %n : bool
  if %inside {
    %av = vec.make %a, %a, %a, %a : vec<f32, 4>
    %xv = load %x, %i : vec<f32, 4>
    %yv = load %y, %i : vec<f32, 4>
    %ax = mul %av, %xv : vec<f32, 4>
    %r = add %ax, %yv : vec<f32, 4>
    store %y, %i, %r
    yield
  } {
    yield
  }
  return
}
)";

// The workgroup tree of the sum: 256 values in shared memory halved 8 times.
std::string treeReduce(const std::string& shared, const std::string& lid) {
  std::string s;
  for (int half = 128; half >= 1; half /= 2) {
    std::string h = std::to_string(half);
    s += "  %h" + h + " = const {value = " + h + "} : u32\n"
         "  %act" + h + " = lt " + lid + ", %h" + h + " : bool\n"
         "  if %act" + h + " {\n"
         "    %p" + h + " = load " + shared + ", " + lid + " : f32\n"
         "    %j" + h + " = add " + lid + ", %h" + h + " : u32\n"
         "    %q" + h + " = load " + shared + ", %j" + h + " : f32\n"
         "    %t" + h + " = add %p" + h + ", %q" + h + " : f32\n"
         "    store " + shared + ", " + lid + ", %t" + h + "\n"
         "    yield\n"
         "  } {\n"
         "    yield\n"
         "  }\n"
         "  barrier\n";
  }
  return s;
}

std::string sumKernels() {
  std::string s =
      "// Pass 1: each workgroup sums a grid-stride share of the vec4s, then its\n"
      "// 256 partial sums in shared memory, and writes one partial.\n"
      "kernel @sum_partial(%x: buffer<vec<f32, 4>, device, read>, %partial: buffer<f32, device, write>) workgroup(256, 1, 1) {\n"
      "  %sh = workgroup.alloc {size = 256} : buffer<f32, workgroup, write>\n"
      "  %gid = global_id {dim = 0} : u32\n"
      "  %lid = local_id {dim = 0} : u32\n"
      "  %grp = workgroup_id {dim = 0} : u32\n"
      "  %groups = num_workgroups {dim = 0} : u32\n"
      "  %wg = const {value = 256} : u32\n"
      "  %stride = mul %groups, %wg : u32\n"
      "  %n = buffer.len %x : u32\n"
      "  %z = const {value = 0.0} : f32\n"
      "  %z4 = vec.make %z, %z, %z, %z : vec<f32, 4>\n"
      "  %k0 = const {value = 0} : u32\n"
      "  %k1 = const {value = 1} : u32\n"
      "  %k2 = const {value = 2} : u32\n"
      "  %k3 = const {value = 3} : u32\n"
      "  // Four independent loads in flight per iteration; indices past the\n"
      "  // end are clamped and their values replaced by zero.\n"
      "  %four = const {value = 4} : u32\n"
      "  %stride4 = mul %stride, %four : u32\n"
      "  %one = const {value = 1} : u32\n"
      "  %last = sub %n, %one : u32\n"
      "  %acc = for %gid, %n, %stride4, %z4 : vec<f32, 4> { |%i: u32, %a: vec<f32, 4>|\n" +
      [] {
        std::string b;
        for (int k = 0; k < 4; ++k) {
          std::string K = std::to_string(k);
          b += "    %o" + K + " = mul %stride, %k" + K + " : u32\n"
               "    %i" + K + " = add %i, %o" + K + " : u32\n"
               "    %ok" + K + " = lt %i" + K + ", %n : bool\n"
               "    %c" + K + " = min %i" + K + ", %last : u32\n"
               "    %l" + K + " = load %x, %c" + K + " : vec<f32, 4>\n"
               "    %v" + K + " = select %ok" + K + ", %l" + K + ", %z4 : vec<f32, 4>\n";
        }
        return b;
      }() +
      "    %s01 = add %v0, %v1 : vec<f32, 4>\n"
      "    %s23 = add %v2, %v3 : vec<f32, 4>\n"
      "    %s = add %s01, %s23 : vec<f32, 4>\n"
      "    %a2 = add %a, %s : vec<f32, 4>\n"
      "    yield %a2\n"
      "  }\n"
      "  %c0 = vec.extract %acc {index = 0} : f32\n"
      "  %c1 = vec.extract %acc {index = 1} : f32\n"
      "  %c2 = vec.extract %acc {index = 2} : f32\n"
      "  %c3 = vec.extract %acc {index = 3} : f32\n"
      "  %t01 = add %c0, %c1 : f32\n"
      "  %t23 = add %c2, %c3 : f32\n"
      "  %mine = add %t01, %t23 : f32\n"
      "  store %sh, %lid, %mine\n"
      "  barrier\n" +
      treeReduce("%sh", "%lid") +
      "  %zero = const {value = 0} : u32\n"
      "  %first = eq %lid, %zero : bool\n"
      "  if %first {\n"
      "    %total = load %sh, %zero : f32\n"
      "    store %partial, %grp, %total\n"
      "    yield\n"
      "  } {\n"
      "    yield\n"
      "  }\n"
      "  return\n"
      "}\n\n"
      "// Pass 2: one workgroup sums the partials into out[0].\n"
      "kernel @sum_final(%partial: buffer<f32, device, read>, %out: buffer<f32, device, write>) workgroup(256, 1, 1) {\n"
      "  %sh = workgroup.alloc {size = 256} : buffer<f32, workgroup, write>\n"
      "  %lid = local_id {dim = 0} : u32\n"
      "  %wg = const {value = 256} : u32\n"
      "  %n = buffer.len %partial : u32\n"
      "  %z = const {value = 0.0} : f32\n"
      "  %acc = for %lid, %n, %wg, %z : f32 { |%i: u32, %a: f32|\n"
      "    %v = load %partial, %i : f32\n"
      "    %a2 = add %a, %v : f32\n"
      "    yield %a2\n"
      "  }\n"
      "  store %sh, %lid, %acc\n"
      "  barrier\n" +
      treeReduce("%sh", "%lid") +
      "  %zero = const {value = 0} : u32\n"
      "  %first = eq %lid, %zero : bool\n"
      "  if %first {\n"
      "    %total = load %sh, %zero : f32\n"
      "    store %out, %zero, %total\n"
      "    yield\n"
      "  } {\n"
      "    yield\n"
      "  }\n"
      "  return\n"
      "}\n";
  return s;
}

// SGEMM, C = A B with A (M x K), B (K x N), C (M x N) row-major; M, N
// multiples of 128 and K of 8. A workgroup of 256 computes a 128x128 tile of
// C, each invocation 8x8 of it: rows ty*4+{0..3} and 64+ty*4+{0..3}, columns
// (as vec4s) tx and 16+tx of the tile, with tx = lid % 16, ty = lid / 16.
// Per k-tile of 8: A's 128x8 slice goes to shared memory transposed
// (As[k][m], as vec4s along m), B's 8x128 slice as is (Bs[k][n] as vec4s);
// the next k-tile is loaded into registers while this one is used.
std::string sgemmKernel() {
  std::ostringstream o;
  auto line = [&](const std::string& s) { o << "  " << s << "\n"; };
  o << "kernel @sgemm(%K: u32, %a: buffer<f32, device, read>, %b: buffer<vec<f32, 4>, device, read>, "
       "%c: buffer<vec<f32, 4>, device, write>) workgroup(256, 1, 1) {\n";
  line("%As = workgroup.alloc {size = 256} : buffer<vec<f32, 4>, workgroup, write>");
  line("%Bs = workgroup.alloc {size = 256} : buffer<vec<f32, 4>, workgroup, write>");
  line("%lid = local_id {dim = 0} : u32");
  line("%bx = workgroup_id {dim = 0} : u32");
  line("%by = workgroup_id {dim = 1} : u32");
  for (int v : {0, 1, 2, 3, 4, 8, 16, 32, 128})
    line("%c" + std::to_string(v) + " = const {value = " + std::to_string(v) + "} : u32");
  // N/4 = len(b) / K
  line("%bl = buffer.len %b : u32");
  line("%n4 = div %bl, %K : u32");
  line("%tx = rem %lid, %c16 : u32");
  line("%ty = div %lid, %c16 : u32");
  // A loads: k = lid % 8, rows rq*4 .. rq*4+3 with rq = lid / 8.
  line("%ak = rem %lid, %c8 : u32");
  line("%rq = div %lid, %c8 : u32");
  line("%row0 = mul %by, %c128 : u32");
  line("%rq4 = mul %rq, %c4 : u32");
  line("%arow = add %row0, %rq4 : u32");
  line("%abase0 = mul %arow, %K : u32");
  line("%abase = add %abase0, %ak : u32");
  line("%Kx1 = mul %K, %c1 : u32");
  line("%Kx2 = mul %K, %c2 : u32");
  line("%Kx3 = mul %K, %c3 : u32");
  // A shared slot: As[ak*32 + rq]
  line("%ak32 = mul %ak, %c32 : u32");
  line("%aslot = add %ak32, %rq : u32");
  // B loads: krow = lid / 32, c4 = lid % 32: b[(k0 + krow) * n4 + bx*32 + c4]
  line("%bkrow = div %lid, %c32 : u32");
  line("%bc4 = rem %lid, %c32 : u32");
  line("%bx32 = mul %bx, %c32 : u32");
  line("%bcol = add %bx32, %bc4 : u32");
  line("%bk0 = mul %bkrow, %n4 : u32");
  line("%bbase = add %bk0, %bcol : u32");
  line("%n4x8 = mul %n4, %c8 : u32");
  line("%ktiles = div %K, %c8 : u32");
  line("%lastTile = sub %ktiles, %c1 : u32");

  // Loads of k-tile %t into registers: a0..a3 (scalars), bv (vec4).
  auto loadTile = [&](const std::string& t, const std::string& p) {
    line("%" + p + "k0 = mul " + t + ", %c8 : u32");
    line("%" + p + "ai = add %abase, %" + p + "k0 : u32");
    line("%" + p + "ai1 = add %" + p + "ai, %Kx1 : u32");
    line("%" + p + "ai2 = add %" + p + "ai, %Kx2 : u32");
    line("%" + p + "ai3 = add %" + p + "ai, %Kx3 : u32");
    line("%" + p + "a0 = load %a, %" + p + "ai : f32");
    line("%" + p + "a1 = load %a, %" + p + "ai1 : f32");
    line("%" + p + "a2 = load %a, %" + p + "ai2 : f32");
    line("%" + p + "a3 = load %a, %" + p + "ai3 : f32");
    line("%" + p + "av = vec.make %" + p + "a0, %" + p + "a1, %" + p + "a2, %" + p + "a3 : vec<f32, 4>");
    line("%" + p + "bo = mul " + t + ", %n4x8 : u32");
    line("%" + p + "bi = add %bbase, %" + p + "bo : u32");
    line("%" + p + "bv = load %b, %" + p + "bi : vec<f32, 4>");
  };
  auto storeTile = [&](const std::string& p) {
    line("store %As, %aslot, %" + p + "av");
    line("store %Bs, %lid, %" + p + "bv");
  };
  loadTile("%c0", "f");
  storeTile("f");
  line("barrier");

  line("%zf = const {value = 0.0} : f32");
  line("%z4 = vec.make %zf, %zf, %zf, %zf : vec<f32, 4>");
  // acc r h: row group r (0..7), column half h (0..1)
  std::string accInit, accTypes, accArgs, accNames;
  for (int r = 0; r < 8; ++r)
    for (int h = 0; h < 2; ++h) {
      std::string n = "acc" + std::to_string(r) + "_" + std::to_string(h);
      accInit += ", %z4";
      accTypes += std::string(accTypes.empty() ? "" : ", ") + "vec<f32, 4>";
      accArgs += ", %" + n + ": vec<f32, 4>";
      accNames += std::string(accNames.empty() ? "" : ", ") + "%o" + n;
    }
  o << "  " << accNames << " = for %c0, %ktiles, %c1" << accInit << " : " << accTypes << " { |%t: u32" << accArgs
    << "|\n";
  // Prefetch the next tile (clamped to the last one: loads stay in bounds).
  line("  %tn0 = add %t, %c1 : u32");
  line("  %tn = min %tn0, %lastTile : u32");
  loadTile("%tn", "n");
  std::vector<std::string> cur(16);
  for (int r = 0; r < 8; ++r)
    for (int h = 0; h < 2; ++h) cur[r * 2 + h] = "%acc" + std::to_string(r) + "_" + std::to_string(h);
  for (int kk = 0; kk < 8; ++kk) {
    std::string k = std::to_string(kk);
    // As[kk*32 + ty], As[kk*32 + 16 + ty]; Bs[kk*32 + tx], Bs[kk*32 + 16 + tx]
    line("%ka" + k + " = const {value = " + std::to_string(kk * 32) + "} : u32");
    line("%kb" + k + " = const {value = " + std::to_string(kk * 32 + 16) + "} : u32");
    line("%ia" + k + " = add %ka" + k + ", %ty : u32");
    line("%ib" + k + " = add %kb" + k + ", %ty : u32");
    line("%ic" + k + " = add %ka" + k + ", %tx : u32");
    line("%id" + k + " = add %kb" + k + ", %tx : u32");
    line("%alo" + k + " = load %As, %ia" + k + " : vec<f32, 4>");
    line("%ahi" + k + " = load %As, %ib" + k + " : vec<f32, 4>");
    line("%blo" + k + " = load %Bs, %ic" + k + " : vec<f32, 4>");
    line("%bhi" + k + " = load %Bs, %id" + k + " : vec<f32, 4>");
    for (int r = 0; r < 8; ++r) {
      std::string src = r < 4 ? "%alo" + k : "%ahi" + k;
      std::string ar = "%ar" + k + "_" + std::to_string(r);
      line(ar + " = vec.extract " + src + " {index = " + std::to_string(r % 4) + "} : f32");
      line(ar + "v = vec.make " + ar + ", " + ar + ", " + ar + ", " + ar + " : vec<f32, 4>");
      for (int h = 0; h < 2; ++h) {
        std::string m = "%m" + k + "_" + std::to_string(r) + "_" + std::to_string(h);
        std::string s = "%s" + k + "_" + std::to_string(r) + "_" + std::to_string(h);
        line(m + " = mul " + ar + "v, " + (h == 0 ? "%blo" : "%bhi") + k + " : vec<f32, 4>");
        line(s + " = add " + cur[r * 2 + h] + ", " + m + " : vec<f32, 4>");
        cur[r * 2 + h] = s;
      }
    }
  }
  line("barrier");
  storeTile("n");
  line("barrier");
  std::string ys;
  for (auto& c : cur) ys += (ys.empty() ? "" : ", ") + c;
  line("yield " + ys);
  o << "  }\n";
  // Epilogue: C[(row0 + row) * n4 + bx*32 + tx + 16h] for the 8 rows.
  for (int r = 0; r < 8; ++r) {
    std::string rs = std::to_string(r);
    int rowOff = (r / 4) * 64 + (r % 4);
    line("%ro" + rs + " = const {value = " + std::to_string(rowOff) + "} : u32");
    line("%ty4_" + rs + " = mul %ty, %c4 : u32");
    line("%rl" + rs + " = add %ty4_" + rs + ", %ro" + rs + " : u32");
    line("%rg" + rs + " = add %row0, %rl" + rs + " : u32");
    line("%cb" + rs + " = mul %rg" + rs + ", %n4 : u32");
    line("%cc" + rs + " = add %cb" + rs + ", %bx32 : u32");
    line("%ci" + rs + "_0 = add %cc" + rs + ", %tx : u32");
    line("%ci" + rs + "_1 = add %ci" + rs + "_0, %c16 : u32");
    for (int h = 0; h < 2; ++h)
      line("store %c, %ci" + rs + "_" + std::to_string(h) + ", %oacc" + rs + "_" + std::to_string(h));
  }
  line("return");
  o << "}\n";
  return o.str();
}

// ---------------------------------------------------------------------------

struct Result {
  std::string name;
  uint64_t size = 0;     // elements (copy, saxpy, sum) or matrix order (sgemm)
  std::string unit;      // "GB/s" or "TFLOP/s"
  double work = 0;       // bytes or flops per run
  double medianMs = 0;
  double rate = 0;       // work / median
  double error = 0;      // check: max relative error (or norm ratio)
  bool checked = false;
  std::vector<double> runsMs;
};

struct Bench {
  VulkanDevice& dev;
  std::vector<const ir::Module*> modules;  // kernels are looked up in each
  ir::Context& ctx;
  int runs;
  bool checkOnly;
  uint32_t sumGroups = 2048;  // workgroups of the sum's first pass
  std::vector<Result> results;
  std::mt19937_64 rng{12345};

  const ir::Type* bufT(const ir::Type* elem) { return ctx.bufferType(elem, ir::Space::Device, ir::Ownership::Write); }
  const ir::Type* vec4() { return ctx.vectorType(ctx.f32(), 4); }

  uint64_t alloc(const ir::Type* elem, uint64_t count) {
    auto h = dev.alloc(bufT(elem), count, {});
    if (!h) fail(h.error().message);
    return *h;
  }
  interp::RtValue buf(const ir::Type* elem, uint64_t h) {
    interp::RtValue v;
    v.type = bufT(elem);
    v.buffer = h;
    return v;
  }
  static void fail(const std::string& msg) {
    std::fprintf(stderr, "eph_gpu_bench: %s\n", msg.c_str());
    std::exit(1);
  }
  void check(eph::Status s) {
    if (!s) fail(s.error().str());
  }
  void upload(uint64_t h, const std::vector<float>& v) {
    check(dev.uploadBytes(h, std::as_bytes(std::span(v))));
  }
  // An n x n SGEMM result C = A * B, checked on every element when small,
  // else on 512 random ones: the error is ||C - ref|| / ||ref|| over those,
  // the reference in double. Fails on an unwritten element or an error
  // above 1e-5; the checked Result otherwise.
  Result checkSgemm(const std::string& name, uint32_t n, const std::vector<float>& A, const std::vector<float>& B,
                    const std::vector<float>& C) {
    double num = 0, den = 0;
    size_t samples = n <= 512 ? size_t(n) * n : 512;
    std::uniform_int_distribution<uint32_t> pick(0, n - 1);
    for (size_t s = 0; s < samples; ++s) {
      uint32_t i = n <= 512 ? uint32_t(s / n) : pick(rng), j = n <= 512 ? uint32_t(s % n) : pick(rng);
      double want = 0;
      for (uint32_t k = 0; k < n; ++k) want += double(A[size_t(i) * n + k]) * B[size_t(k) * n + j];
      double got = C[size_t(i) * n + j];
      if (std::isnan(got))
        fail(name + " " + std::to_string(n) + ": C[" + std::to_string(i) + "][" + std::to_string(j) + "] was not written");
      num += (got - want) * (got - want);
      den += want * want;
    }
    Result r{name, n};
    r.error = std::sqrt(num / den);
    if (!(r.error < 1e-5)) fail(name + " " + std::to_string(n) + ": relative error " + std::to_string(r.error));
    r.checked = true;
    return r;
  }

  std::vector<float> download(uint64_t h, size_t n) {
    std::vector<float> v(n);
    check(dev.downloadBytes(std::as_writable_bytes(std::span(v)), h));
    return v;
  }
  std::vector<float> random(size_t n, float lo, float hi) {
    std::vector<float> v(n);
    // Several threads: a GiB of random floats takes a while on one.
    unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    uint64_t seed = rng();
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        uint64_t s = seed ^ (0x9e3779b97f4a7c15ull * (t + 1));
        size_t b = n * t / threads, e = n * (t + 1) / threads;
        for (size_t i = b; i < e; ++i) {
          s ^= s << 13, s ^= s >> 7, s ^= s << 17;
          v[i] = lo + (hi - lo) * float(double(s >> 11) * 0x1p-53);
        }
      });
    for (auto& th : pool) th.join();
    return v;
  }
  const ir::Function& kernel(const std::string& name) {
    for (const ir::Module* m : modules)
      if (const ir::Function* f = m->lookup(name); f && f->isKernel()) return *f;
    fail("no kernel '@" + name + "' in the compiled modules");
    __builtin_unreachable();
  }

  // An Ephapax kernel over `grid` invocations, as `dispatch k(args) over grid`
  // lowers it: workgroups = grid / workgroup size rounded up, and the grid
  // appended as u32s when the kernel has the hidden guard parameters.
  struct EphLaunch {
    const ir::Function* fn;
    std::array<uint32_t, 3> groups;
    std::vector<interp::RtValue> args;
  };
  EphLaunch ephLaunch(const std::string& name, std::array<uint64_t, 3> grid, std::vector<interp::RtValue> args) {
    const ir::Function& f = kernel(name);
    EphLaunch l{&f, {}, std::move(args)};
    // A kernel of the vectorize pass (attribute vectorized = V) covers V
    // elements of x an invocation: grid.x / V + 1 invocations (passes/Vectorize.h).
    uint64_t vectorized = f.attrs.count("vectorized") ? uint64_t(f.attrs.at("vectorized").i) : 0;
    for (int d = 0; d < 3; ++d) {
      uint64_t invocations = d == 0 && vectorized ? grid[0] / vectorized + 1 : grid[d];
      uint64_t g = (invocations + f.workgroupSize[d] - 1) / f.workgroupSize[d];
      if (g > dev.caps().maxWorkgroupCount[d]) fail(name + ": " + std::to_string(g) + " workgroups in dimension " +
                                                      std::to_string(d) + ", more than the device allows");
      l.groups[d] = uint32_t(g);
    }
    const ir::Attr* hidden = f.attrs.count("hidden_params") ? &f.attrs.at("hidden_params") : nullptr;
    if (hidden) {
      if (hidden->kind != ir::Attr::Kind::Int || hidden->i != 3) fail(name + ": hidden_params is not 3");
      for (int d = 0; d < 3; ++d) l.args.push_back(interp::RtValue::ofInt(ctx.u32(), grid[d]));
    }
    if (l.args.size() != f.paramTypes().size()) {
      std::string types;
      for (const ir::Type* t : f.paramTypes()) types += (types.empty() ? "" : ", ") + t->str();
      fail(name + ": " + std::to_string(l.args.size()) + " arguments for the parameters (" + types + ")");
    }
    return l;
  }
  void run(const EphLaunch& l) { check(dev.dispatch(*l.fn, l.groups, l.args, {})); }

  // Dispatches `record` runs times in one command buffer; per-run GPU time
  // is the sum of that run's dispatches.
  std::vector<double> time(int dispatchesPerRun, const std::function<void()>& record) {
    // Warm up: the GPU's clocks fall while the CPU checks results and take a
    // while to climb again, so run the workload untimed for at least 300 ms
    // of GPU time (at most 2000 batches) first.
    dev.takeDispatchTimes();
    double warm = 0;
    for (int batch = 0; warm < 300 && batch < 2000; ++batch) {
      for (int r = 0; r < runs; ++r) record();
      check(dev.wait({}));
      for (auto& t : dev.takeDispatchTimes()) warm += t.ms;
      if (warm == 0) break;  // no timestamps: nothing to wait for
    }
    for (int r = 0; r < runs; ++r) record();
    check(dev.wait({}));
    auto times = dev.takeDispatchTimes();
    if (times.size() != size_t(runs * dispatchesPerRun)) fail("the device reported no timestamps for every dispatch");
    std::vector<double> perRun(runs, 0);
    for (size_t i = 0; i < times.size(); ++i) perRun[i / dispatchesPerRun] += times[i].ms;
    return perRun;
  }

  void finish(Result r, double work, const std::vector<double>& perRun, bool tflops) {
    r.work = work;
    r.runsMs = perRun;
    std::vector<double> sorted = perRun;
    std::sort(sorted.begin(), sorted.end());
    r.medianMs = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    r.unit = tflops ? "TFLOP/s" : "GB/s";
    r.rate = r.medianMs > 0 ? work / (r.medianMs * 1e-3) / (tflops ? 1e12 : 1e9) : 0;
    results.push_back(r);
  }

  // A checked result: with --check-only it is recorded as it is; otherwise the
  // work `record` submits is timed and the rate computed from `work` (bytes,
  // or FLOPs when tflops).
  void report(Result r, double work, bool tflops, int dispatchesPerRun,
              const std::function<void()>& record) {
    if (checkOnly) results.push_back(r);
    else finish(r, work, time(dispatchesPerRun, record), tflops);
  }

  // Workgroups for n4 vec4s, one each per invocation, as a 2D grid.
  std::array<uint32_t, 3> streamGrid(uint64_t n4) {
    uint64_t g = (n4 + 255) / 256;
    uint64_t gx = std::min<uint64_t>(g, std::min<uint32_t>(65535, dev.caps().maxWorkgroupCount[0]));
    return {uint32_t(gx), uint32_t((g + gx - 1) / gx), 1};
  }

  void copy(uint64_t n) {
    uint64_t n4 = n / 4;
    auto src = random(n, -1, 1);
    uint64_t hs = alloc(vec4(), n4), hd = alloc(vec4(), n4);
    upload(hs, src);
    upload(hd, std::vector<float>(n, NAN));
    std::vector<interp::RtValue> args = {buf(vec4(), hs), buf(vec4(), hd)};
    auto g = streamGrid(n4);
    check(dev.dispatch(kernel("copy4"), g, args, {}));
    auto got = download(hd, n);
    Result r{"copy", n};
    r.checked = std::memcmp(got.data(), src.data(), n * 4) == 0;
    if (!r.checked) fail("copy: result differs from the source");
    report(r, 2.0 * 4 * n, false, 1, [&] { check(dev.dispatch(kernel("copy4"), g, args, {})); });
    check(dev.free(hs, {}));
    check(dev.free(hd, {}));
  }

  void saxpy(uint64_t n) {
    uint64_t n4 = n / 4;
    const float a = 1.75f;
    auto x = random(n, -1, 1), y = random(n, -1, 1);
    uint64_t hx = alloc(vec4(), n4), hy = alloc(vec4(), n4);
    upload(hx, x);
    upload(hy, y);
    std::vector<interp::RtValue> args = {interp::RtValue::ofFloat(ctx.f32(), a), buf(vec4(), hx), buf(vec4(), hy)};
    auto g = streamGrid(n4);
    check(dev.dispatch(kernel("saxpy4"), g, args, {}));
    auto got = download(hy, n);
    Result r{"saxpy", n};
    double worst = 0;
    for (uint64_t i = 0; i < n; ++i) {
      double want = double(a) * x[i] + y[i];
      // Relative to the operands' magnitude: a*x + y may cancel.
      double err = std::fabs(got[i] - want) / (std::fabs(double(a) * x[i]) + std::fabs(y[i]) + 1e-30);
      if (!(err <= 1e-5)) fail("saxpy: element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                               ", want " + std::to_string(want));
      worst = std::max(worst, err);
    }
    r.error = worst;
    r.checked = true;
    // y keeps changing; the bytes moved per run do not.
    report(r, 3.0 * 4 * n, false, 1, [&] { check(dev.dispatch(kernel("saxpy4"), g, args, {})); });
    check(dev.free(hx, {}));
    check(dev.free(hy, {}));
  }

  void sum(uint64_t n) {
    uint64_t n4 = n / 4;
    auto x = random(n, 0, 1);
    double want = 0;
    for (float v : x) want += v;
    // Enough workgroups to fill a large GPU several times; each thread then
    // streams n4 / (groups * 256) vec4s, four at a time.
    const uint32_t groups = uint32_t(std::max<uint64_t>(1, std::min<uint64_t>(sumGroups, (n4 + 1023) / 1024)));
    uint64_t hx = alloc(vec4(), n4), hp = alloc(ctx.f32(), groups), ho = alloc(ctx.f32(), 1);
    upload(hx, x);
    upload(ho, {NAN});
    std::vector<interp::RtValue> a1 = {buf(vec4(), hx), buf(ctx.f32(), hp)};
    std::vector<interp::RtValue> a2 = {buf(ctx.f32(), hp), buf(ctx.f32(), ho)};
    auto record = [&] {
      check(dev.dispatch(kernel("sum_partial"), {groups, 1, 1}, a1, {}));
      check(dev.dispatch(kernel("sum_final"), {1, 1, 1}, a2, {}));
    };
    record();
    float got = download(ho, 1)[0];
    Result r{"sum", n};
    r.error = std::fabs(got - want) / want;
    if (!(r.error < 1e-4)) fail("sum: got " + std::to_string(got) + ", want " + std::to_string(want));
    r.checked = true;
    report(r, 4.0 * n, false, 2, record);
    check(dev.free(hx, {}));
    check(dev.free(hp, {}));
    check(dev.free(ho, {}));
  }

  void sgemm(uint32_t n) {
    auto A = random(uint64_t(n) * n, -1, 1), B = random(uint64_t(n) * n, -1, 1);
    uint64_t ha = alloc(ctx.f32(), uint64_t(n) * n), hb = alloc(vec4(), uint64_t(n) * n / 4),
             hc = alloc(vec4(), uint64_t(n) * n / 4);
    upload(ha, A);
    upload(hb, B);
    upload(hc, std::vector<float>(size_t(n) * n, NAN));
    std::vector<interp::RtValue> args = {interp::RtValue::ofInt(ctx.u32(), n), buf(ctx.f32(), ha), buf(vec4(), hb),
                                         buf(vec4(), hc)};
    std::array<uint32_t, 3> grid = {n / 128, n / 128, 1};
    check(dev.dispatch(kernel("sgemm"), grid, args, {}));
    auto C = download(hc, size_t(n) * n);
    Result r = checkSgemm("sgemm", n, A, B, C);
    report(r, 2.0 * double(n) * n * n, true, 1, [&] { check(dev.dispatch(kernel("sgemm"), grid, args, {})); });
    check(dev.free(ha, {}));
    check(dev.free(hb, {}));
    check(dev.free(hc, {}));
  }
};

// The Ephapax kernels (--eph DIR); the same checks and timing as above.
struct EphBench : Bench {
  // `name` is vadd, vadd.x4 (n floats) or vadd4 (n/4 vec4s, n a multiple of 4).
  void vadd(uint64_t n, const std::string& name) {
    bool vec4s = name == "vadd4";
    auto a = random(n, -1, 1), b = random(n, -1, 1);
    const ir::Type* elem = vec4s ? vec4() : ctx.f32();
    uint64_t count = vec4s ? n / 4 : n;
    uint64_t ha = alloc(elem, count), hb = alloc(elem, count), hc = alloc(elem, count);
    upload(ha, a);
    upload(hb, b);
    upload(hc, std::vector<float>(n, NAN));
    auto l = ephLaunch(name, {count, 1, 1}, {buf(elem, ha), buf(elem, hb), buf(elem, hc)});
    run(l);
    auto c = download(hc, n);
    for (uint64_t i = 0; i < n; ++i)
      if (!(c[i] == a[i] + b[i]))
        fail(name + ": element " + std::to_string(i) + " is " + std::to_string(c[i]) + ", want " +
             std::to_string(a[i] + b[i]));
    Result r{name, n};
    r.checked = true;
    report(r, 3.0 * 4 * n, false, 1, [&] { run(l); });
    check(dev.free(ha, {}));
    check(dev.free(hb, {}));
    check(dev.free(hc, {}));
  }

  // `name` is saxpy or saxpy.x4: y = a x + y over n floats, checked against
  // float64 (one rounding of a*x and one of the sum: 2^-23 relative).
  void saxpy(uint64_t n, const std::string& name) {
    const float alpha = 1.75f;
    auto x = random(n, -1, 1), y = random(n, -1, 1);
    uint64_t hx = alloc(ctx.f32(), n), hy = alloc(ctx.f32(), n);
    upload(hx, x);
    upload(hy, y);
    auto l = ephLaunch(name, {n, 1, 1},
                       {interp::RtValue::ofFloat(ctx.f32(), alpha), buf(ctx.f32(), hx), buf(ctx.f32(), hy)});
    run(l);
    auto got = download(hy, n);
    Result r{name, n};
    for (uint64_t i = 0; i < n; ++i) {
      double want = double(alpha) * x[i] + y[i];
      double err = std::fabs(got[i] - want) / (std::fabs(double(alpha) * x[i]) + std::fabs(y[i]) + 1e-30);
      r.error = std::max(r.error, err);
      if (!(err <= 2e-7))
        fail(name + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " +
             std::to_string(want));
    }
    r.checked = true;
    report(r, 3.0 * 4 * n, false, 1, [&] { run(l); });
    check(dev.free(hx, {}));
    check(dev.free(hy, {}));
  }

  // The same workgroup count as the .eir sum and the CUDA peer.
  void reduce(uint64_t n) {
    uint64_t n4 = n / 4;
    auto x = random(n, 0, 1);
    double want = 0;
    for (float v : x) want += v;
    const uint64_t groups = std::max<uint64_t>(1, std::min<uint64_t>(sumGroups, (n4 + 1023) / 1024));
    uint64_t hx = alloc(vec4(), n4), hp = alloc(ctx.f32(), groups), ho = alloc(ctx.f32(), 1);
    upload(hx, x);
    upload(hp, std::vector<float>(groups, NAN));
    upload(ho, {NAN});
    auto l1 = ephLaunch("reduce_partial", {groups * 256, 1, 1}, {buf(vec4(), hx), buf(ctx.f32(), hp)});
    auto l2 = ephLaunch("reduce_final", {256, 1, 1}, {buf(ctx.f32(), hp), buf(ctx.f32(), ho)});
    auto record = [&] {
      run(l1);
      run(l2);
    };
    record();
    float got = download(ho, 1)[0];
    Result r{"reduce", n};
    r.error = std::fabs(got - want) / want;
    if (!(r.error < 1e-4)) fail("reduce: got " + std::to_string(got) + ", want " + std::to_string(want));
    r.checked = true;
    report(r, 4.0 * n, false, 2, record);
    check(dev.free(hx, {}));
    check(dev.free(hp, {}));
    check(dev.free(ho, {}));
  }

  // `name` is sgemm, sgemm_unrolled or sgemm_db: C = A B, square, n a multiple of 128.
  void sgemm(const std::string& name, uint32_t n) {
    auto A = random(uint64_t(n) * n, -1, 1), B = random(uint64_t(n) * n, -1, 1);
    uint64_t ha = alloc(ctx.f32(), uint64_t(n) * n), hb = alloc(vec4(), uint64_t(n) * n / 4),
             hc = alloc(vec4(), uint64_t(n) * n / 4);
    upload(ha, A);
    upload(hb, B);
    upload(hc, std::vector<float>(size_t(n) * n, NAN));
    const ir::Type* kdimType = kernel(name).paramTypes()[0];
    auto l = ephLaunch(name, {uint64_t(n) / 128 * 256, n / 128, 1},
                       {interp::RtValue::ofInt(kdimType, n), buf(ctx.f32(), ha), buf(vec4(), hb), buf(vec4(), hc)});
    run(l);
    auto C = download(hc, size_t(n) * n);
    Result r = checkSgemm(name, n, A, B, C);
    report(r, 2.0 * double(n) * n * n, true, 1, [&] { run(l); });
    check(dev.free(ha, {}));
    check(dev.free(hb, {}));
    check(dev.free(hc, {}));
  }
};

// Compiles DIR/{vadd,reduce,gemm}.eph with the Ephapax frontend, then runs
// `passes` (a pipeline, may be empty) on each module.
std::vector<std::unique_ptr<ir::Module>> compileEphKernels(ir::Context& ctx, const std::string& dir,
                                                            const std::string& passes) {
  auto pm = eph::passes::PassManager::parse(passes);
  if (!pm) Bench::fail("--passes: " + pm.error().message);
  std::vector<std::unique_ptr<ir::Module>> mods;
  for (const char* file : {"vadd.eph", "reduce.eph", "gemm.eph"}) {
    std::string path = dir + "/" + file;
    std::ifstream in(path);
    if (!in) Bench::fail("cannot read '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    eph::ephapax::DiagSink diags;
    auto t0 = std::chrono::steady_clock::now();
    auto m = eph::ephapax::compile(ctx, text, path, diags);
    if (!m || !diags.empty()) Bench::fail("the Ephapax frontend rejected " + path + ":\n" +
                                          eph::ephapax::renderAll(diags, path, text));
    std::vector<eph::Error> errors;
    eph::passes::PipelineOptions opts;
    if (!pm->run(*m, opts, errors))
      Bench::fail(path + ": the pass pipeline failed" + (errors.empty() ? "" : ": " + errors[0].str()));
    // vadd.x4, saxpy.x4: the vectorize pass's kernels (timed beside the originals).
    for (const char* k : {"vadd", "saxpy"})
      if (const ir::Function* f = m->lookup(k); f && !m->lookup(std::string(k) + ".x4") &&
                                                 !eph::passes::vectorizeKernel(*m, *f))
        Bench::fail(std::string("the vectorize pass does not take @") + k);
    std::fprintf(stderr, "compiled %s in %.2f ms\n", path.c_str(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    mods.push_back(std::move(m));
  }
  return mods;
}

std::string jsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (uint8_t(c) < 0x20) continue;
    o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  bool small = false, checkOnly = false, validation = false, printIr = false;
  int runs = 0, device = -1;
  std::string json, only, sgemmSizes, ephDir, vaddSizes, reduceSizes, passes;
  uint32_t sumGroups = 2048;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Bench::fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--small") small = true;
    else if (a == "--check-only") checkOnly = true;
    else if (a == "--validation") validation = true;
    else if (a == "--print-ir") printIr = true;
    else if (a == "--runs") runs = std::atoi(value().c_str());
    else if (a == "--device") device = std::atoi(value().c_str());
    else if (a == "--json") json = value();
    else if (a == "--only") only = value();
    else if (a == "--sgemm") sgemmSizes = value();
    else if (a == "--sum-groups") sumGroups = uint32_t(std::atoi(value().c_str()));
    else if (a == "--eph") ephDir = value();
    else if (a == "--vadd") vaddSizes = value();
    else if (a == "--reduce") reduceSizes = value();
    else if (a == "--passes") passes = value();
    else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: eph_gpu_bench [--small] [--check-only] [--runs N] [--only copy|saxpy|sum|sgemm]\n"
          "                     [--sgemm N,N,...] [--sum-groups G] [--json FILE] [--device N]\n"
          "                     [--validation] [--print-ir]\n"
          "       eph_gpu_bench --eph DIR [--passes LIST] [--vadd N,..] [--reduce N,..] [--sgemm N,..]\n"
          "                     [--only vadd,vadd4,reduce,sgemm,sgemm_unrolled,sgemm_db] and the options above\n");
      return 0;
    } else {
      Bench::fail("unknown argument '" + a + "' (see --help)");
    }
  }
  if (runs <= 0) runs = small ? 5 : 20;

  auto sizeList = [](const std::string& text, const char* what, uint64_t multiple) {
    std::vector<uint64_t> v;
    std::stringstream ss(text);
    for (std::string item; std::getline(ss, item, ',');) {
      uint64_t n = std::strtoull(item.c_str(), nullptr, 0);
      if (n == 0 || n % multiple)
        Bench::fail(std::string(what) + " sizes must be multiples of " + std::to_string(multiple) + ", got '" + item + "'");
      v.push_back(n);
    }
    return v;
  };
  bool tiny = small || checkOnly;
  std::vector<uint64_t> orders = tiny ? std::vector<uint64_t>{128, 256, 512} : std::vector<uint64_t>{1024, 4096, 8192};
  if (!sgemmSizes.empty()) orders = sizeList(sgemmSizes, "--sgemm", 128);

  ir::Context ctx;
  std::vector<std::unique_ptr<ir::Module>> modules;
  if (!ephDir.empty()) {
    modules = compileEphKernels(ctx, ephDir, passes);
    if (printIr) {
      for (auto& m : modules) std::fputs(ir::print(*m).c_str(), stdout);
      return 0;
    }
  } else {
    std::string text = std::string(kStreamKernels) + "\n" + sumKernels() + "\n" + sgemmKernel();
    if (printIr) {
      std::fputs(text.c_str(), stdout);
      return 0;
    }
    auto m = ir::parseModule(ctx, text, "gpu_bench.eir");
    if (!m) Bench::fail(m.error().str());
    if (eph::Status s = ir::verify(**m); !s) Bench::fail(s.error().str());
    modules.push_back(std::move(*m));
  }

  eph::runtime::VulkanOptions opts;
  opts.deviceIndex = device;
  opts.validation = validation;
  opts.profile = true;  // dispatch times come from GPU timestamps
  auto dev = VulkanDevice::open(opts);
  if (!dev) Bench::fail(dev.error().message);
  const eph::DeviceCaps& caps = (*dev)->caps();
  std::fprintf(stderr, "device: %s (%s)\n", caps.name.c_str(), caps.driver.c_str());
  auto t0 = std::chrono::steady_clock::now();
  size_t kernels = 0;
  std::vector<const ir::Module*> mods;
  for (auto& m : modules) {
    if (eph::Status s = (*dev)->prepare(*m); !s) Bench::fail(s.error().str());
    for (auto& f : m->functions()) kernels += f->isKernel();
    mods.push_back(m.get());
  }
  std::fprintf(stderr, "prepared %zu kernels in %.2f s\n", kernels,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  // --only: one name or a comma-separated list
  auto want = [&](const char* name) {
    return only.empty() || ("," + only + ",").find("," + std::string(name) + ",") != std::string::npos;
  };
  std::vector<Result> results;
  if (!ephDir.empty()) {
    EphBench b{{**dev, mods, ctx, runs, checkOnly, sumGroups}};
    uint64_t stream = tiny ? (uint64_t(1) << 22) : (uint64_t(1) << 28);
    std::vector<uint64_t> vadds = vaddSizes.empty() ? std::vector<uint64_t>{stream} : sizeList(vaddSizes, "--vadd", 1);
    std::vector<uint64_t> reduces = reduceSizes.empty() ? std::vector<uint64_t>{stream} : sizeList(reduceSizes, "--reduce", 4);
    if (checkOnly) {
      // Partial workgroups (the guard) and partial strides.
      vadds.push_back((uint64_t(1) << 20) + 37);
      vadds.push_back((uint64_t(1) << 20) + 4 * 37);
      reduces.push_back((uint64_t(1) << 20) + 4 * 37);
    }
    for (uint64_t n : vadds) {
      for (const char* name : {"vadd", "vadd.x4", "vadd4", "saxpy", "saxpy.x4"}) {
        if (!want(name) || (std::string(name) == "vadd4" && n % 4 != 0)) continue;
        if (std::string(name).starts_with("saxpy")) b.saxpy(n, name);
        else b.vadd(n, name);
      }
    }
    if (want("reduce"))
      for (uint64_t n : reduces) b.reduce(n);
    // the SGEMMs of gemm.eph; with --only, any kernel named sgemm* there
    // (variants under study take the same parameters and grid)
    std::vector<std::string> sgemms = {"sgemm", "sgemm_unrolled", "sgemm_db"};
    std::stringstream in(only);
    for (std::string name; std::getline(in, name, ',');)
      if (name.rfind("sgemm", 0) == 0 && std::find(sgemms.begin(), sgemms.end(), name) == sgemms.end())
        sgemms.push_back(name);
    for (const std::string& name : sgemms)
      if (want(name.c_str()))
        for (uint64_t n : orders) b.sgemm(name, uint32_t(n));
    results = std::move(b.results);
  } else {
    Bench b{**dev, mods, ctx, runs, checkOnly, sumGroups};
    uint64_t stream = tiny ? (uint64_t(1) << 22) : (uint64_t(1) << 28);  // floats: 16 MiB or 1 GiB
    if (want("copy")) b.copy(stream);
    if (want("saxpy")) b.saxpy(stream);
    if (want("sum")) b.sum(stream);
    if (checkOnly) {
      // Sizes that leave partial workgroups and partial strides.
      const uint64_t odd = (uint64_t(1) << 20) + 4 * 37;
      if (want("copy")) b.copy(odd);
      if (want("saxpy")) b.saxpy(odd);
      if (want("sum")) b.sum(odd);
    }
    if (want("sgemm"))
      for (uint64_t n : orders) b.sgemm(uint32_t(n));
    results = std::move(b.results);
  }
  if (validation)
    for (auto& msg : (*dev)->takeValidationMessages()) Bench::fail("validation: " + msg);

  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("eph_gpu_bench on %s (%s), %s, median of %d runs (GPU timestamps)\n", caps.name.c_str(),
              caps.driver.c_str(), date, runs);
  std::printf("%-14s %12s %12s %12s  %-8s %s\n", "kernel", "size", "median ms", "rate", "unit", "check error");
  for (const Result& r : results)
    std::printf("%-14s %12llu %12.4f %12.2f  %-8s %.2e%s\n", r.name.c_str(), (unsigned long long)r.size, r.medianMs,
                r.rate, r.unit.c_str(), r.error, r.checked ? "" : " (unchecked)");
  if (checkOnly) std::printf("check-only: every kernel gave the CPU reference's result\n");

  if (!json.empty()) {
    std::ofstream out(json);
    out << "{\n  \"device\": \"" << jsonEscape(caps.name) << "\",\n  \"driver\": \"" << jsonEscape(caps.driver)
        << "\",\n  \"date\": \"" << date << "\",\n  \"runs\": " << runs << ",\n  \"results\": [\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      out << "    {\"name\": \"" << r.name << "\", \"size\": " << r.size << ", \"unit\": \"" << r.unit
          << "\", \"work\": " << r.work << ", \"median_ms\": " << r.medianMs << ", \"rate\": " << r.rate
          << ", \"check_error\": " << r.error << ", \"runs_ms\": [";
      for (size_t k = 0; k < r.runsMs.size(); ++k) out << (k ? ", " : "") << r.runsMs[k];
      out << "]}" << (i + 1 < results.size() ? "," : "") << "\n";
    }
    out << "  ]\n}\n";
  }
  return 0;
}
