// What a CUDA HGEMM on mma.sync (the instruction SPV_NV_cooperative_matrix's
// products compile to on Hopper) reaches against cuBLAS (wgmma) on this GPU,
// with and without what a Vulkan compute shader cannot have on the NVIDIA
// driver: asynchronous copies into shared memory (cp.async) and more than
// 48 KiB of it a workgroup. Issue 14 asks ephc's Vulkan HGEMM for 0.7x
// cuBLAS. Standalone: cuBLAS (f16 in, f32 sums, f32 out) and the variants on
// the same buffers, each checked against cuBLAS's C, then timed in
// interleaved rounds (median of the launches between CUDA events). One JSON
// line per (kernel, size), a table last.
//
//   nvcc -O3 -arch=sm_90 -o hgemm_ceiling hgemm_ceiling.cu -lcublas
//   hgemm_ceiling [--sizes 4096,8192] [--runs 20] [--rounds 3] [--json FILE]
//
// The variants (row-major, f16 A and B, f32 C; WMMA 16x16x16, which nvcc
// compiles to two mma.sync m16n8k16): a block of 8 warps computes a
// 128 x BN tile, k-tiles of 32, A's and B's tiles in shared memory rows
// padded by 16 bytes;
//   sync128   BN 128, two stages (37 KiB), the next k-tile loaded into
//             registers and stored to the other stage after the products,
//             one barrier a k-tile: what a Vulkan shader can do;
//   asyncBN_S BN 128 or 256, S stages filled by cp.async (S - 1 k-tiles in
//             flight), the CUTLASS sm80 form (S = 2: 37 or 53 KiB; 3, 4:
//             56-108 KiB).
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ceiling_args.h"
namespace {

using namespace nvcuda;

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "hgemm_ceiling: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

constexpr int BM = 128, BK = 32, PAD = 8, LDA = BK + PAD;

template <int BN>
__host__ __device__ constexpr int stageHalves() {
  return BM * LDA + BK * (BN + PAD);
}

__device__ __forceinline__ void cpAsync16(void* smem, const void* gmem) {
  unsigned s = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cpCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cpWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// BN: tile width; WN: warps along N (8 / WN along M); S: stages; Async: cp.async.
template <int BN, int WN, int S, bool Async>
__global__ void __launch_bounds__(256) hgemm(int N, int K, const half* __restrict__ A, const half* __restrict__ B,
                                             float* __restrict__ C) {
  constexpr int WM = 8 / WN, WTM = BM / WM, WTN = BN / WN, FM = WTM / 16, FN = WTN / 16, LDB = BN + PAD;
  constexpr int LA = BM * BK / 8 / 256, LB = BK * BN / 8 / 256;  // 16-byte pieces a thread
  extern __shared__ __align__(128) half smem[];
  const int tid = threadIdx.x, warp = tid / 32, wm = warp / WN, wn = warp % WN;
  const half* Ab = A + size_t(blockIdx.y) * BM * K;
  const half* Bb = B + size_t(blockIdx.x) * BN;
  auto as = [&](int s) { return smem + s * stageHalves<BN>(); };
  auto bs = [&](int s) { return smem + s * stageHalves<BN>() + BM * LDA; };
  auto aPiece = [&](int l, int& row, int& col) {
    const int q = tid + 256 * l;
    row = q / (BK / 8), col = (q % (BK / 8)) * 8;
  };
  auto bPiece = [&](int l, int& row, int& col) {
    const int q = tid + 256 * l;
    row = q / (BN / 8), col = (q % (BN / 8)) * 8;
  };
  auto issue = [&](int t, int s) {  // cp.async k-tile t into stage s
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      int r, c;
      aPiece(l, r, c);
      cpAsync16(as(s) + r * LDA + c, Ab + size_t(r) * K + t * BK + c);
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      int r, c;
      bPiece(l, r, c);
      cpAsync16(bs(s) + r * LDB + c, Bb + size_t(t * BK + r) * N + c);
    }
  };
  uint4 ra[LA], rb[LB];
  auto loadRegs = [&](int t) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      int r, c;
      aPiece(l, r, c);
      ra[l] = *reinterpret_cast<const uint4*>(Ab + size_t(r) * K + t * BK + c);
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      int r, c;
      bPiece(l, r, c);
      rb[l] = *reinterpret_cast<const uint4*>(Bb + size_t(t * BK + r) * N + c);
    }
  };
  auto storeRegs = [&](int s) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      int r, c;
      aPiece(l, r, c);
      *reinterpret_cast<uint4*>(as(s) + r * LDA + c) = ra[l];
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      int r, c;
      bPiece(l, r, c);
      *reinterpret_cast<uint4*>(bs(s) + r * LDB + c) = rb[l];
    }
  };
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  auto compute = [&](int s) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], as(s) + (wm * WTM + i * 16) * LDA + kk, LDA);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], bs(s) + kk * LDB + wn * WTN + j * 16, LDB);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
  };
  const int ktiles = K / BK;
  if constexpr (Async) {
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < ktiles) issue(s, s);
      cpCommit();
    }
    for (int t = 0; t < ktiles; ++t) {
      cpWait<S - 2>();
      __syncthreads();
      if (t + S - 1 < ktiles) issue(t + S - 1, (t + S - 1) % S);
      cpCommit();
      compute(t % S);
    }
  } else {
    loadRegs(0);
    storeRegs(0);
    __syncthreads();
    for (int t = 0; t < ktiles; ++t) {
      const bool more = t + 1 < ktiles;
      if (more) loadRegs(t + 1);
      compute(t % 2);
      if (more) storeRegs((t + 1) % 2);
      __syncthreads();
    }
  }
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      const size_t row = size_t(blockIdx.y) * BM + wm * WTM + i * 16;
      wmma::store_matrix_sync(C + row * N + size_t(blockIdx.x) * BN + wn * WTN + j * 16, acc[i][j], N,
                              wmma::mem_row_major);
    }
}

