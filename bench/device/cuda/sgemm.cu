// SGEMM, C = A B, square or not: A (M x K), B (K x N), C (M x N) row-major,
// M and N multiples of 128, K of 8. The same algorithm as
// bench/ephapax/gemm.eph and the .eir sgemm in bench/gpu_bench.cpp:
// a block of 256 computes a 128x128 tile of C, each thread 8x8 of it (rows
// ty*4+{0..3} and 64+ty*4+{0..3}, float4 columns tx and 16+tx of the tile,
// tx = lid % 16, ty = lid / 16), in 16 float4 accumulators. Per k-tile of 8,
// A's 128x8 slice is staged in shared memory transposed (As[k][m/4] as
// float4s along m) and B's 8x128 slice as it is (Bs[k][n/4]); the next
// k-tile is loaded into registers (index clamped to the last tile) while
// this one is used. Multiply and add are written separately, like the
// Ephapax kernel (nvcc contracts them into FFMA, as the Vulkan driver does).
#pragma once

__device__ __forceinline__ float4 axpy4(float4 acc, float s, float4 b) {
  return make_float4(acc.x + s * b.x, acc.y + s * b.y, acc.z + s * b.z, acc.w + s * b.w);
}

// The kernel body; Fence adds __threadfence_block() before each barrier
// (a diagnostic variant: OpControlBarrier with UniformMemory semantics, as
// ephc emits barrier(), also orders buffer memory).
template <bool Fence>
__device__ __forceinline__ void sgemm128Body(int K, const float* a, const float4* b, float4* c, int n4) {
  __shared__ float4 As[256];
  __shared__ float4 Bs[256];
  int lid = threadIdx.x;
  int tx = lid % 16, ty = lid / 16;
  int ak = lid % 8, rq = lid / 8;
  int row0 = blockIdx.y * 128;
  int abase = (row0 + rq * 4) * K + ak;
  int aslot = ak * 32 + rq;
  int bkrow = lid / 32, bc4 = lid % 32;
  int bx32 = blockIdx.x * 32;
  int bbase = bkrow * n4 + bx32 + bc4;
  int ktiles = K / 8;

  As[aslot] = make_float4(a[abase], a[abase + K], a[abase + 2 * K], a[abase + 3 * K]);
  Bs[lid] = b[bbase];
  if (Fence) __threadfence_block();
  __syncthreads();

  float4 acc[8][2];
#pragma unroll
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = make_float4(0.f, 0.f, 0.f, 0.f);

  for (int t = 0; t < ktiles; ++t) {
    int tn = min(t + 1, ktiles - 1);
    int ai = abase + tn * 8;
    float4 nav = make_float4(a[ai], a[ai + K], a[ai + 2 * K], a[ai + 3 * K]);
    float4 nbv = b[bbase + tn * n4 * 8];
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      float4 alo = As[kk * 32 + ty], ahi = As[kk * 32 + 16 + ty];
      float4 blo = Bs[kk * 32 + tx], bhi = Bs[kk * 32 + 16 + tx];
      float ar[8] = {alo.x, alo.y, alo.z, alo.w, ahi.x, ahi.y, ahi.z, ahi.w};
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        acc[r][0] = axpy4(acc[r][0], ar[r], blo);
        acc[r][1] = axpy4(acc[r][1], ar[r], bhi);
      }
    }
    if (Fence) __threadfence_block();
    __syncthreads();
    As[aslot] = nav;
    Bs[lid] = nbv;
    if (Fence) __threadfence_block();
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    int row = row0 + ty * 4 + (r / 4) * 64 + r % 4;
    c[row * n4 + bx32 + tx] = acc[r][0];
    c[row * n4 + bx32 + tx + 16] = acc[r][1];
  }
}

// The peer of the Ephapax sgemm.
__global__ void __launch_bounds__(256) sgemm128(int K, const float* __restrict__ a, const float4* __restrict__ b,
                                                float4* __restrict__ c, int n4) {
  sgemm128Body<false>(K, a, b, c, n4);
}

// Diagnostic variants: with the fences; without __restrict__ (the loads may
// not take the read-only path).
__global__ void __launch_bounds__(256) sgemm128_fence(int K, const float* __restrict__ a,
                                                      const float4* __restrict__ b, float4* __restrict__ c,
                                                      int n4) {
  sgemm128Body<true>(K, a, b, c, n4);
}

// (sgemm_carveout in cuda_bench is sgemm128 with the shared-memory carveout
// at its maximum, as a Vulkan driver may set it: less L1 for A's loads.)
__global__ void __launch_bounds__(256) sgemm128_norestrict(int K, const float* a, const float4* b, float4* c, int n4) {
  sgemm128Body<false>(K, a, b, c, n4);
}

// sgemm_db: A's and B's slices double-buffered in shared memory (two stages
// of 8 KiB each), so each k-tile needs one barrier instead of two: the
// prefetched next tile goes into the stage not being read, and one barrier
// makes it visible (and ends the reads of the current stage). Two k-tiles per
// trip, so that the stage offsets are constants, then an odd last tile. The
// peer of sgemm_db in bench/ephapax/gemm.eph.

// The 8 steps of one k-tile, read from the stage at As + Off, Bs + Off.
template <int Off>
__device__ __forceinline__ void ktileSteps(float4 (&acc)[8][2], const float4* As, const float4* Bs, int tx, int ty) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    float4 alo = As[Off + kk * 32 + ty], ahi = As[Off + kk * 32 + 16 + ty];
    float4 blo = Bs[Off + kk * 32 + tx], bhi = Bs[Off + kk * 32 + 16 + tx];
    float ar[8] = {alo.x, alo.y, alo.z, alo.w, ahi.x, ahi.y, ahi.z, ahi.w};
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      acc[r][0] = axpy4(acc[r][0], ar[r], blo);
      acc[r][1] = axpy4(acc[r][1], ar[r], bhi);
    }
  }
}

