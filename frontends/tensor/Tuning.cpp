// The tuning table (Tuning.h). A new row: run bench/tensor/tune.sh on the
// device (TARGET=vulkan or cpu) and paste the row it prints last.
#include "frontends/tensor/Tuning.h"

namespace eph::tensor {

namespace {

const TuningRow kTable[] = {
    {"NVIDIA H200", 256, 16, 8, 8,
     "2026-11-27, H200 driver 580.159.04: --wg 128/256/512/1024 on add and relu(x*2+y), --row-elements 8/16/32/64 on "
     "softmax and layer norm, --matmul-block 0/4/8 on matmul 1024-8192, --elements 1/2/4/8 on add and relu(x*2+y) "
     "(relu(x*2+y) 8192^2: 0.233/0.186/0.172/0.169 ms; bench/RESULTS.md); 2026-11-27 19:20: --split-groups 0/400 "
     "on relu(x*w+b) 512x768x768, 512x3072x768, 512x768x3072, 1024x768x768, 4096x768x768: 0.633/0.490 ms in total "
     "(264, 528, 1056 measured under a first rule, ceil(G / tiles) parts: RESULTS.md). 2026-11-27 23:30: "
     "bench/device/sweep.sh, the LowerOptions defaults of the blocked matmul (--matmul-kstep 8/16, --matmul-wide "
     "4/8/16, --matmul-wide-rows 4/8, --matmul-thread-rows 16/8, --no-vector-loads): conv 32x64x128x128->64 "
     "1.64/1.33/1.16 ms (wide 4, 8, 8 x 8 rows), matmul 4096 3.45/3.29/3.20 ms (scalar reads, vec4 reads, 64 x 128 "
     "tiles), steps of 16 slower everywhere but conv with 4-row blocks",
     400},
    // The H100 (SXM, "NVIDIA H100 80GB HBM3") is the H200's chip, GH100 with
    // 132 SMs, with less and slower memory: the H200's sizes, checked there.
    {"NVIDIA H100", 256, 16, 8, 8,
     "2026-11-28 00:15, H100 driver 580.159.04, bench/device/bert.sh: without a row (split K off) the encoders "
     "b1-s512-d768 and b8-s128-d768 ran 1.62 / 1.78 ms on the GPU (0.69-0.72x PyTorch by wall time), with "
     "--split-groups 400 0.91 / 1.06 ms (1.02-1.14x); bench/device/tensor.sh LARGE=1 as on the H200 (bench/RESULTS.md)",
     400},
    {"llvmpipe", 1024, 32, 8, 4,
     "2026-11-27, lavapipe (LLVM 15) on 2 AMD EPYC cores: bench/tensor/tune.sh, 2048x2048; --matmul-block 0/4/8 on "
     "matmul 1024: 5.2/7.9/17.4 GFLOP/s; --elements 1/4 on relu(x*2+y) 2048^2: 8.1/6.9 ms. 2026-11-27 23:40: conv "
     "8x32x64x64->32 with --matmul-wide 4/8/8 --matmul-wide-rows 8: 160/124/71 ms"},
    // AMD Zen (LLVM names the host CPU "znverN"): rows as measured below; other
    // x86 processors: the row after.
    {"znver", 128, 32, 0, 1,
     "2026-11-27, the cpu target on 2 AMD EPYC (znver5) cores: as the row below; --matmul-rows 4/6 on matmul 1024 "
     "(64 lanes, 4 steps): 184/231 GFLOP/s. 2026-11-28, A's rows read as vec4s: --matmul-lanes 16-256 --matmul-rows "
     "2-12 --matmul-unroll 2/4/8 on matmul 1024, one core: 64/6/4 137 GFLOP/s, 128/6/4 213, 128/7 or 8/4 200, "
     "256/6/4 202, 128/6/8 140; two cores, 1024 and 2048: 64 lanes 261/182, 128 lanes 300/257",
     0, 128, 6, 4, false},
    {"cpu: ", 128, 32, 0, 1,
     "2026-11-27, the cpu target on 2 AMD EPYC (znver5) cores: bench/tensor/tune.sh, 2048x2048 (wg 64-256 within "
     "noise of each other; 512 and 1024 5-7x slower on the chain); --matmul-block 0/4/8 on matmul 1024: 46/12/3 "
     "GFLOP/s; --elements 1/4 on relu(x*2+y) 2048^2: 4.1/6.6 ms. 2026-11-27 21:40: --matmul-lanes 0/32/64 "
     "--matmul-rows 4-12 --matmul-unroll 1-8 on matmul 1024: 46 GFLOP/s (the 64-invocation kernel), 32/8/2 164, "
     "64/6/4 231 (1000: 258). 2026-11-27 21:40, one core of an Intel Xeon 8592+ (emeraldrapids, the GPU "
     "machine's), matmul 1000 with 512-bit vectors: --matmul-rows 4/6/7 (64 lanes, 4 steps) 79.8/39.8/36.8 GFLOP/s, "
     "3 rows of 128 lanes 75.8. 2026-11-28, B packed (LowerOptions::matmulStripPack), one core of the same Xeon "
     "(2 vCPUs): matmul 1024 at 64 x 4 / 64 x 6 / 128 x 4 90-107 / 115-117 / 120-124 GFLOP/s (53.6 unpacked); "
     "the encoder b1-s512-d768 at one thread 228 / 241 ms with 4 / 6 rows. 2026-11-29, the sums in registers "
     "(targets/llvm/LowerKernel.cpp: the vector loop inside the K loop unrolled), one core of a 2-vCPU Xeon "
     "(sapphirerapids), four rounds alternating: that encoder 141.9-200.2 / 133.9-154.5 ms with 4 / 6 rows, "
     "relu(x*w+b) 512x768x3072 18.8-19.0 / 17.7-17.9 ms",
     0, 64, 6, 4, false},  // (split K: no gain without idle cores)
};

}  // namespace

std::span<const TuningRow> tuningTable() { return kTable; }

LowerOptions tunedFor(std::string_view deviceName, LowerOptions base) {
  for (const TuningRow& r : kTable)
    if (deviceName.find(r.device) != std::string_view::npos) {
      base.workgroupSize = r.workgroupSize;
      base.rowElements = r.rowElements;
      base.matmulBlock = r.matmulBlock;
      base.elementsPerInvocation = r.elements;
      base.matmulSplitGroups = r.matmulSplitGroups;
      base.matmulLanes = r.matmulLanes;
      base.matmulRows = r.matmulRows;
      base.matmulUnroll = r.matmulUnroll;
      base.rowShuffles = r.rowShuffles;
      break;
    }
  return base;
}

LowerOptions tunedFor(const DeviceCaps& caps, LowerOptions base) {
  base = tunedFor(caps.name, base);
  base.coopMatrixSubgroup = caps.hasCoopShape("16x16x16 f16 f32") ? caps.subgroupSize : 0;
  base.coopMatrixWorkgroup = 0;
  for (unsigned w : {256u, 128u})
    if (!caps.workgroupMatrixShapeFor(base.coopTileM, base.coopTileN, base.coopTileK, "f16", "f32", w).empty() &&
        !caps.workgroupMatrixShapeFor(base.coopTileM, base.coopTileN, base.coopTileK, "f16", "f16", w).empty()) {
      base.coopMatrixWorkgroup = w;
      break;
    }
  if (caps.maxWorkgroupMemoryBytes) base.maxWorkgroupMemory = caps.maxWorkgroupMemoryBytes;
  base.attentionShuffles = base.attentionShuffles && caps.subgroupShuffle && caps.subgroupSize >= 8;
  return base;
}

}  // namespace eph::tensor
