#pragma once
// Host entry points of the single-kernel attention forwards (flash_forward.cu, efficient_forward.cu).
#include <attnprof/attention.h>
#include <attnprof/tensor.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>

namespace attnprof::cuda {

// Strides in elements for [B, H, S, D] indexing (the D stride must be 1): bhsd and bshd are just
// different strides, so no transposes. kv heads: h / (heads / kv_heads).
struct FusedAttentionArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;  // optional fp32 [B, H, Sq] contiguous
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_k = 0, head_dim = 0;
  std::int64_t q_stride[3]{}, k_stride[3]{}, v_stride[3]{}, o_stride[3]{};  // batch, head, seq
  float softmax_scale = 1.0f;
  bool causal = true;
  // Query row i sees key j iff j <= i + causal_offset (AttentionSpec::causal_offset()); a negative
  // offset leaves rows that see no key: they must come out as zeros (LSE -inf).
  std::int64_t causal_offset = 0;
  DType dtype = DType::bf16;
};

// The arguments for one forward on device tensors in [B, H, S, D] indexing (any layout through the
// strides); checks unit stride in d, 16-byte aligned rows and the LSE's shape (Error otherwise).
FusedAttentionArgs fused_attention_args(const AttentionSpec& spec, const Tensor& out, const Tensor& q, const Tensor& k,
                                        const Tensor& v, Tensor* lse);

void launch_flash_attention(const FusedAttentionArgs& args, cudaStream_t stream);
void launch_efficient_attention(const FusedAttentionArgs& args, cudaStream_t stream);
// nullopt when the fused kernels take this problem, else the reason (one line, naming the value).
std::optional<std::string> fused_attention_refusal(const AttentionSpec& spec);

}  // namespace attnprof::cuda
