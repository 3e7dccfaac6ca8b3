#include "frontends/tensor/HostTensor.h"

#include <cmath>
#include <cstdint>

namespace eph::tensor {

namespace {
template <class T>
T read(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void write(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
}  // namespace

double HostTensor::get(int64_t i) const {
  const std::byte* p = bytes.data() + size_t(i) * hostBytes(dtype);
  switch (dtype) {
    case DType::Bool: return read<uint8_t>(p) != 0;
    case DType::U8: return read<uint8_t>(p);
    case DType::I8: return read<int8_t>(p);
    case DType::U16: return read<uint16_t>(p);
    case DType::I16: return read<int16_t>(p);
    case DType::U32: return read<uint32_t>(p);
    case DType::I32: return read<int32_t>(p);
    case DType::U64: return double(read<uint64_t>(p));
    case DType::I64: return double(read<int64_t>(p));
    case DType::F16: return double(read<_Float16>(p));
    case DType::F32: return read<float>(p);
    case DType::F64: return read<double>(p);
  }
  return 0;
}

int64_t HostTensor::getInt(int64_t i) const {
  const std::byte* p = bytes.data() + size_t(i) * hostBytes(dtype);
  switch (dtype) {
    case DType::U64: return int64_t(read<uint64_t>(p));
    case DType::I64: return read<int64_t>(p);
    case DType::F16: case DType::F32: case DType::F64: return int64_t(get(i));
    default: return int64_t(get(i));
  }
}

void HostTensor::set(int64_t i, double v) {
  std::byte* p = bytes.data() + size_t(i) * hostBytes(dtype);
  switch (dtype) {
    case DType::F16: return write(p, _Float16(v));
    case DType::F32: return write(p, float(v));
    case DType::F64: return write(p, v);
    case DType::Bool: return write(p, uint8_t(v != 0));
    default:
      if (std::isnan(v)) return setInt(i, 0);
      return setInt(i, isSigned(dtype) ? int64_t(v) : int64_t(uint64_t(v)));
  }
}

void HostTensor::setInt(int64_t i, int64_t v) {
  std::byte* p = bytes.data() + size_t(i) * hostBytes(dtype);
  switch (dtype) {
    case DType::Bool: return write(p, uint8_t(v != 0));
    case DType::U8: return write(p, uint8_t(v));
    case DType::I8: return write(p, int8_t(v));
    case DType::U16: return write(p, uint16_t(v));
    case DType::I16: return write(p, int16_t(v));
    case DType::U32: return write(p, uint32_t(v));
    case DType::I32: return write(p, int32_t(v));
    case DType::U64: return write(p, uint64_t(v));
    case DType::I64: return write(p, v);
    default: return set(i, double(v));
  }
}

HostTensor HostTensor::of(DType t, Shape s, const std::vector<double>& values) {
  HostTensor h(t, std::move(s));
  for (int64_t i = 0; i < h.size() && size_t(i) < values.size(); ++i) h.set(i, values[size_t(i)]);
  return h;
}

HostTensor HostTensor::ofInts(DType t, Shape s, const std::vector<int64_t>& values) {
  HostTensor h(t, std::move(s));
  for (int64_t i = 0; i < h.size() && size_t(i) < values.size(); ++i) h.setInt(i, values[size_t(i)]);
  return h;
}

std::vector<double> HostTensor::values() const {
  std::vector<double> out(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i) out[size_t(i)] = get(i);
  return out;
}

std::vector<int64_t> HostTensor::ints() const {
  std::vector<int64_t> out(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i) out[size_t(i)] = getInt(i);
  return out;
}

}  // namespace eph::tensor