__global__ void fill(half* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint64_t s = (i + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t(seed) << 32);
    s ^= s >> 33, s *= 0xff51afd7ed558ccdull, s ^= s >> 33;
    p[i] = __float2half(float(double(s >> 11) * 0x1p-53) - 0.5f);
  }
}

struct Variant {
  const char* name;
  void (*kernel)(int, int, const half*, const half*, float*);
  int bn, stages, bytes;
};

template <int BN, int WN, int S, bool Async>
Variant variant(const char* name) {
  const int bytes = S * stageHalves<BN>() * 2;
  ck(cudaFuncSetAttribute(hgemm<BN, WN, S, Async>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), name);
  return {name, hgemm<BN, WN, S, Async>, BN, S, bytes};
}

}  // namespace

int main(int argc, char** argv) {
  const CeilingArgs args = parseCeilingArgs(argc, argv, {4096, 8192});
  const std::vector<int>& sizes = args.sizes;
  const int runs = args.runs, rounds = args.rounds;
  FILE* json = args.json;
  std::vector<Variant> vs = {variant<128, 2, 2, false>("sync128"), variant<128, 2, 2, true>("async128_2"),
                             variant<128, 2, 3, true>("async128_3"), variant<128, 2, 4, true>("async128_4"),
                             variant<256, 4, 2, true>("async256_2"), variant<256, 4, 3, true>("async256_3"),
                             variant<256, 4, 4, true>("async256_4")};
  for (auto& v : vs) {
    cudaFuncAttributes at;
    ck(cudaFuncGetAttributes(&at, v.kernel), "attributes");
    std::printf("%s: %d registers, %d bytes of shared memory\n", v.name, at.numRegs, v.bytes);
  }
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  std::vector<std::string> names = {"cublas_f32out", "cublas_f16out"};
  for (auto& v : vs) names.push_back(v.name);
  struct Row {
    std::string name;
    int n;
    double ms;
  };
  std::vector<Row> table;
  cudaEvent_t e0, e1;
  ck(cudaEventCreate(&e0), "event");
  ck(cudaEventCreate(&e1), "event");
  for (int n : sizes) {
    const size_t nn = size_t(n) * n;
    half *a, *b, *c16;
    float *c, *ref;
    ck(cudaMalloc(&a, nn * 2), "malloc");
    ck(cudaMalloc(&b, nn * 2), "malloc");
    ck(cudaMalloc(&c16, nn * 2), "malloc");
    ck(cudaMalloc(&c, nn * 4), "malloc");
    ck(cudaMalloc(&ref, nn * 4), "malloc");
    fill<<<1024, 256>>>(a, nn, 1);
    fill<<<1024, 256>>>(b, nn, 2);
    const float one = 1, zero = 0;
    auto launch = [&](const std::string& nm, float* out) {
      if (nm == "cublas_f32out")
        cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, CUDA_R_16F, n, a, CUDA_R_16F, n, &zero, out,
                     CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      else if (nm == "cublas_f16out")
        cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, CUDA_R_16F, n, a, CUDA_R_16F, n, &zero, c16,
                     CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      else
        for (auto& v : vs)
          if (nm == v.name)
            v.kernel<<<dim3(n / v.bn, n / BM), 256, v.bytes>>>(n, n, a, b, out);
    };
    launch("cublas_f32out", ref);
    ck(cudaDeviceSynchronize(), "cublas");
    std::vector<float> r(nn), g(nn);
    ck(cudaMemcpy(r.data(), ref, nn * 4, cudaMemcpyDeviceToHost), "copy");
    for (auto& v : vs) {
      ck(cudaMemset(c, 0xff, nn * 4), "memset");
      launch(v.name, c);
      ck(cudaDeviceSynchronize(), v.name);
      ck(cudaMemcpy(g.data(), c, nn * 4, cudaMemcpyDeviceToHost), "copy");
      double err = 0;
      for (size_t i = 0; i < nn; i += 7) err = std::max(err, double(std::fabs(g[i] - r[i])));
      if (!(err < 1e-2)) {
        std::fprintf(stderr, "hgemm_ceiling: %s at %d differs from cuBLAS by %g\n", v.name, n, err);
        return 1;
      }
      std::printf("check %s %d: max |C - cuBLAS| %.2e\n", v.name, n, err);
    }
    std::vector<std::vector<float>> ms(names.size());
    for (int round = 0; round < rounds; ++round)
      for (size_t k = 0; k < names.size(); ++k) {
        for (int w = 0; w < 3; ++w) launch(names[k], c);
        for (int i = 0; i < runs; ++i) {
          ck(cudaEventRecord(e0), "record");
          launch(names[k], c);
          ck(cudaEventRecord(e1), "record");
          ck(cudaEventSynchronize(e1), "sync");
          float t;
          ck(cudaEventElapsedTime(&t, e0, e1), "elapsed");
          ms[k].push_back(t);
        }
      }
    for (size_t k = 0; k < names.size(); ++k) {
      std::sort(ms[k].begin(), ms[k].end());
      table.push_back({names[k], n, ms[k][ms[k].size() / 2]});
    }
    cudaFree(a), cudaFree(b), cudaFree(c16), cudaFree(c), cudaFree(ref);
  }
  std::printf("| kernel | size | median ms | TFLOP/s | cuBLAS (f16 out) / kernel |\n| --- | ---: | ---: | ---: | ---: |\n");
  for (auto& row : table) {
    double base = 0;
    for (auto& o : table)
      if (o.n == row.n && o.name == "cublas_f16out") base = o.ms;
    const double tf = 2.0 * row.n * double(row.n) * row.n / (row.ms * 1e-3) / 1e12;
    std::printf("| %s | %d | %.4f | %.1f | %.3f |\n", row.name.c_str(), row.n, row.ms, tf, base / row.ms);
    if (json)
      std::fprintf(json, "{\"kernel\": \"%s\", \"n\": %d, \"median_ms\": %.5f, \"tflops\": %.2f, \"ratio\": %.4f}\n",
                   row.name.c_str(), row.n, row.ms, tf, base / row.ms);
  }
  if (json) std::fclose(json);
  return 0;
}
