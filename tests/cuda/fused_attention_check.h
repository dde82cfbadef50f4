#pragma once
// One fused-attention problem on the GPU: its inputs, a run of efficient or flash through the
// backend (or a direct launch with a given causal offset) on a NaN-poisoned out, and the checks
// against the fp64 reference, each failure naming the problem and what differed.
#include <attnprof/attention.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>

#include "cuda/attention_reference.h"
#include "cuda/fused_attention.h"

namespace attnprof::cuda::gpu_testing {

struct Problem {
  std::int64_t B, H, Hkv, Sq, Sk, D;
  bool causal;
  Layout layout;
  DType dtype;
  // Set: the kernel is launched directly with this FusedAttentionArgs::causal_offset (row i sees
  // key j iff j <= i + offset) and checked against the fp64 reference with the same offset.
  std::optional<std::int64_t> causal_offset = std::nullopt;
  CausalAlign align = CausalAlign::top_left;  // through the backend: the spec's diagonal
};

inline AttentionSpec spec_of(const Problem& p) {
  AttentionSpec s;
  s.batch = p.B;
  s.heads = p.H;
  s.kv_heads = p.Hkv;
  s.seq_q = p.Sq;
  s.seq_k = p.Sk;
  s.head_dim = p.D;
  s.causal = p.causal;
  s.causal_align = p.align;
  s.layout = p.layout;
  s.dtype = p.dtype;
  s.device = Device::cuda;
  return s;
}

inline std::string problem_name(const char* variant, const Problem& p) {
  return std::string(variant) + " B" + std::to_string(p.B) + " H" + std::to_string(p.H) + "/" + std::to_string(p.Hkv) +
         " Sq" + std::to_string(p.Sq) + " Sk" + std::to_string(p.Sk) + " D" + std::to_string(p.D) +
         (p.causal ? (p.align == CausalAlign::bottom_right ? " causal-bottom-right " : " causal ") : " full ") +
         std::string(p.layout == Layout::bhsd ? "bhsd" : "bshd") + " " + std::string(dtype_name(p.dtype)) +
         (p.causal_offset ? " offset " + std::to_string(*p.causal_offset) : std::string());
}

// The host tensors (logical [B, H, S, D]) and their device copies in the problem's layout.
struct ProblemInputs {
  Tensor qh, kh, vh, q, k, v;
};

inline ProblemInputs problem_inputs(const Problem& p) {
  ProblemInputs in;
  in.qh = random_host({p.B, p.H, p.Sq, p.D}, p.dtype, 31);
  in.kh = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, 32);
  in.vh = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, 33);
  in.q = in_layout(in.qh, p.layout);
  in.k = in_layout(in.kh, p.layout);
  in.v = in_layout(in.vh, p.layout);
  return in;
}

// Runs `variant` (flash or efficient) on the problem and checks out and LSE against fp64.
inline void check_fused(const char* variant, bool flash, const Problem& p, const ProblemInputs& in) {
  const AttentionSpec spec = spec_of(p);
  Tensor out = empty_in_layout({p.B, p.H, p.Sq, p.D}, p.dtype, p.layout);
  poison(out);
  Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
  if (p.causal_offset) {
    poison(lse);
    gpu().synchronize();
    FusedAttentionArgs args = fused_attention_args(spec, out, in.q, in.k, in.v, &lse);
    args.causal_offset = *p.causal_offset;
    flash ? launch_flash_attention(args, backend_stream()) : launch_efficient_attention(args, backend_stream());
  } else if (flash) {
    gpu().attention_flash(spec, out, in.q, in.k, in.v, &lse);
  } else {
    gpu().attention_efficient(spec, out, in.q, in.k, in.v, &lse);
  }
  gpu().synchronize();
  const Tensor lse_host = to_host(lse);
  const ReferenceResult r =
      compare_with_fp64(spec, in.qh, in.kh, in.vh, to_host(out), &lse_host, -1, p.causal_offset);
  const std::string what = problem_name(variant, p);
  EXPECT_EQ(r.non_finite, 0) << what << ": elements left NaN (unwritten) or not finite";
  EXPECT_EQ(r.masked_nonzero, 0) << what << ": rows that see no key must be zeros (" << r.masked_rows << " rows)";
  if (r.masked_rows == p.Sq) {  // nothing to compare against but zeros and -inf
    EXPECT_EQ(r.lse_max_abs_error, 0.0) << what;
    return;
  }
  // At most twice the error of an fp64 reference that rounds P and O to the dtype (plus a floor).
  EXPECT_LE(r.rel_error, 2.0 * r.baseline_rel_error + 2e-4) << what << " baseline " << r.baseline_rel_error;
  EXPECT_LE(r.rel_error, 1e-2) << what;
  EXPECT_LE(r.lse_max_abs_error, 1e-3) << what;
  std::printf("%s: rel err %.2e (low-precision baseline %.2e), lse max err %.1e\n", what.c_str(), r.rel_error,
              r.baseline_rel_error, r.lse_max_abs_error);
}

}  // namespace attnprof::cuda::gpu_testing
