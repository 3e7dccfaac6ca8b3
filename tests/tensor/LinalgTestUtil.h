// Helpers of the linalg tests (LinalgTest.cpp, ConvTest.cpp): float64
// vectors and indices, and a transpose's storage.
#pragma once

#include <string>
#include <vector>

#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {

using Vec = std::vector<double>;
using Idx = std::vector<int64_t>;

// v of shape [r, c] laid out as [c, r] (the storage of its transpose).
inline Vec transposed(const Vec& v, int64_t r, int64_t c) {
  Vec t(v.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) t[size_t(j * r + i)] = v[size_t(i * c + j)];
  return t;
}

}  // namespace eph::tensor::test
