// Lowers a tensor program (Program.h) to one IR module:
//
//   host @main(inputs..., constants...) -> (outputs...)
//
// takes every input and constant as a host buffer (in the order of
// Compiled::params; device buffers with LowerOptions::deviceIO), uploads each, runs one or more kernels per op, frees
// each device buffer after its last use (every buffer is linear, so the
// linearity pass proves it), downloads the outputs and returns them as host
// buffers. Kernels are specialised to the static shapes and layouts of their
// operands and are generated once per content (op, attributes, dtypes,
// shapes, layouts): two nodes that agree share one kernel.
//
// A program with a dynamic first dimension (DType.h, kDynamic) takes its
// extent N as @main's last parameter (u32): buffers of such tensors hold N
// rows, and the kernels of a node with it are built for one row (the node
// with first extent 1) and dispatched N times along z, each reading and
// writing its row of every buffer that has N rows (batchKernel).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "frontends/tensor/Ops.h"
#include "frontends/tensor/Program.h"
#include "ir/Builder.h"
#include "ir/IR.h"

namespace eph::tensor {

struct Compiled {
  std::unique_ptr<ir::Module> module;
  // @main's parameters: the nodes ("input" or "const") they carry, in order.
  std::vector<uint32_t> params;
  // @main's results: the output nodes, in Program::outputs() order.
  std::vector<uint32_t> results;
  // LowerOptions::deviceIO: parameters and results are device buffers.
  bool deviceIO = false;
  // The program has the dynamic first dimension: @main's last parameter is
  // its extent N (u32), after those of `params`.
  bool dynamic = false;
  // Constants the lowering computed on the host from the program's (a
  // weight packed for the strip matmul: Lowering::derivedConstant): @main's
  // last parameters, after N, in order; the caller passes them as it passes
  // the program's constants (uploaded once, not computed in every run).
  std::vector<std::shared_ptr<const HostTensor>> derived;
};

struct LowerOptions {
  // Invocations per workgroup of elementwise kernels (64 ran the H200 at a
  // third of its bandwidth: too many workgroups to launch).
  unsigned workgroupSize = 256;
  // Elementwise kernels: elements each invocation computes, a workgroup
  // apart (so each load instruction is still coalesced; fewer workgroups and
  // more loads in flight per invocation). 8 on the H200: relu(x*2+y) 8192²
  // 1.38x faster than 1, add 2^26 1.11x (bench/RESULTS.md).
  unsigned elementsPerInvocation = 8;
  // Row kernels (softmax, norms, long reductions): elements of a row each
  // invocation keeps in registers; workgroups grow (64 to 1024) to hold it.
  unsigned rowElements = 16;
  // Row kernels combine the invocations' partial results through subgroup
  // shuffles, or (false) through workgroup memory in one loop the whole
  // workgroup shares: the cpu target runs that once a workgroup, where each
  // shuffle is a gather (layer norm 1024² on one Zen 5 core 0.31 -> 0.20 ms:
  // bench/RESULTS.md).
  bool rowShuffles = true;
  // Matmul (and conv through it) with f32 sums: the blocked kernel
  // (ops/MatmulBlocked.cpp, matmulBlockFor) with R x R blocks on tiles of both
  // sides over 64 (4 or 8; 8 takes 4 where its tiles would leave a big GPU
  // idle), or 0 for the 64-invocation kernel of 8x8 blocks.
  unsigned matmulBlock = 8;
  // The blocked kernel's step along K (8 or 16), and where M or N is at most
  // 64, the blocks' length along the other (4, 8 or 16: tiles of 64 x 64,
  // 128 or 256; conv's implicit GEMM of 64 output channels). 8 and 8 rows:
  // conv 32x64x128x128 -> 64 1.64 -> 1.16 ms on the H200, 8x32x64x64 -> 32
  // 160 -> 71 ms on lavapipe (bench/RESULTS.md).
  unsigned matmulKStep = 8;
  unsigned matmulWide = 8;
  unsigned matmulWideRows = 8;  // where M is at most 64 and matmulWide 8: blocks of 4 or 8 rows
  // Invocations along M of the 8x8 blocks' tiles (16: 128 x 128, 8: 64 x
  // 128). 8 on the H200: matmul 4096 3.29 -> 3.20 ms, 4096x3072x768 + bias
  // 0.58 -> 0.47 ms (bench/RESULTS.md).
  unsigned matmulThreadRows = 8;
  // The blocked kernel's tiles go to workgroups in groups of this many rows,
  // column by column within a group (L2 reuse; 1: row by row).
  unsigned matmulGroupRows = 1;
  // The blocked kernel's invocations in 4 x 8 patches of 32 (fewer
  // workgroup-memory accesses a step on 32-wide subgroups) instead of rows.
  bool matmulWarpTiles = false;
  // The blocked kernel reads an f32 operand contiguous along M or N (and
  // aligned) as vec4s from device memory.
  bool matmulVectorLoads = true;
  // Bytes of workgroup memory a kernel may use (Vulkan guarantees 16384;
  // tunedFor(caps) sets the device's).
  unsigned maxWorkgroupMemory = 16384;
  // The blocked matmul splits K into parts summed by a second kernel where
  // its tiles make fewer workgroups than this (0: never): on a big GPU a
  // 512-row product has too few 64x64 tiles to fill it (ops/MatmulBlocked.cpp).
  unsigned matmulSplitGroups = 0;
  // Where matmulBlock is 0: a workgroup of matmulLanes invocations computes
  // a matmulRows x matmulLanes strip of C, K a loop of the whole workgroup
  // (ops/MatmulStrip.cpp: for targets whose invocations are vector lanes, the
  // cpu target); 0 for the 64-invocation kernel.
  unsigned matmulLanes = 0;
  unsigned matmulRows = 6;
  unsigned matmulUnroll = 4;  // steps of K per trip of the strip kernel's loop
  // The strip kernel splits K (f32, K a multiple of the steps a trip) where
  // B's K x lanes panel would be more bytes than this (0: never), so that
  // the panel its consecutive workgroups share stays in a core's cache.
  unsigned matmulStripPanel = 512 * 1024;
  // The strip kernel reads an f32 B from a copy packed strip by strip ([strip,
  // K, lanes], each strip's panel contiguous), made by a kernel before it,
  // where C has more rows than a strip: B's rows a long power-of-two stride
  // apart fall into the same few cache sets.
  bool matmulStripPack = true;
  // f16 matmul through cooperative matrices (ops/MatmulCoop.cpp): the
  // device's subgroup size where it runs 16x16x16 f16 products into f32
  // (DeviceCaps::cooperativeMatrixShapes; tensor::run sets it), else 0.
  unsigned coopMatrixSubgroup = 0;
  // Subgroups sharing a 128x128 tile of the cooperative-matrix matmul (4 or
  // 8; 0: 8 where the tiles are fewer than 128, else 4).
  unsigned coopSubgroups = 0;
  // f16 matmul through workgroup-scope cooperative matrices (ops/
  // MatmulCoop.cpp, VK_NV_cooperative_matrix2): the invocations of a
  // workgroup where the device runs coopTile M x N x K products of f16 into
  // f32 at that scope (DeviceCaps::workgroupMatrixShapes; tensor::run sets
  // it), else 0. Each workgroup computes one coopTileM x coopTileN tile of C.
  unsigned coopMatrixWorkgroup = 0;
  unsigned coopTileM = 128, coopTileN = 256, coopTileK = 64;
  // k-steps a trip of its loop, where K allows (2: 0.463 -> 0.444 ms at
  // 4096 and 3.58 -> 3.41 at 8192 on the H200; 4 the same; 8 slower).
  unsigned coopUnroll = 2;
  // Its tiles in groups of rows (tileOrder; 1: row by row): 8 ran 8192² in
  // 3.353-3.361 ms on the H200 against 3.404-3.409 row by row (4096²: 0.6%).
  unsigned coopGroupRows = 8;
  // Workgroups along x of one dispatch, at most (more go along y).
  unsigned maxGroupsX = 32768;
  // tensor::run (Run.h), which opens the device: take workgroupSize and
  // rowElements from the device's row of the tuning table (Tuning.h).
  bool tune = true;
  // Fusion: an elementwise node whose every reader is a kernel that reads
  // through Kernel's loads (OpDef::fusesInputs) at the node's own size is not
  // stored; each reader computes it where it reads it (docs/tensor.md).
  bool fuse = true;
  // matmul(softmax(scale·matmul(q, kᵀ) [+ mask]), v) as the attention op
  // (attentionFromParts, Ops.h): 0 never, 1 where its strip kernel (targets
  // whose invocations are lanes, the cpu target: the scores stay in the
  // core's cache) or its tiled kernel (GPUs: the scores stay in registers
  // and workgroup memory) takes it, 2 everywhere (also the one-pass kernel;
  // bench/RESULTS.md).
  unsigned fuseAttention = 1;
  // The attention op on GPUs as one kernel with its products in register
  // tiles (ops/Attention.cpp, tiledAttention; f32, q's head a multiple of 4,
  // v's of 32), or (false) the one-pass kernel of an invocation per row.
  bool attentionTiles = true;
  unsigned attentionTileRows = 0;  // its query rows a workgroup (64 or 32; 0: 64 where they fit)
  // tiledAttention combines a row's 8 partial maxima and sums by subgroup
  // shuffles among the row's 8 lanes and keeps the probabilities beside k's
  // block (three barriers a block of keys), or (false) through workgroup
  // memory (four). Needs subgroups of at least 8 that fill the workgroup:
  // tunedFor(caps) turns it off for smaller ones.
  bool attentionShuffles = true;
  // Most device buffers one fused kernel reads.
  unsigned maxFusedBuffers = 16;
  // @main takes each input and constant as a device buffer it only reads
  // and returns each output as a device buffer the caller frees, so that
  // data moves as bytes (Device::uploadBytes/downloadBytes) instead of
  // through interpreter host buffers, which hold one value per element.
  // tensor::run (Run.h) lowers with it; `ephc lower|run` show the host form.
  bool deviceIO = false;
};

// The module for `p`, verified; or the program's first error, or why it cannot be lowered.
Expected<Compiled> lower(ir::Context& ctx, const Program& p, const LowerOptions& opts = {});

// Inside one invocation of a kernel made by Lowering::map: the output element
// it computes and access to the inputs.
class Kernel {
 public:
  ir::Builder& b;
  ir::Context& ctx;
  // The output element's index, one i32 per dimension, and its linear index.
  std::vector<ir::Value*> index;
  ir::Value* linear = nullptr;
  // The output's shape when `linear` is set: an input of that shape, stored
  // contiguously, is read at `linear` (no unravelled index arithmetic).
  Shape shape;
  // In an epilogue (Fused::accumulator): the element of the accumulator
  // operand, in f32; the kernel computing it sets it.
  ir::Value* accumulator = nullptr;

