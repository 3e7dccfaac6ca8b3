// Per-op time of tensor programs (issue 13 item 7): add, a broadcast chain,
// softmax, softmax of a chain (softmax(x * 2 + y)), layer norm, matmul and conv2d at several sizes, on the cpu target
// and through Vulkan, against numpy (bench/tensor/numpy_peer.py, run in the
// same call). Each case is first checked against a float64 reference
// (sampled entries for matmul and conv2d); then, on inputs uploaded once,
// the program runs --runs times after a warm-up (3 runs and 300 ms; 2 s
// on Vulkan) and the kernels' time is the sum of its
// dispatches: wall time of each dispatch on cpu (dispatches are synchronous
// there), GPU timestamps on Vulkan. Uploads and downloads are not counted (numpy's
// arrays are in memory already). Prints a table and writes JSON (--json).
//
//   eph_tensor_bench [--targets cpu,vulkan] [--runs 7] [--small | --large] [--only OP] [--no-fuse] [--wg N] [--row-elements N] [--matmul-block 0|4|8] [--matmul-kstep 8|16] [--matmul-wide 4|8|16] [--matmul-wide-rows 4|8] [--matmul-thread-rows 8|16] [--matmul-group-rows G] [--no-vector-loads] [--matmul-warp-tiles 0|1] [--matmul-lanes L] [--matmul-rows R] [--matmul-unroll U] [--row-shuffles 0|1] [--strip-panel-kib N] [--strip-pack 0|1] [--fuse-attention 0|1|2] [--attention-tiles 0|1] [--attention-rows 32|64] [--attention-shuffles 0|1] [--no-coop] [--coop-subgroups 4|8] [--no-coop-workgroup] [--coop-tile MxNxK] [--coop-workgroup W] [--coop-unroll U] [--coop-group-rows G] [--split-groups G] [--elements E] [--max-groups-x N] [--sizes A,B] [--json F] [--no-peer]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "frontends/tensor/Run.h"
#include "frontends/tensor/Tensor.h"
#include "frontends/tensor/Tuning.h"
#include "ir/Printer.h"
#include "ir/interp/Interp.h"
#include "runtime/Device.h"
#ifdef EPH_TENSOR_BENCH_VULKAN
#include "runtime/vulkan/VulkanDevice.h"
#endif
#ifdef EPH_TENSOR_BENCH_ONNX
#include <filesystem>

#include "frontends/tensor/onnx/Onnx.h"
#endif

using namespace eph;
using namespace eph::tensor;

namespace {

std::vector<double> randoms(size_t n, uint64_t seed) {
  std::vector<double> v(n);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (double& x : v) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x = double(s >> 11) / double(1ull << 53);
  }
  return v;
}

// One case at one size: the program, its inputs, and a check of its output
// against float64 (returns the largest relative error over the entries it checks).
struct Built {
  std::unique_ptr<Program> p;
  std::vector<HostTensor> inputs;
  std::function<double(const HostTensor&)> check;
  double bytes = 0, flops = 0;  // moved / computed, for the units
  std::string error;            // the case could not be built (--onnx: an unreadable model)
};

std::vector<int64_t> dims(const std::string& size) {
  std::vector<int64_t> d;
  std::stringstream ss(size);
  for (std::string part; std::getline(ss, part, 'x');) d.push_back(std::stoll(part));
  return d;
}

double relErr(double got, double want) { return std::abs(got - want) / (1e-6 + std::abs(want)); }

