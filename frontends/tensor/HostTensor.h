// A tensor in host memory: a dtype, a shape and its elements packed
// row-major (bool: one byte, 0 or 1; f16: IEEE half). What programs take as
// inputs and constants and give back as outputs.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "frontends/tensor/DType.h"

namespace eph::tensor {

struct HostTensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<std::byte> bytes;

  HostTensor() = default;
  HostTensor(DType t, Shape s) : dtype(t), shape(std::move(s)), bytes(size_t(numel(shape)) * hostBytes(t)) {}
  int64_t size() const { return numel(shape); }

  // Element i as a double (integers above 2^53 round) and as an integer.
  double get(int64_t i) const;
  int64_t getInt(int64_t i) const;
  // Sets element i (rounded or wrapped to the dtype).
  void set(int64_t i, double v);
  void setInt(int64_t i, int64_t v);

  // A tensor of dtype t and shape s with the given values (one per element).
  static HostTensor of(DType t, Shape s, const std::vector<double>& values);
  static HostTensor ofInts(DType t, Shape s, const std::vector<int64_t>& values);
  std::vector<double> values() const;
  std::vector<int64_t> ints() const;
};

}  // namespace eph::tensor
