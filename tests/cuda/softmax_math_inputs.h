#pragma once
// Inputs for the softmax_math.h tests (host: softmax_math_test.cpp; device: hopper_test.cpp): a
// sweep of the range a softmax feeds exp2 (−130 … 0, denser near 0), integers, values just off
// integers, a few positive ones, and the special values (−0, −∞, NaN). No exact bf16 ties: the
// packing test compares with round-to-nearest-even, which differs from ours only there.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace attnprof::cuda::testing {

inline bool is_bf16_tie(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0xFFFFu) == 0x8000u;
}

inline std::vector<float> softmax_math_inputs() {
  std::vector<float> in;
  for (int i = 0; i <= 13000; ++i) in.push_back(-130.0f + 0.01f * static_cast<float>(i));  // −130 … 0
  for (int i = 1; i <= 2000; ++i) in.push_back(-1.0f / static_cast<float>(i * i));        // near 0
  for (int k = -126; k <= 10; ++k) {
    in.push_back(std::nextafter(static_cast<float>(k), -1000.0f));
    in.push_back(std::nextafter(static_cast<float>(k), 1000.0f));
  }
  for (float x : {0.3f, 1.7f, 6.25f, 9.99f}) in.push_back(x);
  std::vector<float> out;
  for (float x : in)
    if (!is_bf16_tie(x)) out.push_back(x);
  out.push_back(-0.0f);
  out.push_back(-std::numeric_limits<float>::infinity());
  out.push_back(std::numeric_limits<float>::quiet_NaN());
  return out;
}

}  // namespace attnprof::cuda::testing
