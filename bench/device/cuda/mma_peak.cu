// The peak of the tensor-core instruction that SPV_NV_cooperative_matrix's
// 16x16x16 f16 -> f32 products compile to on Hopper (mma.sync m16n8k16, two
// per 16x16x16 product): every warp issues back-to-back mma.sync on
// registers only, no memory traffic, CHAINS independent accumulators each.
// Prints "mma_sync chains=C ms=... tflops=..." for each C (issue 14's
// HGEMM goal: what fraction of cuBLAS's f16 GEMM the instruction allows).
// Built and run by bench/device/mma_peak.sh.
#include <cstdio>
#include <cuda_runtime.h>

template <int CHAINS>
__global__ void __launch_bounds__(256) mmaPeak(float* out, int iters, unsigned seed) {
  unsigned a0 = seed ^ threadIdx.x, a1 = a0 * 3u, a2 = a0 * 5u, a3 = a0 * 7u, b0 = a0 * 11u, b1 = a0 * 13u;
  // Small halves (exponent bits cleared): no infinities whatever the seed.
  a0 &= 0x3c003c00u, a1 &= 0x3c003c00u, a2 &= 0x3c003c00u, a3 &= 0x3c003c00u, b0 &= 0x3c003c00u, b1 &= 0x3c003c00u;
  float acc[CHAINS][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
          : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float s = 0;
  for (int c = 0; c < CHAINS; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

template <int CHAINS>
void run(int sms) {
  const int blocks = sms * 4, threads = 256, iters = 1 << 14;
  float* out = nullptr;
  cudaMalloc(&out, sizeof(float) * blocks * threads);
  mmaPeak<CHAINS><<<blocks, threads>>>(out, 64, 1u);  // warm-up
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  float best = 1e30f;
  for (int r = 0; r < 5; ++r) {
    cudaEventRecord(t0);
    mmaPeak<CHAINS><<<blocks, threads>>>(out, iters, unsigned(r));
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms = 0;
    cudaEventElapsedTime(&ms, t0, t1);
    if (ms < best) best = ms;
  }
  const double flops = double(blocks) * (threads / 32) * iters * CHAINS * (2.0 * 16 * 8 * 16);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    std::printf("error %s\n", cudaGetErrorString(e));
    return;
  }
  std::printf("mma_sync chains=%d ms=%.4f tflops=%.1f\n", CHAINS, best, flops / (best * 1e-3) / 1e12);
  cudaFree(out);
}

int main() {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  std::printf("device %s sms=%d\n", p.name, p.multiProcessorCount);
  run<2>(p.multiProcessorCount);
  run<4>(p.multiProcessorCount);
  run<8>(p.multiProcessorCount);
  return 0;
}