  const Operand& in(size_t k) const { return ins_[k]; }
  size_t numInputs() const { return ins_.size(); }
  ir::Value* i32(int64_t v) { return b.constInt(ctx.i32(), v); }
  // Constant `v` of `dt`'s compute type.
  ir::Value* constant(DType dt, double v);
  // Input k's element at `idx` (one i32 per dimension of input k), in its compute type.
  ir::Value* load(size_t k, const std::vector<ir::Value*>& idx);
  // The same, built at `at` (a builder inside this kernel's body).
  ir::Value* loadWith(ir::Builder& at, size_t k, const std::vector<ir::Value*>& idx) {
    Kernel there(at, ctx, ins_, bufs_);
    return there.load(k, idx);
  }
  // Input k broadcast to the output (numpy: shapes aligned at the right, extent-1 dimensions repeat).
  ir::Value* loadBroadcast(size_t k);
  // Input k's element at linear (row-major) position `pos` (>= 0) of its own shape.
  ir::Value* loadLinear(size_t k, ir::Value* pos);
  // Converts `v` from `from`'s compute type to `to`'s (bool through 0/1).
  ir::Value* convert(ir::Value* v, DType from, DType to);
  // The input buffer k (device, read) and the element offset of `idx` in it
  // (not for a fused operand: Operand::fused).
  ir::Value* buffer(size_t k) const { return bufs_[start(k)]; }
  ir::Value* offsetOf(size_t k, const std::vector<ir::Value*>& idx);

