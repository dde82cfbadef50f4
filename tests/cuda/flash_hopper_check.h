#pragma once
// The sm_90a flash kernel's GPU tests' common parts (flash_hopper_test.cpp,
// flash_hopper_head_dims_test.cpp): a problem (shape, causal offset, layout, dtype), its random
// inputs, one launch on NaN-poisoned outputs, and the check against fp64 on sampled rows, which
// names the element that differed most and the first one left unwritten.
#include <attnprof/tensor.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cuda/attention_reference.h"
#include "cuda/fused_attention.h"
#include "cuda/hopper/flash_hopper.h"

#define ATTNPROF_REQUIRE_HOPPER()                                                                        \
  do {                                                                                                   \
    ATTNPROF_REQUIRE_GPU();                                                                              \
    if (auto attnprof_why_ = ::attnprof::cuda::hopper::hopper_unavailable_reason()) GTEST_SKIP() << *attnprof_why_; \
  } while (0)

namespace attnprof::cuda::flash_testing {

struct Problem {
  std::int64_t B, H, Hkv, Sq, Sk, D;
  bool causal;
  std::int64_t causal_offset;  // key j visible to query i iff j <= i + causal_offset (causal only)
  Layout layout;
  DType dtype;
  bool key_ramp = false;  // scale key j by 1 + 3·(Sk−1−j)/Sk: later-visited keys (low j) get larger logits
};

std::string describe(const Problem& p);

struct Inputs {
  Tensor q_host, k_host, v_host;  // logical [B, H, S, D], contiguous
  Tensor q, k, v;                 // device, in the problem's layout
};

Inputs make_inputs(const Problem& p, std::uint64_t seed);

// The problem's spec on the GPU (its causal flag, not its offset: args_of sets that).
AttentionSpec spec_of(const Problem& p);

// The backend's arguments for the problem, with its causal offset (any, not only the two alignments).
FusedAttentionArgs args_of(const Problem& p, const Inputs& in, Tensor& out, Tensor* lse);

// One launch of the sm_90a kernel on NaN-poisoned O (and LSE); O back on the host.
Tensor run_kernel(const Problem& p, const Inputs& in, Tensor* lse,
                  hopper::FlashSchedule schedule = hopper::FlashSchedule::cta_per_tile);

// Host tensors holding the same bits (same element count and size).
bool same_bits(const Tensor& a, const Tensor& b);

struct Check {
  double rel_error = 0, baseline_rel_error = 0, lse_max_abs_error = 0;
  std::int64_t non_finite = 0, lse_nan = 0;  // over the whole output / LSE (NaN poison left = unwritten)
  std::int64_t blind_rows = 0, blind_rows_wrong = 0;  // rows that see no key: must be all zeros, LSE -inf
  std::string first_non_finite;  // "b h row d" of the first non-finite output element, if any
  std::string worst;             // the sampled element furthest from fp64: where, got, want
  std::string worst_lse;         // the sampled row whose LSE is furthest from fp64
};

// fp64 attention with the causal offset on the rows sample_rows picks (all of them when Sq <= 80);
// the baseline rounds P and O to the dtype as a fused kernel does.
Check check_against_fp64(const Problem& p, const Inputs& in, const Tensor& out, const Tensor& lse);

// Runs `p` with an LSE (and, with o_without_lse, O again from a forward without one) and asserts
// every element written, blind rows zero with LSE -inf, the error at most twice the low-precision
// baseline's (+2e-4) and under 1e-2, the LSE within 1e-3; failures name `name`, the problem and
// the worst element.
void expect_matches_fp64(hopper::FlashSchedule schedule, const std::string& name, const Problem& p,
                         std::uint64_t seed, bool o_without_lse = false);

}  // namespace attnprof::cuda::flash_testing
