// The plain C++ loops the cpu target is measured against: what a programmer
// writes without intrinsics. PlainLoops.cpp is compiled with -O3 (the
// baseline), PlainLoopsNative.cpp the same source with -O3 -march=native.
#pragma once

#include <cstddef>

namespace eph::bench {

void saxpyPlain(float a, const float* x, float* y, size_t n);
float sumPlain(const float* x, size_t n);
// C = A * B, row-major n x n.
void sgemmPlain(const float* a, const float* b, float* c, size_t n);

void saxpyNative(float a, const float* x, float* y, size_t n);
float sumNative(const float* x, size_t n);
void sgemmNative(const float* a, const float* b, float* c, size_t n);

}  // namespace eph::bench
