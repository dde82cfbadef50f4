#pragma once
// What a trace reveals about attention's backward: the rules read the backward alone — attnprof's
// `attn_bwd` ranges where the trace has them, else the backward attention calls found in it
// (report/attention_calls.h: PyTorch's SDPA backward nodes, the composed SoftmaxBackward0 chain) —
// and, like the forward's rules (insights.h), look at op and kernel names, never at a variant's.
// docs/insights.md lists them.
#include <attnprof/attention.h>
#include <attnprof/trace.h>

#include <optional>
#include <vector>

#include "report/forward_work.h"
#include "report/insights.h"

namespace attnprof::report {

// The backward a trace holds: its attn_bwd ranges (one per step) or its backward attention calls.
struct BackwardScope {
  TraceWork work;                     // each "forward" of it is one backward
  bool ranges = false;                // attn_bwd ranges: each is one step's backward
  int steps = 0;                      // calls: the profiler steps they fall in (0: none)
  std::optional<AttentionSpec> spec;  // the run's, else the recorded shape of the first call
  bool causal_known = false;          // spec.causal is the run's or the call's recorded argument
};
BackwardScope backward_scope(const trace::Trace& trace, const RunFacts& facts);

namespace rules {
// probabilities_kept: a softmax backward (aten::_softmax_backward_data, SoftmaxBackward0's op, a
// fused softmax-backward op or kernel) reads the S×S probabilities its forward kept: their bytes
// per backward, from the op's recorded input (B·H·Sq·Sk·element size), against the fp32 log-sum-exp
// a fused backward keeps instead (B·H·Sq·4 B).
std::optional<Insight> probabilities_kept(const BackwardScope& scope);
// scores_recomputed: a FlashAttention-style backward op (aten::_flash_attention_backward,
// _efficient_attention_backward, _scaled_dot_product_cudnn_attention_backward, the CPU flash
// backward, flash_attn's) recomputes S = Q·Kᵀ from the saved log-sum-exp: with the shape, those
// FLOPs (one of the backward's five S×S×D GEMMs, 20% of its 2.5× forward FLOPs) and the S×S bytes
// it does not keep.
std::optional<Insight> scores_recomputed(const BackwardScope& scope);
// dkdv_reduction: with GQA (heads > kv heads, from the shape), how dK and dV are summed over the
// query heads of a group: the aten::sum work of the backward (ExpandBackward0's group sum) and its
// share of the backward's work, and for the kernels whose reduction is known (attnprof's CPU
// FlashAttention-2 backward) that the kernel sums in a fixed order without atomics.
std::optional<Insight> dkdv_reduction(const BackwardScope& scope);
}  // namespace rules

// The three rules over backward_scope(trace, facts), in that order; none on a trace without a
// backward.
std::vector<Insight> derive_backward_insights(const trace::Trace& trace, const RunFacts& facts);

// "524,288 FLOP", "0.52 MFLOP", "8.39 GFLOP", "1.10 TFLOP"
std::string format_flop_count(double flops);

}  // namespace attnprof::report
