#pragma once
// What the CPU variant tests share: the AttentionSpec of a test case and the tolerance each dtype
// is held to against the fp64 reference (forward output and gradients alike).
#include <attnprof/attention.h>
#include <attnprof/dtype.h>

namespace attnprof::testing {

// ‖x − ref‖/‖ref‖ at most 1e-5 for fp32, 1e-2 for bf16 and fp16.
inline double tolerance(DType dtype) { return dtype == DType::fp32 ? 1e-5 : 1e-2; }

// The CPU spec of a case: any struct with batch, heads, kv_heads, seq_q, seq_k, head_dim, dtype,
// causal, align and layout members.
template <class Case>
AttentionSpec cpu_spec(const Case& c) {
  AttentionSpec spec;
  spec.batch = c.batch;
  spec.heads = c.heads;
  spec.kv_heads = c.kv_heads;
  spec.seq_q = c.seq_q;
  spec.seq_k = c.seq_k;
  spec.head_dim = c.head_dim;
  spec.dtype = c.dtype;
  spec.causal = c.causal;
  spec.causal_align = c.align;
  spec.layout = c.layout;
  spec.device = Device::cpu;
  return spec;
}

}  // namespace attnprof::testing
