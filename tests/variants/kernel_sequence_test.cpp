// The pieces of work each variant runs per forward on the CPU, in order: DESIGN.md's table
// (naive 6, inplace 5, math 20, fused 3, efficient 1, flash 1), checked through the CPU
// backend's kernel log, kernel names carrying the words the insight rules classify by; and the
// pieces of work of each variant's backward (docs/backward.md).
#include <attnprof/attention.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpu/cpu_backend.h"

namespace attnprof {
namespace {

std::vector<std::string> kernels_of(const std::string& name, DType dtype, bool causal) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 2;
  spec.kv_heads = 1;
  spec.seq_q = spec.seq_k = 40;
  spec.head_dim = 32;
  spec.dtype = dtype;
  spec.causal = causal;
  const AttentionInputs in = make_inputs(spec, 2);
  Tensor out = make_output(spec);
  Variant* variant = find_variant(name);
  variant->prepare(spec);  // naive's mask is built here, outside the forward
  std::vector<std::string> log;
  cpu::set_kernel_log(&log);
  variant->forward(spec, in.q, in.k, in.v, out);
  cpu::set_kernel_log(nullptr);
  return log;
}

// The pieces of work of one backward (after forward_for_backward, outside the log).
std::vector<std::string> backward_kernels_of(const std::string& name, DType dtype, std::int64_t kv_heads) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = 2;
  spec.kv_heads = kv_heads;
  spec.seq_q = spec.seq_k = 40;
  spec.head_dim = 32;
  spec.dtype = dtype;
  const AttentionInputs in = make_inputs(spec, 2);
  const Tensor dout = make_output_grad(spec, 2);
  Tensor out = make_output(spec);
  AttentionGrads g = make_grads(spec);
  Variant* variant = find_variant(name);
  variant->prepare(spec);
  variant->forward_for_backward(spec, in.q, in.k, in.v, out);
  std::vector<std::string> log;
  cpu::set_kernel_log(&log);
  variant->backward(spec, in.q, in.k, in.v, out, dout, g.dq, g.dk, g.dv);
  cpu::set_kernel_log(nullptr);
  variant->release_saved();
  return log;
}

// Each kernel name must contain the expected word, in order, and nothing else may run.
void expect_sequence(const std::vector<std::string>& got, const std::vector<std::string>& words) {
  ASSERT_EQ(got.size(), words.size()) << ::testing::PrintToString(got);
  for (std::size_t i = 0; i < words.size(); ++i) {
    EXPECT_NE(got[i].find(words[i]), std::string::npos) << "kernel " << i << " is " << got[i] << ", expected " << words[i];
  }
}

TEST(KernelSequence, Naive) {
  expect_sequence(kernels_of("naive", DType::bf16, true), {"gemm", "mul", "copy", "masked_fill", "softmax", "gemm"});
  expect_sequence(kernels_of("naive", DType::bf16, false), {"gemm", "mul", "softmax", "gemm"});
}

TEST(KernelSequence, Inplace) {
  expect_sequence(kernels_of("inplace", DType::fp16, true), {"gemm", "mul", "masked_fill", "softmax", "gemm"});
}

TEST(KernelSequence, MathBf16Causal) {
  expect_sequence(kernels_of("math", DType::bf16, true),
                  {"copy", "copy", "copy",                                   // q, k, v to fp32
                   "fill", "tril", "fill", "logical_not", "masked_fill",      // causal mask, rebuilt
                   "mul", "mul", "gemm_fp32", "add",                          // √scale on q and k
                   "softmax", "isneginf", "all", "fill", "where",             // _safe_softmax
                   "copy_fp32_to_bf16",                                       // the weights, discarded
                   "gemm_fp32", "copy_fp32_to_bf16"});                        // downcast
}

TEST(KernelSequence, MathFp32CausalHasNoCasts) {
  expect_sequence(kernels_of("math", DType::fp32, true),
                  {"fill", "tril", "fill", "logical_not", "masked_fill", "mul", "mul", "gemm", "add", "softmax",
                   "isneginf", "all", "fill", "where", "gemm"});
}

TEST(KernelSequence, FusedEfficientFlash) {
  expect_sequence(kernels_of("fused", DType::bf16, true), {"gemm", "scale_mask_softmax", "gemm"});
  expect_sequence(kernels_of("efficient", DType::bf16, true), {"efficient_attention"});
  expect_sequence(kernels_of("flash", DType::fp32, false), {"flash_attention"});
}

// docs/backward.md's table: the work PyTorch's autograd runs for each forward, node by node.
TEST(KernelSequence, NaiveAndInplaceBackward) {
  const std::vector<std::string> words{"gemm", "gemm",  // BmmBackward0: dP, dV
                                       "softmax_backward", "copy", "masked_fill", "mul",  // softmax, mask, scale
                                       "gemm", "gemm"};  // BmmBackward0: dQ, dK
  expect_sequence(backward_kernels_of("naive", DType::bf16, 2), words);
  expect_sequence(backward_kernels_of("inplace", DType::fp16, 2), words);
  std::vector<std::string> gqa = words;
  gqa.insert(gqa.end(), {"sum_head_groups", "sum_head_groups"});  // ExpandBackward0: dV, then dK
  expect_sequence(backward_kernels_of("naive", DType::bf16, 1), gqa);
}

TEST(KernelSequence, MathBackward) {
  expect_sequence(backward_kernels_of("math", DType::bf16, 2),
                  {"copy_bf16_to_fp32",                                      // dO upcast
                   "gemm_fp32", "gemm_fp32", "softmax_backward_fp32",         // dP, dV, dS
                   "gemm_fp32", "gemm_fp32", "mul_fp32", "mul_fp32",          // dQ, dK, then √scale on k, q
                   "copy_fp32_to_bf16", "copy_fp32_to_bf16", "copy_fp32_to_bf16"});  // dV, dK, dQ downcast
  expect_sequence(backward_kernels_of("math", DType::fp32, 1),
                  {"gemm", "gemm", "softmax_backward", "gemm", "gemm", "mul", "mul", "sum_head_groups",
                   "sum_head_groups"});
}

TEST(KernelSequence, FusedEfficientFlashBackward) {
  expect_sequence(backward_kernels_of("fused", DType::bf16, 2),
                  {"gemm", "gemm", "scale_softmax_backward", "gemm", "gemm"});
  expect_sequence(backward_kernels_of("efficient", DType::bf16, 1), {"efficient_attention_backward"});
  expect_sequence(backward_kernels_of("flash", DType::fp32, 2), {"flash_attention_backward"});
}

}  // namespace
}  // namespace attnprof
