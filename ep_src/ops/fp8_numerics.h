// FP8 (E4M3FN, E5M2, E4M3FNUZ, E5M2FNUZ), float16 and bfloat16 conversions, bit-exact with ml_dtypes/NumPy:
// round to nearest even, saturation to ±max on request, NaN kept as the format's NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace fp8ort {

enum class Fp8Format : int { kE4M3FN = 0, kE5M2 = 1, kE4M3FNUZ = 2, kE5M2FNUZ = 3 };
constexpr int kNumFp8Formats = 4;

struct Fp8Spec {
  int mantissa_bits;
  int exponent_bias;
  bool fnuz;           // no negative zero, no infinity, NaN is 0x80
  bool has_infinity;   // E5M2: exponent all ones + mantissa 0
  uint8_t max_code;    // largest finite magnitude
  float max_value;
};

constexpr float kE4M3FNMax = 448.0f;
constexpr float kE5M2Max = 57344.0f;
constexpr float kE4M3FNUZMax = 240.0f;
constexpr float kE5M2FNUZMax = 57344.0f;

constexpr Fp8Spec kFp8Specs[kNumFp8Formats] = {
    {3, 7, false, false, 0x7E, kE4M3FNMax},
    {2, 15, false, true, 0x7B, kE5M2Max},
    {3, 8, true, false, 0x7F, kE4M3FNUZMax},
    {2, 16, true, false, 0x7F, kE5M2FNUZMax},
};

inline const Fp8Spec& spec(Fp8Format f) { return kFp8Specs[static_cast<int>(f)]; }

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint8_t fp8_nan(Fp8Format f, uint32_t sign) {
  const Fp8Spec& s = spec(f);
  if (s.fnuz) return 0x80;
  uint8_t nan = s.has_infinity ? 0x7E : 0x7F;  // E5M2 quiet NaN / E4M3FN NaN
  return static_cast<uint8_t>(nan | (sign << 7));
}

// float32 -> FP8, round to nearest even. saturate: finite overflow and ±Inf become ±max.
// Without saturation, overflow becomes ±Inf (E5M2) or NaN (formats without infinity), as ml_dtypes does.
inline uint8_t encode_fp8(float x, Fp8Format fmt, bool saturate) {
  const Fp8Spec& s = spec(fmt);
  const uint32_t bits = f32_bits(x);
  const uint32_t sign = bits >> 31;
  const uint32_t mag = bits & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return fp8_nan(fmt, sign);
  auto overflow = [&]() -> uint8_t {
    if (saturate) return static_cast<uint8_t>(s.max_code | (sign << 7));
    if (s.has_infinity) return static_cast<uint8_t>(0x7C | (sign << 7));
    return fp8_nan(fmt, sign);
  };
  if (mag == 0x7F800000u) return overflow();
  const int man_bits = s.mantissa_bits;
  const int emin = 1 - s.exponent_bias;  // exponent of the smallest normal
  const int exp_field = static_cast<int>(mag >> 23);
  uint8_t code;
  if (exp_field == 0) {
    code = 0;  // float32 subnormals are far below half the smallest FP8 subnormal
  } else {
    const int e = exp_field - 127;
    const uint32_t m = (mag & 0x7FFFFFu) | 0x800000u;  // 24-bit significand
    int target_e = e < emin ? emin : e;
    const int shift = 23 - man_bits + (target_e - e);
    uint32_t rounded;
    if (shift >= 26) {
      rounded = 0;
    } else {
      rounded = m >> shift;
      const uint32_t rem = m & ((1u << shift) - 1u);
      const uint32_t half = 1u << (shift - 1);
      if (rem > half || (rem == half && (rounded & 1u))) ++rounded;
    }
    if (rounded >= (2u << man_bits)) {  // carried into the next binade
      rounded >>= 1;
      ++target_e;
    }
    if (rounded == 0) {
      code = 0;
    } else if (rounded < (1u << man_bits)) {
      code = static_cast<uint8_t>(rounded);  // subnormal
    } else {
      const int biased = target_e + s.exponent_bias;
      if (biased > 31 || (static_cast<uint32_t>(biased) << man_bits) > 0x7Fu) return overflow();
      code = static_cast<uint8_t>((static_cast<uint32_t>(biased) << man_bits) | (rounded & ((1u << man_bits) - 1u)));
    }
  }
  if (code > s.max_code) return overflow();
  if (s.fnuz && code == 0) return 0;  // no negative zero
  return static_cast<uint8_t>(code | (sign << 7));
}

inline float decode_fp8_slow(uint8_t v, Fp8Format fmt) {
  const Fp8Spec& s = spec(fmt);
  const uint32_t sign = v >> 7;
  const uint32_t mag = v & 0x7Fu;
  if (s.fnuz && v == 0x80) return std::nanf("");
  if (!s.fnuz) {
    if (s.has_infinity && (mag >> s.mantissa_bits) == 0x1Fu) {
      if ((mag & 3u) == 0) return sign ? -INFINITY : INFINITY;
      return bits_f32((sign << 31) | 0x7FC00000u);
    }
    if (!s.has_infinity && mag == 0x7Fu) return bits_f32((sign << 31) | 0x7FC00000u);
  }
  const int man_bits = s.mantissa_bits;
  const int exp = static_cast<int>(mag >> man_bits);
  const uint32_t man = mag & ((1u << man_bits) - 1u);
  float value;
  if (exp == 0) {
    value = std::ldexp(static_cast<float>(man), 1 - s.exponent_bias - man_bits);
  } else {
    value = std::ldexp(static_cast<float>(man | (1u << man_bits)), exp - s.exponent_bias - man_bits);
  }
  return sign ? -value : value;
}