  // `bufs`: the device buffers of the inputs' leaves (leafOperands), in order.
  Kernel(ir::Builder& b, ir::Context& ctx, std::vector<Operand> ins, std::vector<ir::Value*> bufs)
      : b(b), ctx(ctx), ins_(std::move(ins)), bufs_(std::move(bufs)) {}

 private:
  size_t start(size_t k) const;
  std::vector<Operand> ins_;
  std::vector<ir::Value*> bufs_;
};

using KernelBody = std::function<ir::Value*(Kernel& k)>;

// The stored tensors a kernel reads for `in`: each operand, or a fused
// operand's own leaves, depth first.
std::vector<Operand> leafOperands(std::span<const Operand> in);

// A kernel's buffer parameters for inputs `in`: one per distinct buffer
// among the leaves (leaves of fused operands often read the same one: x in
// both x * 2 and exp(x)), the parameter each leaf reads, and a cache key
// naming the operands' layouts, what fused operands compute, and which leaf
// reads which parameter.
struct KernelInputs {
  std::vector<Operand> leaves;
  std::vector<size_t> slot;      // per leaf: its parameter
  std::vector<size_t> distinct;  // per parameter: its first leaf
  std::string key;
};
KernelInputs kernelInputs(std::span<const Operand> in);

// The state of lowering one program, given to each op's `lower`.
class Lowering {
 public:
  Lowering(ir::Context& ctx, ir::Module& m, ir::Builder& host, const LowerOptions& opts)
      : ctx(ctx), module(m), host(host), opts(opts) {}
  ir::Context& ctx;
  ir::Module& module;
  ir::Builder& host;  // inside @main
  const LowerOptions& opts;

