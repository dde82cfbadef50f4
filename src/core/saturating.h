#pragma once
// Saturating arithmetic for byte and element estimates: a sum or product that would overflow
// 64 bits stays at the limit (INT64_MAX, or INT64_MIN for a negative result) instead of wrapping,
// so an estimate too large to count still compares larger than any memory there is.
#include <cstdint>
#include <initializer_list>
#include <limits>

namespace attnprof {

constexpr std::int64_t sat_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    return a < 0 ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
  }
  return sum;
}

constexpr std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) {
    return (a < 0) != (b < 0) ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
  }
  return product;
}

constexpr std::int64_t sat_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t product = 1;
  for (std::int64_t f : factors) product = sat_mul(product, f);
  return product;
}

constexpr std::int64_t sat_sum(std::initializer_list<std::int64_t> terms) {
  std::int64_t sum = 0;
  for (std::int64_t t : terms) sum = sat_add(sum, t);
  return sum;
}

}  // namespace attnprof
