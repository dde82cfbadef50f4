#pragma once
// The attention problem one forward solves: shapes, dtype, masking, layout, device.
#include <attnprof/dtype.h>
#include <attnprof/tensor.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace attnprof {

// bhsd: q is [B, H, S, D] in memory; bshd: [B, S, H, D]. Tensors are always indexed as
// [B, H, S, D]; bshd only changes the strides (no transposes).
enum class Layout { bhsd, bshd };
std::string_view layout_name(Layout layout);
Layout parse_layout(std::string_view name);  // throws UsageError naming bhsd|bshd

// Where the causal diagonal sits when seq_q != seq_k (PyTorch's causal_upper_left, the default of
// is_causal, and causal_lower_right). With bottom_right and seq_q > seq_k the first seq_q - seq_k
// query rows see no key at all: fully masked rows.
enum class CausalAlign { top_left, bottom_right };
std::string_view causal_align_name(CausalAlign align);
CausalAlign parse_causal_align(std::string_view name);  // throws UsageError naming top-left|bottom-right

// What a run measures: the forward, the backward of a forward done outside the measured region
// (as torch.profiler shows `loss.backward()`), or one training step (the forward, then its backward).
enum class Pass { forward, backward, train };
std::string_view pass_name(Pass pass);  // "forward", "backward", "train"
Pass parse_pass(std::string_view name);  // throws UsageError naming forward|backward|train

struct AttentionSpec {
  std::int64_t batch = 8;
  std::int64_t heads = 16;
  std::int64_t kv_heads = 16;  // GQA when heads is a multiple of kv_heads
  std::int64_t seq_q = 1024;
  std::int64_t seq_k = 1024;
  std::int64_t head_dim = 64;
  DType dtype = DType::bf16;
  bool causal = true;  // top-left aligned when seq_q != seq_k, as PyTorch's is_causal
  CausalAlign causal_align = CausalAlign::top_left;
  Layout layout = Layout::bhsd;
  Device device = Device::cpu;

  double softmax_scale() const;  // 1/sqrt(head_dim)
  // Query row i sees key j iff j <= i + causal_offset(): 0 for top-left, seq_k - seq_q for
  // bottom-right (meaningful only when causal).
  std::int64_t causal_offset() const {
    return causal && causal_align == CausalAlign::bottom_right ? seq_k - seq_q : 0;
  }
  // 4·B·H·Sq·Sk·D, halved for causal top-left (the anchors' convention); causal bottom-right
  // counts the visible (i, j) pairs exactly: 4·B·H·D·Σ_i clamp(i + 1 + Sk − Sq, 0, Sk).
  double flops() const;
  // The (query, key) pairs the mask leaves visible: Σ_i clamp(i + 1 + causal_offset(), 0, Sk) when
  // causal (either alignment), Sq·Sk without a mask.
  double visible_pairs() const;
  // Throws UsageError for sizes <= 0, kv_heads not dividing heads, or element counts that overflow.
  void validate() const;
  // "8x16x1024x64" (B x H x S x D, with Sk and Hkv when they differ, and " causal bottom-right"
  // when that is the alignment)
  std::string shape_string() const;
};

// Allocates q ([B,H,Sq,D]), k and v ([B,Hkv,Sk,D]) in the spec's layout and fills them with
// seeded normal values (on the CPU; copied to the device for cuda).
struct AttentionInputs {
  Tensor q, k, v;
};
AttentionInputs make_inputs(const AttentionSpec& spec, std::uint64_t seed);
// An output tensor [B,H,Sq,D] in the spec's layout, dtype and device.
Tensor make_output(const AttentionSpec& spec);
// dO, the gradient of the output: [B,H,Sq,D] like make_output, filled with seeded normal values
// from a stream of its own (q, k and v stay what make_inputs gives for the same seed).
Tensor make_output_grad(const AttentionSpec& spec, std::uint64_t seed);
// Gradient buffers: dq [B,H,Sq,D], dk and dv [B,Hkv,Sk,D], in the spec's layout, dtype and device
// (unfilled: a backward writes every element).
struct AttentionGrads {
  Tensor dq, dk, dv;
};
AttentionGrads make_grads(const AttentionSpec& spec);
// FLOPs of one pass: the forward's flops(); a backward counts 2.5× (FlashAttention's convention:
// five S×S×D GEMMs, the scores recomputed, dP, dV, dQ and dK, against the forward's two), a
// training step 3.5×.
double pass_flops(const AttentionSpec& spec, Pass pass);

}  // namespace attnprof
