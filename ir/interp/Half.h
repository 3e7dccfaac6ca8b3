// The C++ type for IR f16 values: _Float16, or, where the compiler has no
// _Float16 on this target (clang before 15 on x86-64, which builds the
// libFuzzer target), a 2-byte struct converting in software (from double
// through float, rounding to nearest even). Both convert to and from double;
// arithmetic on f16 values is done in double anyway.
#pragma once

#if defined(__clang__) && __clang_major__ < 15 && (defined(__x86_64__) || defined(__i386__))
#include <cmath>
#include <cstdint>
#include <cstring>
#define EPH_SOFT_HALF 1
#endif

namespace eph {

#ifdef EPH_SOFT_HALF
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(double d) : bits(fromFloat(static_cast<float>(d))) {}
  operator double() const { return toFloat(bits); }

  static uint16_t fromFloat(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a >= 0x7f800000u) return static_cast<uint16_t>(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
    if (a < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
      float v;
      std::memcpy(&v, &a, 4);
      return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(v * 16777216.0f)));
    }
    uint32_t r = a - 0x38000000u;  // exponent bias 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  static float toFloat(uint16_t h) {
    uint32_t sign = (uint32_t(h) & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float f;
    if (e == 0) {
      f = static_cast<float>(m) * (1.0f / 16777216.0f);
      return sign ? -f : f;
    }
    uint32_t x = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112u) << 23) | (m << 13));
    std::memcpy(&f, &x, 4);
    return f;
  }
};
#else
using Half = _Float16;
#endif

}  // namespace eph