__global__ void __launch_bounds__(256, 2) sgemm128_db(int K, const float* __restrict__ a, const float4* __restrict__ b,
                                                   float4* __restrict__ c, int n4) {
  __shared__ float4 As[512];
  __shared__ float4 Bs[512];
  int lid = threadIdx.x;
  int tx = lid % 16, ty = lid / 16;
  int ak = lid % 8, rq = lid / 8;
  int row0 = blockIdx.y * 128;
  int abase = (row0 + rq * 4) * K + ak;
  int aslot = ak * 32 + rq;
  int bkrow = lid / 32, bc4 = lid % 32;
  int bx32 = blockIdx.x * 32;
  int bbase = bkrow * n4 + bx32 + bc4;
  int ktiles = K / 8;

  As[aslot] = make_float4(a[abase], a[abase + K], a[abase + 2 * K], a[abase + 3 * K]);
  Bs[lid] = b[bbase];
  __syncthreads();

  float4 acc[8][2];
#pragma unroll
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = make_float4(0.f, 0.f, 0.f, 0.f);

  for (int t2 = 0; t2 < ktiles / 2; ++t2) {
    int t = t2 * 2;
    // tile t from stage 0; tile t + 1 into stage 1
    int tn = min(t + 1, ktiles - 1);
    int ai = abase + tn * 8;
    float4 nav = make_float4(a[ai], a[ai + K], a[ai + 2 * K], a[ai + 3 * K]);
    float4 nbv = b[bbase + tn * n4 * 8];
    ktileSteps<0>(acc, As, Bs, tx, ty);
    As[256 + aslot] = nav;
    Bs[256 + lid] = nbv;
    __syncthreads();
    // tile t + 1 from stage 1; tile t + 2 into stage 0
    int tn2 = min(t + 2, ktiles - 1);
    int ai2 = abase + tn2 * 8;
    float4 nav2 = make_float4(a[ai2], a[ai2 + K], a[ai2 + 2 * K], a[ai2 + 3 * K]);
    float4 nbv2 = b[bbase + tn2 * n4 * 8];
    ktileSteps<256>(acc, As, Bs, tx, ty);
    As[aslot] = nav2;
    Bs[lid] = nbv2;
    __syncthreads();
  }
  // an odd last tile, in stage 0
  if (ktiles % 2 == 1) ktileSteps<0>(acc, As, Bs, tx, ty);
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    int row = row0 + ty * 4 + (r / 4) * 64 + r % 4;
    c[row * n4 + bx32 + tx] = acc[r][0];
    c[row * n4 + bx32 + tx + 16] = acc[r][1];
  }
}

// sgemm_db_cur: sgemm_db with one k-tile per trip and the stage read in a
// variable (`cur`); the peer of sgemm_db_cur in bench/ephapax/gemm.eph.
__global__ void __launch_bounds__(256) sgemm128_db_cur(int K, const float* __restrict__ a, const float4* __restrict__ b,
                                                   float4* __restrict__ c, int n4) {
  __shared__ float4 As[512];
  __shared__ float4 Bs[512];
  int lid = threadIdx.x;
  int tx = lid % 16, ty = lid / 16;
  int ak = lid % 8, rq = lid / 8;
  int row0 = blockIdx.y * 128;
  int abase = (row0 + rq * 4) * K + ak;
  int aslot = ak * 32 + rq;
  int bkrow = lid / 32, bc4 = lid % 32;
  int bx32 = blockIdx.x * 32;
  int bbase = bkrow * n4 + bx32 + bc4;
  int ktiles = K / 8;

  As[aslot] = make_float4(a[abase], a[abase + K], a[abase + 2 * K], a[abase + 3 * K]);
  Bs[lid] = b[bbase];
  __syncthreads();

  float4 acc[8][2];
#pragma unroll
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = make_float4(0.f, 0.f, 0.f, 0.f);

  int cur = 0;  // the stage read in this k-tile: 0 or 256
  for (int t = 0; t < ktiles; ++t) {
    int tn = min(t + 1, ktiles - 1);
    int ai = abase + tn * 8;
    float4 nav = make_float4(a[ai], a[ai + K], a[ai + 2 * K], a[ai + 3 * K]);
    float4 nbv = b[bbase + tn * n4 * 8];
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
      float4 alo = As[cur + kk * 32 + ty], ahi = As[cur + kk * 32 + 16 + ty];
      float4 blo = Bs[cur + kk * 32 + tx], bhi = Bs[cur + kk * 32 + 16 + tx];
      float ar[8] = {alo.x, alo.y, alo.z, alo.w, ahi.x, ahi.y, ahi.z, ahi.w};
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        acc[r][0] = axpy4(acc[r][0], ar[r], blo);
        acc[r][1] = axpy4(acc[r][1], ar[r], bhi);
      }
    }
    cur = 256 - cur;
    As[cur + aslot] = nav;
    Bs[cur + lid] = nbv;
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    int row = row0 + ty * 4 + (r / 4) * 64 + r % 4;
    c[row * n4 + bx32 + tx] = acc[r][0];
    c[row * n4 + bx32 + tx + 16] = acc[r][1];
  }
}