// --onnx DIR: a backend-test folder (model.onnx, test_data_set_0/input_N.pb
// and output_0.pb, as bench/tensor/bert_export.py writes them): its program,
// inputs, and a check of output 0 (largest |got - want| / (1 + |want|)).
Built buildOnnx(const std::string& dir) {
  Built b;
#ifdef EPH_TENSOR_BENCH_ONNX
  namespace fs = std::filesystem;
  std::ifstream f(dir + "/model.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  onnx::ImportOptions io;
  io.baseDir = dir;
  for (int i = 0; fs::exists(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb"); ++i) {
    std::ifstream in(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb", std::ios::binary);
    std::string pb((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string name;
    auto t = onnx::readTensorProto(pb, "input " + std::to_string(i), &name);
    if (!t) {
      b.error = t.error().message;
      return b;
    }
    io.given.emplace(name, *t);
  }
  auto m = onnx::importModel(bytes, io);
  if (!m) {
    b.error = dir + ": " + m.error().message;
    return b;
  }
  for (const std::string& n : m->inputs) b.inputs.push_back(io.given.at(n));
  b.p = std::move(m->program);
  auto want = onnx::readTensorFile(dir + "/test_data_set_0/output_0.pb");
  if (!want) {
    b.error = want.error().message;
    return b;
  }
  b.check = [w = *want](const HostTensor& got) {
    if (got.size() != w.size()) return double(INFINITY);
    double e = 0;
    for (int64_t i = 0; i < got.size(); ++i) e = std::max(e, std::abs(got.get(i) - w.get(i)) / (1 + std::abs(w.get(i))));
    return e;
  };
#else
  b.error = "--onnx " + dir + ": this eph_tensor_bench was built without libonnx-dev";
#endif
  return b;
}

// (One return, of `b`: its check captures it by reference, so it must be
// constructed in place, never moved.)
Built build(const std::string& name, const std::string& size) {
  Built b;
  b.p = std::make_unique<Program>();
  Program& p = *b.p;
  std::vector<int64_t> d = dims(size);
  auto input = [&](const std::string& n, Shape s, uint64_t seed) {
    b.inputs.push_back(HostTensor::of(DType::F32, s, randoms(size_t(numel(s)), seed)));
    return p.input(n, DType::F32, s);
  };
  if (name == "add") {
    Tensor x = input("x", {d[0]}, 1), y = input("y", {d[0]}, 2);
    p.output("z", x + y);
    b.bytes = 12.0 * double(d[0]);
    b.check = [&b](const HostTensor& z) {
      double e = 0;
      for (int64_t i = 0; i < z.size(); i += 97) e = std::max(e, relErr(z.get(i), b.inputs[0].get(i) + b.inputs[1].get(i)));
      return e;
    };
  } else if (name == "chain") {
    Tensor x = input("x", {d[0], d[1]}, 1), y = input("y", {d[1]}, 2);
    p.output("z", relu(x * 2.0 + y));
    b.bytes = 8.0 * double(d[0] * d[1]);
    int64_t c = d[1];
    b.check = [&b, c](const HostTensor& z) {
      double e = 0;
      for (int64_t i = 0; i < z.size(); i += 97)
        e = std::max(e, relErr(z.get(i), std::max(0.0, double(float(b.inputs[0].get(i) * 2)) + b.inputs[1].get(i % c))));
      return e;
    };
  } else if (name == "softmax" || name == "layer_norm" || name == "softmax_chain") {
    int64_t r = d[0], c = d[1];
    Tensor x = input("x", {r, c}, 1);
    if (name == "softmax_chain") {  // softmax(x * 2 + y): the chain computed inside the softmax kernel
      Tensor y = input("y", {c}, 2);
      x = x * 2.0 + y;
      p.output("z", p.apply("softmax", {x}, {{"axis", int64_t(-1)}}));
    } else if (name == "softmax") {
      p.output("z", p.apply("softmax", {x}, {{"axis", int64_t(-1)}}));
    } else {
      Tensor s = input("scale", {c}, 2), bias = input("bias", {c}, 3);
      p.output("z", p.apply("layer_norm", {x, s, bias}, {{"axis", int64_t(-1)}, {"epsilon", 1e-5}}));
    }
    b.bytes = 8.0 * double(r * c);  // x read, z written (softmax_chain's y: one row)
    bool soft = name != "layer_norm", chain = name == "softmax_chain";
    b.check = [&b, r, c, soft, chain](const HostTensor& z) {
      double e = 0;
      auto xAt = [&](int64_t i, int64_t j) {
        return chain ? double(float(float(b.inputs[0].get(i * c + j) * 2) + float(b.inputs[1].get(j)))) : b.inputs[0].get(i * c + j);
      };
      for (int64_t i = 0; i < r; i += std::max<int64_t>(1, r / 16)) {
        double mx = -INFINITY, sum = 0, mean = 0, var = 0;
        for (int64_t j = 0; j < c; ++j) mx = std::max(mx, xAt(i, j)), mean += xAt(i, j);
        mean /= double(c);
        for (int64_t j = 0; j < c; ++j) sum += std::exp(xAt(i, j) - mx), var += std::pow(xAt(i, j) - mean, 2);
        var /= double(c);
        for (int64_t j = 0; j < c; j += 7) {
          double want = soft ? std::exp(xAt(i, j) - mx) / sum
                             : (xAt(i, j) - mean) / std::sqrt(var + 1e-5) * b.inputs[1].get(j) + b.inputs[2].get(j);
          e = std::max(e, std::abs(z.get(i * c + j) - want) / (1e-3 + std::abs(want)));
        }
      }
      return e;
    };
  } else if (name == "matmul" || name == "hgemm") {  // hgemm: f16 in and out, f32 sums (matrix units where the device has them)
    int64_t n = d[0];
    bool half = name == "hgemm";
    DType t = half ? DType::F16 : DType::F32;
    for (uint64_t seed : {1, 2}) b.inputs.push_back(HostTensor::of(t, {n, n}, randoms(size_t(n * n), seed)));
    Tensor x = p.input("a", t, {n, n}), y = p.input("b", t, {n, n});
    p.output("c", p.apply("matmul", {x, y}));
    b.flops = 2.0 * double(n * n * n);
    // 64 sampled elements against float64; hgemm's error is relative to
    // sum |a_ik b_kj| (its f16 result rounds at 2^-11 of the value).
    b.check = [&b, n, half](const HostTensor& c) {
      double e = 0;
      for (int k = 0; k < 64; ++k) {
        int64_t i = (k * 7919) % n, j = (k * 104729) % n;
        double want = 0, scale = 0;
        for (int64_t s = 0; s < n; ++s) {
          double prod = b.inputs[0].get(i * n + s) * b.inputs[1].get(s * n + j);
          want += prod, scale += std::abs(prod);
        }
        double got = c.get(i * n + j);
        e = std::max(e, half ? std::abs(got - want) / (scale + 1e-30) : relErr(got, want));
      }
      return e;
    };
  } else if (name == "attention") {  // B x H x S x D: softmax(q·kᵀ/√D)·v per head, one kernel (ops/Attention.cpp)
    int64_t B = d[0], H = d[1], S = d[2], D = d[3];
    Shape s = {B, H, S, D};
    Tensor q = input("q", s, 1), k = input("k", s, 2), v = input("v", s, 3);
    p.output("o", attention(q, k, v));
    b.flops = 4.0 * double(B * H * S * S * D);
    // 16 sampled query rows against float64.
    b.check = [&b, S, D, B, H](const HostTensor& o) {
      double e = 0;
      for (int r = 0; r < 16; ++r) {
        int64_t head = (r * 7919) % (B * H), s = (r * 104729) % S, base = head * S * D;
        std::vector<double> w(static_cast<size_t>(S));
        double mx = -INFINITY, sum = 0;
        for (int64_t t = 0; t < S; ++t) {
          double dot = 0;
          for (int64_t j = 0; j < D; ++j) dot += b.inputs[0].get(base + s * D + j) * b.inputs[1].get(base + t * D + j);
          w[size_t(t)] = dot / std::sqrt(double(D));
          mx = std::max(mx, w[size_t(t)]);
        }
        for (double& x : w) sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j < D; ++j) {
          double want = 0;
          for (int64_t t = 0; t < S; ++t) want += w[size_t(t)] / sum * b.inputs[2].get(base + t * D + j);
          e = std::max(e, relErr(o.get(base + s * D + j), want));
        }
      }
      return e;
    };
  } else if (name == "linear") {  // M x K x N: relu(x·w + b), a layer of an MLP (the bias and relu: the matmul's epilogue)
    int64_t M = d[0], K = d[1], N = d[2];
    Tensor x = input("x", {M, K}, 1), w = input("w", {K, N}, 2), bias = input("bias", {N}, 3);
    p.output("y", relu(p.apply("matmul", {x, w}) + bias));
    b.flops = 2.0 * double(M * N * K);
    b.check = [&b, K, N, M](const HostTensor& y) {
      double e = 0;
      for (int k = 0; k < 64; ++k) {
        int64_t i = (k * 7919) % M, j = (k * 104729) % N;
        double want = b.inputs[2].get(j);
        for (int64_t t = 0; t < K; ++t) want += b.inputs[0].get(i * K + t) * b.inputs[1].get(t * N + j);
        e = std::max(e, relErr(y.get(i * N + j), std::max(0.0, want)));
      }
      return e;
    };
  } else if (name == "conv2d") {  // N C H W K, 3x3, pad 1
    int64_t N = d[0], C = d[1], H = d[2], W = d[3], K = d[4];
    Tensor x = input("x", {N, C, H, W}, 1), w = input("w", {K, C, 3, 3}, 2);
    p.output("y", p.apply("conv", {x, w},
                          {{"strides", std::vector<int64_t>{1, 1}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"dilations", std::vector<int64_t>{1, 1}}, {"group", int64_t(1)}}));
    b.flops = 2.0 * double(N * K * H * W * C * 9);
    b.check = [&b, N, C, H, W, K](const HostTensor& y) {
      double e = 0;
      for (int k = 0; k < 64; ++k) {
        int64_t n = k % N, o = (k * 31) % K, i = (k * 17) % H, j = (k * 13) % W;
        double want = 0;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t a = 0; a < 3; ++a)
            for (int64_t q = 0; q < 3; ++q) {
              int64_t ii = i + a - 1, jj = j + q - 1;
              if (ii < 0 || jj < 0 || ii >= H || jj >= W) continue;
              want += b.inputs[0].get(((n * C + c) * H + ii) * W + jj) * b.inputs[1].get(((o * C + c) * 3 + a) * 3 + q);
            }
        e = std::max(e, relErr(y.get(((n * K + o) * H + i) * W + j), want));
      }
      return e;
    };
  }
  return b;
}

// Times the dispatches of one run: wall time inside each dispatch (cpu), or
// the GPU timestamps the Vulkan device took (profile on).
class Timed : public runtime::Device {
 public:
  explicit Timed(runtime::Device& d) : d_(d) {}
  double ms = 0;
  std::string_view target() const override { return d_.target(); }
  const DeviceCaps& caps() const override { return d_.caps(); }
  Status prepare(const ir::Module& m) override {
    auto t0 = std::chrono::steady_clock::now();
    Status r = d_.prepare(m);
    hostMs["prepare"] += since(t0);
    return r;
  }
  Expected<uint64_t> alloc(const ir::Type* t, uint64_t n, Loc s) override {
    auto t0 = std::chrono::steady_clock::now();
    auto r = d_.alloc(t, n, s);
    hostMs["alloc"] += since(t0);
    return r;
  }
  Status free(uint64_t h, Loc s) override {
    auto t0 = std::chrono::steady_clock::now();
    Status r = d_.free(h, s);
    hostMs["free"] += since(t0);
    return r;
  }
  Status upload(uint64_t dst, const interp::BufferData& src, Loc s) override { return d_.upload(dst, src, s); }
  Status download(interp::BufferData& dst, uint64_t src, Loc s) override { return d_.download(dst, src, s); }
  Status uploadBytes(uint64_t dst, std::span<const std::byte> b, Loc s) override { return d_.uploadBytes(dst, b, s); }
  Status downloadBytes(std::span<std::byte> b, uint64_t src, Loc s) override { return d_.downloadBytes(b, src, s); }
  Status wait(Loc s) override {
    auto t0 = std::chrono::steady_clock::now();
    Status r = d_.wait(s);
    hostMs["wait"] += since(t0);
    return r;
  }
  bool supportsViews() const override { return d_.supportsViews(); }
  Status dispatch(const ir::Function& k, std::array<uint32_t, 3> g, std::span<const interp::RtValue> a, Loc s) override {
    auto t0 = std::chrono::steady_clock::now();
    Status st = d_.dispatch(k, g, a, s);
    double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ms += t;
    perKernel[k.name()] += t;
    hostMs["dispatch"] += t;
    return st;
  }
  std::map<std::string, double> perKernel;  // --profile: time per kernel (cpu)
  std::map<std::string, double> hostMs;     // --profile: host time in each call (alloc, free, dispatch, wait)
  static double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

 private:
  runtime::Device& d_;
};

struct Row {
  std::string name, size, target;
  double ms = NAN, peerMs = NAN, err = NAN;
  double wallMs = NAN;  // a whole run (allocations, dispatches, frees, and the wait for them), on the host's clock (Vulkan: a run without timestamps)
  double spanMs = NAN;  // Vulkan: the first dispatch's start to the last's end on the GPU's timeline (gaps included)
  int dispatches = 0;
  unsigned wg = 0, rowElements = 0, matmulBlock = 0, elements = 0, splitGroups = 0;  // the LowerOptions sizes used
  std::string error;
  double bytes = 0, flops = 0;
};

std::map<std::string, std::map<std::string, double>> runPeer(const std::vector<std::pair<std::string, std::vector<std::string>>>& cases,
                                                              int runs) {
  std::string cmd = "/usr/bin/python3 " + std::string(EPH_TENSOR_BENCH_DIR) + "/numpy_peer.py --runs=" + std::to_string(runs);
  for (const auto& [name, sizes] : cases) {
    cmd += " " + name + ":";
    for (size_t i = 0; i < sizes.size(); ++i) cmd += (i ? "," : "") + sizes[i];
  }
  std::map<std::string, std::map<std::string, double>> out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  std::string text;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f)) text.append(buf, n);
  if (pclose(f) != 0) return out;
  // {"case": {"size": ms, ...}, ...}: a small hand parse of what numpy_peer.py prints.
  size_t pos = 0;
  while ((pos = text.find('"', pos)) != std::string::npos) {
    size_t end = text.find('"', pos + 1);
    std::string name = text.substr(pos + 1, end - pos - 1);
    size_t close = text.find('}', end);
    size_t q = text.find('"', end + 1);
    while (q != std::string::npos && q < close) {
      size_t qe = text.find('"', q + 1);
      std::string size = text.substr(q + 1, qe - q - 1);
      out[name][size] = std::strtod(text.c_str() + text.find(':', qe) + 1, nullptr);
      q = text.find('"', qe + 1);
    }
    pos = close + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> targets = {"cpu", "vulkan"};
  int runs = 7;
  bool small = false, large = false, peer = true, fuse = true;  // --no-fuse: LowerOptions::fuse off
  std::string only;  // --only OP: that op's cases
  unsigned wg = 0, rowElements = 0;  // --wg N, --row-elements N (0: the device's row of the tuning table)
  int matmulBlock = -1;              // --matmul-block R (-1: the device's row)
  int matmulKStep = -1, matmulWide = -1, matmulWideRows = -1, matmulThreadRows = -1;  // and --matmul-thread-rows 8|16
  int matmulGroupRows = -1;                                                          // --matmul-group-rows G  // --matmul-kstep 8|16, --matmul-wide 4|8|16, --matmul-wide-rows 4|8 (-1: the device's row)
  bool noVectorLoads = false;        // --no-vector-loads: LowerOptions::matmulVectorLoads off
  int warpTiles = -1;                // --matmul-warp-tiles 0|1: LowerOptions::matmulWarpTiles (-1: the device's row)
  int rowShuffles = -1;              // --row-shuffles 0|1 (-1: the device's row)
  int stripPanelKib = -1;            // --strip-panel-kib N: LowerOptions::matmulStripPanel (0: no split)
  int stripPack = -1;                // --strip-pack 0|1: LowerOptions::matmulStripPack
  int fuseAttention = -1;            // --fuse-attention 0|1|2: LowerOptions::fuseAttention
  int attentionTiles = -1;           // --attention-tiles 0|1: LowerOptions::attentionTiles
  int attentionRows = -1;            // --attention-rows 32|64: LowerOptions::attentionTileRows
  int attentionShuffles = -1;        // --attention-shuffles 0|1: LowerOptions::attentionShuffles
  int matmulLanes = -1, matmulRows = -1, matmulUnroll = -1;  // --matmul-lanes L, --matmul-rows R, --matmul-unroll U (-1: the device's row)
  bool noCoop = false;               // --no-coop: f16 matmul without cooperative matrices
  int coopSubgroups = -1;            // --coop-subgroups 4|8: LowerOptions::coopSubgroups
  bool noCoopWorkgroup = false;      // --no-coop-workgroup: no workgroup-scope cooperative matrices
  unsigned coopWorkgroup = 0;        // --coop-workgroup W: LowerOptions::coopMatrixWorkgroup (0: as the device allows)
  unsigned coopUnroll = 0;           // --coop-unroll U: LowerOptions::coopUnroll
  unsigned coopGroupRows = 0;        // --coop-group-rows G: LowerOptions::coopGroupRows
  // --coop-tile MxNxK: LowerOptions::coopTileM, N, K
  unsigned coopTile[3] = {LowerOptions{}.coopTileM, LowerOptions{}.coopTileN, LowerOptions{}.coopTileK};
  int elements = 0;                  // --elements E: LowerOptions::elementsPerInvocation (0: the device's row)
  int splitGroups = -1;              // --split-groups G: LowerOptions::matmulSplitGroups (-1: the device's row)
  unsigned maxGroupsX = LowerOptions{}.maxGroupsX;    // --max-groups-x N: LowerOptions::maxGroupsX
  std::string sizesArg;                               // --sizes A,B: the sizes of every case run
  std::vector<std::string> onnxDirs;                  // --onnx DIR: a model's backend-test folder (repeatable)
  bool profile = false;                               // --profile: each case's kernels by time, on stderr
  std::string irPath;                                 // --print-ir F: each case's lowered module, appended to F
  std::string jsonPath;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--targets") {
      targets.clear();
      std::stringstream ss(next());
      for (std::string t; std::getline(ss, t, ',');) targets.push_back(t);
    } else if (a == "--runs") runs = std::atoi(next().c_str());
    else if (a == "--small") small = true;
    else if (a == "--large") large = true;
    else if (a == "--no-fuse") fuse = false;
    else if (a == "--wg") wg = unsigned(std::atoi(next().c_str()));
    else if (a == "--row-elements") rowElements = unsigned(std::atoi(next().c_str()));
    else if (a == "--matmul-block") matmulBlock = std::atoi(next().c_str());
    else if (a == "--matmul-kstep") matmulKStep = std::atoi(next().c_str());
    else if (a == "--matmul-wide") matmulWide = std::atoi(next().c_str());
    else if (a == "--matmul-wide-rows") matmulWideRows = std::atoi(next().c_str());
    else if (a == "--matmul-thread-rows") matmulThreadRows = std::atoi(next().c_str());
    else if (a == "--matmul-group-rows") matmulGroupRows = std::atoi(next().c_str());
    else if (a == "--no-vector-loads") noVectorLoads = true;
    else if (a == "--matmul-warp-tiles") warpTiles = std::atoi(next().c_str());
    else if (a == "--matmul-lanes") matmulLanes = std::atoi(next().c_str());
    else if (a == "--matmul-rows") matmulRows = std::atoi(next().c_str());
    else if (a == "--matmul-unroll") matmulUnroll = std::atoi(next().c_str());
    else if (a == "--row-shuffles") rowShuffles = std::atoi(next().c_str());
    else if (a == "--strip-panel-kib") stripPanelKib = std::atoi(next().c_str());
    else if (a == "--strip-pack") stripPack = std::atoi(next().c_str());
    else if (a == "--fuse-attention") fuseAttention = std::atoi(next().c_str());
    else if (a == "--attention-tiles") attentionTiles = std::atoi(next().c_str());
    else if (a == "--attention-rows") attentionRows = std::atoi(next().c_str());
    else if (a == "--attention-shuffles") attentionShuffles = std::atoi(next().c_str());
    else if (a == "--no-coop") noCoop = true;
    else if (a == "--coop-subgroups") coopSubgroups = std::atoi(next().c_str());
    else if (a == "--no-coop-workgroup") noCoopWorkgroup = true;
    else if (a == "--coop-workgroup") coopWorkgroup = unsigned(std::atoi(next().c_str()));
    else if (a == "--coop-unroll") coopUnroll = unsigned(std::atoi(next().c_str()));
    else if (a == "--coop-group-rows") coopGroupRows = unsigned(std::atoi(next().c_str()));
    else if (a == "--coop-tile") {
      if (std::sscanf(next().c_str(), "%ux%ux%u", &coopTile[0], &coopTile[1], &coopTile[2]) != 3) {
        std::fprintf(stderr, "--coop-tile takes MxNxK\n");
        return 2;
      }
    }
    else if (a == "--elements") elements = std::atoi(next().c_str());
    else if (a == "--split-groups") splitGroups = std::atoi(next().c_str());
    else if (a == "--max-groups-x") maxGroupsX = unsigned(std::atoi(next().c_str()));
    else if (a == "--sizes") sizesArg = next();
    else if (a == "--only") only = next();
    else if (a == "--onnx") onnxDirs.push_back(next());
    else if (a == "--profile") profile = true;
    else if (a == "--print-ir") irPath = next();
    else if (a == "--no-peer") peer = false;
    else if (a == "--json") jsonPath = next();
    else {
      std::cerr << "usage: eph_tensor_bench [--targets cpu,vulkan] [--runs N] [--small | --large] [--only OP] [--no-fuse] [--wg N] [--row-elements N] [--matmul-block 0|4|8] [--matmul-kstep 8|16] [--matmul-wide 4|8|16] [--matmul-wide-rows 4|8] [--matmul-thread-rows 8|16] [--matmul-group-rows G] [--no-vector-loads] [--matmul-warp-tiles 0|1] [--matmul-lanes L] [--matmul-rows R] [--matmul-unroll U] [--row-shuffles 0|1] [--strip-panel-kib N] [--strip-pack 0|1] [--fuse-attention 0|1|2] [--attention-tiles 0|1] [--attention-rows 32|64] [--attention-shuffles 0|1] [--no-coop] [--coop-subgroups 4|8] [--no-coop-workgroup] [--coop-tile MxNxK] [--coop-workgroup W] [--coop-unroll U] [--coop-group-rows G] [--split-groups G] [--elements E] [--max-groups-x N] [--sizes A,B] [--onnx DIR]... [--profile] [--print-ir F] [--json F] [--no-peer]\n";
      return 2;
    }
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> cases =
      small ? std::vector<std::pair<std::string, std::vector<std::string>>>{
                  {"add", {"1000", "4099"}}, {"chain", {"33x65"}}, {"softmax", {"17x129"}},
                  {"softmax_chain", {"17x129"}}, {"layer_norm", {"17x129"}},
                  {"matmul", {"33"}}, {"linear", {"33x20x70"}}, {"conv2d", {"1x3x9x11x4"}}}
            : std::vector<std::pair<std::string, std::vector<std::string>>>{
                  {"add", {"1048576", "16777216"}},
                  {"chain", {"1024x1024", "4096x4096"}},
                  {"softmax", {"1024x1024", "4096x4096"}},
                  {"softmax_chain", {"1024x1024", "4096x4096"}},
                  {"layer_norm", {"1024x1024", "4096x4096"}},
                  {"matmul", {"256", "1024"}},
                  {"hgemm", {"256"}},
                  {"attention", {"2x4x128x32"}},
                  {"linear", {"2048x512x512"}},
                  {"conv2d", {"8x32x64x64x32"}}};
  if (large)  // the GPU machine's sizes (bench/device/tensor.sh): issue 14's 8192x8192 and bigger GEMM and conv
    cases = {{"add", {"16777216", "67108864"}},
             {"chain", {"4096x4096", "8192x8192"}},
             {"softmax", {"4096x4096", "8192x8192"}},
             {"softmax_chain", {"4096x4096", "8192x8192"}},
             {"layer_norm", {"4096x4096", "8192x8192"}},
             {"matmul", {"1024", "4096"}},
             {"hgemm", {"1024", "4096", "8192"}},
             {"attention", {"8x12x512x64", "1x12x2048x64"}},
             {"linear", {"8192x1024x4096"}},
             {"conv2d", {"8x32x64x64x32", "32x64x128x128x64"}}};
  if (!only.empty())
    std::erase_if(cases, [&](const auto& c) { return c.first != only; });
  if (!sizesArg.empty())
    for (auto& c : cases) {
      c.second.clear();
      std::stringstream ss(sizesArg);
      for (std::string sz; std::getline(ss, sz, ',');) c.second.push_back(sz);
    }
  if (!onnxDirs.empty()) cases = {{"onnx", onnxDirs}};  // models only; their peer is bench/tensor/bert_peer.py
  auto peerMs = peer && onnxDirs.empty() ? runPeer(cases, runs) : decltype(runPeer(cases, runs)){};
  if (peer && peerMs.empty()) std::cerr << "numpy peer: no results (is python3-numpy installed?)\n";

  std::vector<Row> rows;
  int failures = 0;
  for (const std::string& target : targets) {
#ifdef EPH_TENSOR_BENCH_VULKAN
    std::unique_ptr<runtime::VulkanDevice> vk;
#endif
    std::unique_ptr<runtime::Device> dev;
    if (target == "vulkan") {
#ifdef EPH_TENSOR_BENCH_VULKAN
      runtime::VulkanOptions o;
      o.profile = true;
      auto d = runtime::VulkanDevice::open(o);
      if (!d) {
        std::cerr << "vulkan: " << d.error().message << "\n";
        return 1;
      }
      vk = std::move(*d);
#endif
    } else {
      auto d = runtime::openDevice(target);
      if (!d) {
        std::cerr << target << ": " << d.error().message << "\n";
        return 1;
      }
      dev = std::move(*d);
    }
    runtime::Device* base = dev ? dev.get() : nullptr;
#ifdef EPH_TENSOR_BENCH_VULKAN
    if (vk) base = vk.get();
#endif
    if (!base) continue;
    for (const auto& [name, sizes] : cases)
      for (const std::string& size : sizes) {
        Row r{name, size, target};
        Built b = name == "onnx" ? buildOnnx(size) : build(name, size);  // in place: checks capture b
        if (!b.error.empty()) {
          r.error = b.error;
          rows.push_back(r);
          ++failures;
          continue;
        }
        r.bytes = b.bytes, r.flops = b.flops;
        ir::Context ctx;
        LowerOptions tiles;
        tiles.coopTileM = coopTile[0], tiles.coopTileN = coopTile[1], tiles.coopTileK = coopTile[2];
        LowerOptions lo = tunedFor(base->caps(), tiles);
        if (noCoop) lo.coopMatrixSubgroup = 0, lo.coopMatrixWorkgroup = 0;
        if (coopWorkgroup) lo.coopMatrixWorkgroup = coopWorkgroup;
        if (coopUnroll) lo.coopUnroll = coopUnroll;
        if (coopGroupRows) lo.coopGroupRows = coopGroupRows;
        if (noCoopWorkgroup) lo.coopMatrixWorkgroup = 0;
        if (coopSubgroups > 0) lo.coopSubgroups = unsigned(coopSubgroups);
        lo.fuse = fuse;
        if (wg) lo.workgroupSize = wg;
        if (rowElements) lo.rowElements = rowElements;
        if (matmulBlock >= 0) lo.matmulBlock = unsigned(matmulBlock);
        if (matmulKStep >= 0) lo.matmulKStep = unsigned(matmulKStep);
        if (matmulWide >= 0) lo.matmulWide = unsigned(matmulWide);
        if (matmulWideRows >= 0) lo.matmulWideRows = unsigned(matmulWideRows);
        if (matmulThreadRows >= 0) lo.matmulThreadRows = unsigned(matmulThreadRows);
        if (matmulGroupRows >= 0) lo.matmulGroupRows = unsigned(matmulGroupRows);
        if (noVectorLoads) lo.matmulVectorLoads = false;
        if (warpTiles >= 0) lo.matmulWarpTiles = warpTiles != 0;
        if (matmulLanes >= 0) lo.matmulLanes = unsigned(matmulLanes);
        if (matmulRows >= 0) lo.matmulRows = unsigned(matmulRows);
        if (matmulUnroll >= 0) lo.matmulUnroll = unsigned(matmulUnroll);
        if (rowShuffles >= 0) lo.rowShuffles = rowShuffles != 0;
        if (stripPanelKib >= 0) lo.matmulStripPanel = unsigned(stripPanelKib) * 1024;
        if (stripPack >= 0) lo.matmulStripPack = stripPack != 0;
        if (fuseAttention >= 0) lo.fuseAttention = unsigned(fuseAttention);
        if (attentionTiles >= 0) lo.attentionTiles = attentionTiles != 0;
        if (attentionRows >= 0) lo.attentionTileRows = unsigned(attentionRows);
        if (attentionShuffles >= 0) lo.attentionShuffles = attentionShuffles != 0;
        if (elements > 0) lo.elementsPerInvocation = unsigned(elements);
        if (splitGroups >= 0) lo.matmulSplitGroups = unsigned(splitGroups);
        lo.maxGroupsX = maxGroupsX;
        lo.deviceIO = true;  // inputs and outputs move as bytes (tensor::run does the same)
        r.wg = lo.workgroupSize, r.rowElements = lo.rowElements, r.matmulBlock = lo.matmulBlock;
        r.elements = lo.elementsPerInvocation;
        r.splitGroups = lo.matmulSplitGroups;
        auto c = lower(ctx, *b.p, lo);
        if (!c) {
          r.error = c.error().message;
          rows.push_back(r);
          ++failures;
          continue;
        }
        for (const auto& f : c->module->functions()) r.dispatches += f->kind() == ir::FunctionKind::Kernel;
        if (!irPath.empty()) {
          std::ofstream ir(irPath, std::ios::app);
          ir << "// [" << target << "] " << name << " " << size << "\n" << ir::print(*c->module) << "\n";
          if (!ir) {
            std::cerr << "eph_tensor_bench: --print-ir: cannot write " << irPath << "\n";
            return 2;
          }
        }
        // Progress on stderr, so that a run cut off by a time limit shows where it was.
        std::cerr << "[" << target << "] " << name << " " << size << ": " << r.dispatches << " kernels, first run\n";
        // Inputs are uploaded once; each run allocates, computes and frees
        // its outputs on the device (as PyTorch's caching allocator and
        // kernels do), back to back, so the GPU's clocks stay up.
        Timed timed(*base);
        auto args = uploadInputs(timed, *b.p, *c, b.inputs);
        auto first = args ? runOnDevice(timed, *c, *args) : Expected<std::vector<interp::RtValue>>(args.error());
        auto out = first ? downloadResults(timed, *b.p, *c, *first) : Expected<std::vector<HostTensor>>(first.error());
        if (!out) {
          if (args) freeDeviceBuffers(timed, *args);
          r.error = out.error().message;
          rows.push_back(r);
          ++failures;
          continue;
        }
        r.err = b.check((*out)[0]);
        if (!(r.err < 1e-3)) ++failures;
        std::cerr << "[" << target << "] " << name << " " << size << ": error " << r.err << ", timing\n";
        std::vector<double> times, walls, spans;
        std::map<std::string, double> gpuPerKernel;  // --profile on Vulkan
        auto warmStart = std::chrono::steady_clock::now();
        for (int k = 0; times.size() < size_t(runs); ++k) {
          timed.ms = 0;
          if (times.empty()) timed.perKernel.clear(), timed.hostMs.clear();  // --profile: the timed runs only
#ifdef EPH_TENSOR_BENCH_VULKAN
          if (vk) vk->takeDispatchTimes();
#endif
          auto w0 = std::chrono::steady_clock::now();
          auto again = runOnDevice(timed, *c, *args);
          if (!again) {
            r.error = again.error().message;
            break;
          }
          freeDeviceBuffers(timed, *again);
          double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
          double ms = timed.ms;
          double span = NAN;
          std::map<std::string, double> runPerKernel;  // this run's GPU times per kernel
#ifdef EPH_TENSOR_BENCH_VULKAN
          if (vk) {
            ms = 0;
            for (const auto& t : vk->takeDispatchTimes()) {
              ms += t.ms;
              runPerKernel[t.kernel] += t.ms;
            }
            // Per submission (times count from its first start), summed.
            std::map<unsigned, std::pair<double, double>> bySubmission;
            for (const auto& t : vk->takeTimeline())
              if (t.what == "dispatch") {
                auto [it, fresh] = bySubmission.try_emplace(t.submission, t.startMs, t.endMs);
                if (!fresh) it->second = {std::min(it->second.first, t.startMs), std::max(it->second.second, t.endMs)};
              }
            span = 0;
            for (const auto& [sub, se] : bySubmission) span += se.second - se.first;
            // The wall time of a run as users run it: again, without the
            // timestamps (their commands and read-back cost host time).
            vk->setTimestamps(false);
            w0 = std::chrono::steady_clock::now();
            auto plain = runOnDevice(timed, *c, *args);
            if (plain) freeDeviceBuffers(timed, *plain);
            wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
            vk->setTimestamps(true);
            if (!plain) {
              r.error = plain.error().message;
              break;
            }
          }
#endif
          // Warm-up: at least 3 runs and 300 ms, 2 s on Vulkan: a GPU's
          // clocks fall while the host checks a case and prepares the next,
          // and rise slowly (the H200 ran the second case of a call at a
          // third of its bandwidth after 300 ms).
          if (k >= 3 && std::chrono::steady_clock::now() - warmStart > std::chrono::milliseconds(target == "vulkan" ? 2000 : 300)) {
            times.push_back(ms), walls.push_back(wall), spans.push_back(span);
            for (const auto& [kernel, t] : runPerKernel) gpuPerKernel[kernel] += t;
          }
        }
        freeDeviceBuffers(timed, *args);
        if (profile) {
          std::map<std::string, double> byKernel = timed.perKernel;
#ifdef EPH_TENSOR_BENCH_VULKAN
          if (vk) byKernel = gpuPerKernel;
#endif
          std::vector<std::pair<double, std::string>> order;
          for (const auto& [k, t] : byKernel) order.push_back({t, k});
          std::sort(order.rbegin(), order.rend());
          std::cerr << "[" << target << "] " << name << " " << size << ": time by kernel, all timed runs\n";
          for (const auto& [t, k] : order) std::fprintf(stderr, "  %10.3f ms  %s\n", t, k.c_str());
          std::cerr << "[" << target << "] " << name << " " << size << ": host time in device calls, all runs\n";
          for (const auto& [call, t] : timed.hostMs) std::fprintf(stderr, "  %10.3f ms  %s\n", t, call.c_str());
#ifdef EPH_TENSOR_BENCH_VULKAN
          if (vk)
            std::fprintf(stderr, "  submits %u, barriers %u, vkAllocateMemory calls %llu\n", vk->stats().submits,
                         vk->stats().barriers, (unsigned long long)vk->memoryStats().deviceAllocations);
#endif
        }
        if (!times.empty()) {
          std::sort(times.begin(), times.end());
          std::sort(walls.begin(), walls.end());
          std::sort(spans.begin(), spans.end());
          r.ms = times[times.size() / 2];
          r.spanMs = spans[spans.size() / 2];
          r.wallMs = walls[walls.size() / 2];
        }
        if (auto pc = peerMs.find(name); pc != peerMs.end())
          if (auto ps = pc->second.find(size); ps != pc->second.end()) r.peerMs = ps->second;
        rows.push_back(r);
      }
  }

  std::printf("| op | size | target | kernels | ephc ms | wall ms | numpy ms | numpy / ephc | rate | max rel. error |\n");
  std::printf("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("| %s | %s | %s | — | error: %s | | | | | |\n", r.name.c_str(), r.size.c_str(), r.target.c_str(),
                  r.error.c_str());
      continue;
    }
    char rate[32];
    std::snprintf(rate, sizeof rate, r.flops > 0 ? "%.1f GFLOP/s" : "%.1f GB/s", (r.flops > 0 ? r.flops : r.bytes) / r.ms / 1e6);
    std::printf("| %s | %s | %s | %d | %.4f | %.4f | %.4f | %.2f× | %s | %.1e |\n", r.name.c_str(), r.size.c_str(),
                r.target.c_str(), r.dispatches, r.ms, r.wallMs, r.peerMs, r.peerMs / r.ms, rate, r.err);
  }
  if (!jsonPath.empty()) {
    std::ofstream js(jsonPath);
    js << "[\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      js << "  {\"op\": \"" << r.name << "\", \"size\": \"" << r.size << "\", \"target\": \"" << r.target
         << "\", \"fused\": " << (fuse ? "true" : "false") << ", \"wg\": " << r.wg
         << ", \"row_elements\": " << r.rowElements << ", \"matmul_block\": " << r.matmulBlock << ", \"elements\": " << r.elements << ", \"split_groups\": " << r.splitGroups << ", \"kernels\": " << r.dispatches
         << ", \"ephc_ms\": " << (std::isnan(r.ms) ? -1 : r.ms) << ", \"wall_ms\": " << (std::isnan(r.wallMs) ? -1 : r.wallMs) << ", \"span_ms\": " << (std::isnan(r.spanMs) ? -1 : r.spanMs)
         << ", \"numpy_ms\": " << (std::isnan(r.peerMs) ? -1 : r.peerMs) << ", \"max_rel_error\": "
         << (std::isnan(r.err) ? -1 : r.err) << ", \"error\": \"" << (r.error.empty() ? "" : "failed") << "\"}"
         << (i + 1 < rows.size() ? ",\n" : "\n");
    }
    js << "]\n";
  }
  return failures ? 1 : 0;
}
