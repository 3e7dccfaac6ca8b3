// Vector add, c = a + b over n floats: one element per thread, 256 threads a
// block, guarded by i < n. The same algorithms as bench/ephapax/vadd.eph:
// vadd one float per thread, vadd4 one float4 per thread (n/4 threads).
#pragma once

__global__ void __launch_bounds__(256) vadd(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void __launch_bounds__(256) vadd4(const float4* __restrict__ a, const float4* __restrict__ b,
                                             float4* __restrict__ c, int n4) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n4) {
    float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}
