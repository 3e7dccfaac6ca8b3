// Vector add, c = a + b over n floats: one element per thread, 256 threads a
// block, guarded by i < n. The same algorithm as bench/ephapax/vadd.eph.
#pragma once

__global__ void __launch_bounds__(256) vadd(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