// The float32 value of encode_fp8(v, fmt, saturate=true), computed without branches so loops vectorize:
// clamp |v| to max, round its mantissa to the format's bits (ties to even) in the normal range, or with an
// add-and-subtract of a power of two in the subnormal range. NaN passes through.
struct Fp8Rounder {
  float max_value;
  float min_normal;
  float subnormal_magic;  // 2^(emin - mantissa_bits + 23): adding it rounds to the subnormal spacing
  uint32_t drop_bits;     // 23 - mantissa_bits
  bool fnuz;

  explicit Fp8Rounder(Fp8Format f) {
    const Fp8Spec& s = spec(f);
    max_value = s.max_value;
    const int emin = 1 - s.exponent_bias;
    min_normal = std::ldexp(1.0f, emin);
    subnormal_magic = std::ldexp(1.0f, emin - s.mantissa_bits + 23);
    drop_bits = static_cast<uint32_t>(23 - s.mantissa_bits);
    fnuz = s.fnuz;
    format = f;
    exponent_bias = s.exponent_bias;
    mantissa_bits = s.mantissa_bits;
    subnormal_to_int = std::ldexp(1.0f, s.mantissa_bits - emin);
  }

  inline float operator()(float v) const {
    float a = std::fabs(v);
    const bool nan = !(a == a);
    a = a < max_value ? a : max_value;
    const uint32_t u = f32_bits(a);
    const uint32_t lsb = (u >> drop_bits) & 1u;
    const uint32_t rounded = (u + ((1u << (drop_bits - 1)) - 1u) + lsb) & ~((1u << drop_bits) - 1u);
    const float sub = (a + subnormal_magic) - subnormal_magic;
    float r = a < min_normal ? sub : bits_f32(rounded);
    r = std::copysign(r, v);
    if (fnuz) r = r == 0.0f ? 0.0f : r;
    return nan ? v : r;
  }

  // The FP8 code of encode_fp8(v, format, saturate=true), through the rounded value.
  inline uint8_t code(float v) const { return code_of_value((*this)(v)); }

  // The FP8 code of an exact FP8 value r (as operator() produces), without branches on the value.
  inline uint8_t code_of_value(float r) const {
    const uint32_t b = f32_bits(r);
    const uint32_t sign = b >> 31;
    const uint32_t mag = b & 0x7FFFFFFFu;
    const uint32_t normal = (mag >> drop_bits) - (static_cast<uint32_t>(127 - exponent_bias) << mantissa_bits);
    const uint32_t sub = static_cast<uint32_t>(bits_f32(mag) * subnormal_to_int);
    const uint32_t m = bits_f32(mag) >= min_normal ? normal : sub;
    const uint32_t signed_code = (fnuz && m == 0) ? 0u : (m | (sign << 7));
    return static_cast<uint8_t>(mag > 0x7F800000u ? fp8_nan(format, sign) : signed_code);
  }

  Fp8Format format;
  int exponent_bias;
  int mantissa_bits;
  float subnormal_to_int;  // 2^(mantissa_bits - emin): a subnormal's value times this is its code
};

// 256-entry decode tables, one per format (filled once).
const float* fp8_decode_table(Fp8Format fmt);

// float16 <-> float32, round to nearest even; NaN payloads as NumPy handles them.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) return bits_f32(sign | 0x7F800000u | (man << 13));
  if (exp != 0) return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
  if (man == 0) return bits_f32(sign);
  // subnormal: value = man * 2^-24
  float v = static_cast<float>(man) * 5.9604644775390625e-08f;
  return sign ? -v : v;
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t bits = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t mag = bits & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) {
    uint16_t h = static_cast<uint16_t>(0x7C00u | ((mag & 0x7FFFFFu) >> 13));
    if (h == 0x7C00u) h = 0x7C01u;  // keep it a NaN when the payload sits in the dropped bits
    return static_cast<uint16_t>(sign | h);
  }
  if (mag >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: Inf
  const int e = static_cast<int>(mag >> 23) - 127;
  if (e < -25) return sign;  // below half the smallest subnormal (2^-25 itself rounds to 0 by ties-to-even)
  uint32_t m = (mag & 0x7FFFFFu) | 0x800000u;
  int shift = e < -14 ? 13 + (-14 - e) : 13;
  uint32_t rounded = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (rounded & 1u))) ++rounded;
  if (e < -14) return static_cast<uint16_t>(sign | rounded);  // subnormal (a carry lands in the exponent)
  // normal: rounded holds 1.mantissa in 11 bits; a carry bumps the exponent naturally
  uint32_t h = (static_cast<uint32_t>(e + 15) << 10) + (rounded - 0x400u);
  return static_cast<uint16_t>(sign | h);
}

inline float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t bits = f32_bits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7FC0u);
  const uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7FFFu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace fp8ort
