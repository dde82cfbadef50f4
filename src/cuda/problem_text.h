#pragma once
// What the CUDA code needs from an AttentionSpec without linking core/attention.cpp (whose
// make_inputs pulls in the ops layer): the softmax scale and a short description for messages.
#include <attnprof/attention.h>

#include <cmath>
#include <string>

namespace attnprof::cuda {

inline double softmax_scale_of(const AttentionSpec& spec) {
  return 1.0 / std::sqrt(static_cast<double>(spec.head_dim));  // as AttentionSpec::softmax_scale
}

inline std::string problem_text(const AttentionSpec& spec) {
  std::string s = std::to_string(spec.batch) + "x" + std::to_string(spec.heads) + "x" + std::to_string(spec.seq_q) + "x" +
                  std::to_string(spec.head_dim);
  if (spec.kv_heads != spec.heads) s += " kv-heads " + std::to_string(spec.kv_heads);
  if (spec.seq_k != spec.seq_q) s += " seq-k " + std::to_string(spec.seq_k);
  if (spec.causal && spec.causal_align == CausalAlign::bottom_right) s += " causal bottom-right";
  return s;
}

}  // namespace attnprof::cuda
