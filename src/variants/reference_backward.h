#pragma once
// The fp64 oracle of the backward: dQ, dK, dV of the loss Σ out·dout, computed in double from the
// stored input values, and the relative errors ‖x − ref‖ / ‖ref‖ of a kernel's gradients.
// CPU tensors (the runner copies device gradients back first).
#include <attnprof/attention.h>
#include <attnprof/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::variants {

struct ReferenceGradients {
  Tensor dq, dk, dv;
};

// fp64 contiguous [B,H,Sq,D] for dq, [B,KVH,Sk,D] for dk/dv, of out = softmax(scale·q·kᵀ, masked)·v
// with upstream gradient dout ([B,H,Sq,D], any strides and dtype, as q/k/v). GQA sums dK/dV over
// the query heads of a group; causal with spec.causal_offset(); rows that see no key contribute
// nothing (their out is the constant 0, so their dq is 0 too).
ReferenceGradients reference_gradients(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& dout);

struct GradientErrors {
  double dq = 0, dk = 0, dv = 0;
  // What was compared: every element, or (sampled) the elements of a GradientSample.
  bool sampled = false;
  std::int64_t dq_rows = 0, dq_total_rows = 0;       // query rows compared, of B·H·Sq
  std::int64_t kv_keys = 0, kv_total_keys = 0;       // keys compared in each sampled group, of Sk
  std::int64_t kv_groups = 0, kv_total_groups = 0;   // (batch, kv head) groups compared, of B·KVH
  double worst() const;  // the largest of the three; NaN when any is NaN
  // "all rows", or "dq on 682 sampled rows of 262144, dk/dv on 511 sampled keys of 16384 in 1 of
  // 16 kv-head groups"
  std::string scope() const;
};

// The full reference's work in fp64 multiply-adds: 5·D per (query row, key it sees) over every
// (b, h) (the scores, dP, and the dq, dk, dv updates); int64's largest when it would not fit.
std::int64_t full_gradient_check_macs(const AttentionSpec& spec);

// Up to this much work check_gradients compares every element against the full reference; above
// it, a GradientSample. 2^31 multiply-adds take the full reference under a second on two cores
// (about 3.4 GMAC/s), and lie above every problem the tests check in full (the largest, 2×4×256×256
// at D 128 without a mask, is 3.4e8); a 4×16×4096×64 causal problem is 1.7e11 (about a minute),
// 1×16×16384×128 causal 1.4e12 (minutes), which the sample checks in seconds.
inline constexpr std::int64_t kFullGradientCheckMacs = std::int64_t{1} << 31;

// The sampled check's budget for each of its three parts (dq rows, kv groups, keys), in fp64
// multiply-adds: at about 3.4 GMAC/s on two cores, well under a second each (a group is never
// skipped for the budget: one 1×16×16384×128 causal group alone is 3.4e10 for its LSE and Δ).
inline constexpr std::int64_t kGradientSampleMacs = std::int64_t{1} << 31;

// The fixed sample a large problem's gradients are checked on, the same on every call:
// - dq_rows: evenly spaced query rows over all B·H·Sq (flat (b·H + h)·Sq + i, the first and the
//   last included), as many as sample_macs of 3·D per visible key allow, at least 64, at most 4096;
// - kv_groups: evenly spaced (b, kv head) groups (flat b·KVH + hk, the first and the last), as
//   many as sample_macs allow for every query row's LSE and Δ of their heads (2·D per visible
//   key), at least 1, at most 8;
// - keys: evenly spaced keys of each sampled group (the first and the last), as many as
//   sample_macs of 4·D per (query row, key it sees) allow, at least 64, at most 1024.
// Each list is capped at what exists (every row, group or key when there are fewer).
struct GradientSample {
  std::vector<std::int64_t> dq_rows, kv_groups, keys;
};
GradientSample gradient_sample(const AttentionSpec& spec, std::int64_t sample_macs = kGradientSampleMacs);

// ‖x − ref‖ / ‖ref‖ for each of dq, dk, dv (any strides and dtype; NaN when x holds a NaN
// anywhere: every element is scanned, sampled or not; the absolute ‖x‖ when the reference is all
// zeros). Over every element when full_gradient_check_macs(spec) ≤ max_full_macs, else over
// gradient_sample(spec)'s elements: dq on its rows, dk and dv on its keys of its groups, against
// fp64 computed for those elements alone (the same values as the full reference's, to rounding).
// Throws Error when a gradient's shape is wrong.
GradientErrors check_gradients(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& dout, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                               std::int64_t max_full_macs = kFullGradientCheckMacs);

// The sampled check alone (check_gradients above the bound) on gradient_sample(spec, sample_macs);
// every shape already checked.
GradientErrors check_gradients_sampled(const AttentionSpec& spec, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                                       const Tensor& dv, std::int64_t sample_macs = kGradientSampleMacs);

}  // namespace attnprof::variants