  // The program's constants' values, by the device buffer that holds each.
  std::map<const ir::Value*, std::shared_ptr<const HostTensor>> constants;
  // A constant computed on the host from them, `key` naming what it is (one
  // parameter per key): @main takes it as one more parameter
  // (Compiled::derived, which `compiled` collects). Returns a device buffer
  // holding it and whether this lowering must free it (host IO: a copy made
  // here) or not (device IO: the caller's). Null without `compiled` (the
  // caller then computes it in a kernel).
  std::pair<ir::Value*, bool> derivedConstant(const std::string& key, const std::function<HostTensor()>& compute);
  Compiled* compiled = nullptr;
  ir::Function* main = nullptr;

  // One invocation per element of n's output (n.shape, n.dtype): `body`
  // returns the element's value in n.dtype's compute type. `key` names what
  // the body computes beyond the op, its attributes and the operands'
  // dtypes, shapes and layouts (which are always part of the cache key).
  // Returns the output's fresh buffer.
  ir::Value* map(const Node& n, std::span<const Operand> in, const KernelBody& body, const std::string& key = "");
  // The same for an output of `shape` and `dtype` (an op lowered as several kernels).
  ir::Value* map(const std::string& op, DType dtype, const Shape& shape, std::span<const Operand> in,
                 const KernelBody& body, const std::string& key);
  // A kernel built by hand (workgroup memory, barriers, several outputs per
  // invocation): its parameters are the input buffers (device, read) and then
  // the output buffer (device, write); `build` fills its body (the return is
  // added after it) and gets a builder at the body and those parameters.
  // The kernel is cached by `op`, `key`, the operands' layouts and `workgroup`;
  // it runs over `groups` workgroups (nothing runs when one of them is 0).
  // Returns the output's fresh buffer of max(count, 1) elements of `dtype`.
  using KernelBuild = std::function<void(ir::Builder& b, const std::vector<ir::Value*>& bufs)>;
  ir::Value* custom(const std::string& op, DType dtype, int64_t count, std::span<const Operand> in,
                    std::array<unsigned, 3> workgroup, std::array<int64_t, 3> groups, const KernelBuild& build,
                    const std::string& key);
  // A device buffer of max(count, 1) elements of `dt`, linear.
  ir::Value* alloc(DType dt, int64_t count);
  // `groups` workgroups laid out as {x, y}: x at most maxGroupsX, y enough
  // for the rest (a group's number is y * x-count + x; those past `groups`
  // do nothing). {0, 0} for none.
  std::array<int64_t, 2> grid(int64_t groups) const {
    const int64_t gx = std::min(groups, int64_t(opts.maxGroupsX));
    return {gx, gx ? (groups + gx - 1) / gx : 0};
  }
  // Frees a buffer made by alloc or map (a temporary of a several-kernel op).
  void free(ir::Value* buf) { host.free(buf); }
  // An operand for a fresh contiguous buffer.
  static Operand contiguous(ir::Value* buf, DType dt, const Shape& shape) {
    return {buf, dt, shape, contiguousStrides(shape), 0};
  }

  // Lowering one row of a node with the dynamic first dimension (Lower.cpp,
  // lowerRows): N, @main's parameter; every buffer holds N rows of what
  // alloc was asked for, and each dispatch runs N times along z, the kernel
  // made to read and write row z (batchKernel) of each buffer in rowStride
  // (elements per row; absent: a buffer without N, read whole by every row).
  ir::Value* rows = nullptr;
  // N (@main's parameter) when the program has the dynamic first dimension:
  // map's elementwise kernels over a shape with it take all N rows.
  ir::Value* extent = nullptr;
  std::map<const ir::Value*, int64_t> rowStride;
  std::string rowsError;        // why a kernel cannot run over rows
  std::string namePrefix = "t";  // of kernel names (and part of the content keys of kernels cached in the module)
  // Dispatches a kernel made for this lowering (over the rows with `rows`).
  void dispatch(const ir::Function& kernel, std::array<ir::Value*, 3> groups, const ir::Values& args);

 private:
  std::map<std::string, const ir::Function*> kernels_;
  std::map<std::string, size_t> derived_;  // derivedConstant's, by key: index in Compiled::derived
  std::map<const ir::Function*, std::vector<int64_t>> batched_;  // kernels made to run over rows, their strides
};

// Makes `kernel`, dispatched with one workgroup along z, run once per index
// z of its dispatch's z dimension on row z of each buffer parameter k with
// strides[k] != 0: every access to that parameter at index i moves to
// i + z·strides[k] (and the kernel's own ids along z become 0, its count 1).
// An error (nothing changed) when the kernel reads a strided parameter's
// length, passes it on, or accesses it in vectors that a row does not start on.
Status batchKernel(ir::Context& ctx, ir::Function& kernel, const std::vector<int64_t>& strides);

}  // namespace eph::tensor
