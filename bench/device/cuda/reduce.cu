// Sum of n floats (as n/4 float4s) in two passes, the same algorithm as
// bench/ephapax/reduce.eph (and the .eir sum in bench/gpu_bench.cpp):
//   pass 1: G blocks of 256; each thread walks a grid-stride share of the
//           float4s, four independent loads per step, then a tail of single
//           loads; its float4 is summed to one float, and the block halves
//           its 256 partials in shared memory (8 steps with barriers);
//           thread 0 writes the block's partial.
//   pass 2: one block of 256 sums the G partials the same way into out[0].
#pragma once

__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

__device__ __forceinline__ void treeReduce256(float* sh, int lid) {
  for (int h = 128; h > 0; h /= 2) {
    if (lid < h) sh[lid] = sh[lid] + sh[lid + h];
    __syncthreads();
  }
}

__global__ void __launch_bounds__(256) reduce_partial(const float4* __restrict__ x, float* __restrict__ partial,
                                                      int n4) {
  __shared__ float sh[256];
  int lid = threadIdx.x;
  int stride = gridDim.x * 256;
  int i = blockIdx.x * 256 + lid;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  while (i + 3 * stride < n4) {
    float4 v0 = x[i], v1 = x[i + stride], v2 = x[i + 2 * stride], v3 = x[i + 3 * stride];
    acc = add4(acc, add4(add4(v0, v1), add4(v2, v3)));
    i += 4 * stride;
  }
  while (i < n4) {
    acc = add4(acc, x[i]);
    i += stride;
  }
  sh[lid] = (acc.x + acc.y) + (acc.z + acc.w);
  __syncthreads();
  treeReduce256(sh, lid);
  if (lid == 0) partial[blockIdx.x] = sh[0];
}

__global__ void __launch_bounds__(256) reduce_final(const float* __restrict__ partial, float* __restrict__ out,
                                                    int n) {
  __shared__ float sh[256];
  int lid = threadIdx.x;
  float acc = 0.f;
  for (int i = lid; i < n; i += 256) acc += partial[i];
  sh[lid] = acc;
  __syncthreads();
  treeReduce256(sh, lid);
  if (lid == 0) out[0] = sh[0];
}
