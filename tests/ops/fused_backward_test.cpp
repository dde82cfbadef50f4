// ops::flash_attention_backward and ops::efficient_attention_backward on the CPU: gradients
// within 1e-5 of the fp64 reference, PyTorch's op names around one CPU kernel each, and
// fused_backward_workspace_bytes equal to the memory the backward really takes.
#include <attnprof/attention.h>
#include <attnprof/memory.h>
#include <attnprof/profiler.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/ops.h"
#include "variants/reference_backward.h"

namespace attnprof::ops {
namespace {

using trace::Category;

struct Problem {
  AttentionSpec spec{.batch = 1, .heads = 4, .kv_heads = 2, .seq_q = 70, .seq_k = 90, .head_dim = 40,
                     .dtype = DType::fp32, .causal = true, .causal_align = CausalAlign::bottom_right,
                     .layout = Layout::bshd, .device = Device::cpu};
  AttentionInputs in = make_inputs(spec, 2);
  Tensor dout = make_output(spec), out = make_output(spec);
  Tensor lse = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cpu);
  Tensor dq = make_output(spec);
  Tensor dk = Tensor::empty({spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim}, DType::fp32, Device::cpu);
  Tensor dv = Tensor::empty({spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim}, DType::fp32, Device::cpu);
  explicit Problem(bool flash) {
    fill_normal(dout, 8);
    if (flash) flash_attention_out(spec, out, in.q, in.k, in.v, &lse);
    else efficient_attention_out(spec, out, in.q, in.k, in.v, &lse);
  }
  void backward(bool flash) {
    if (flash) flash_attention_backward(spec, in.q, in.k, in.v, out, lse, dout, dq, dk, dv);
    else efficient_attention_backward(spec, in.q, in.k, in.v, out, lse, dout, dq, dk, dv);
  }
};

// The names of the events of one traced backward, outermost first, each with its category.
std::vector<std::string> traced_names(Problem& p, bool flash) {
  profiler::Options options;
  options.schedule = profiler::Schedule{0, 0, 1, 1};
  profiler::Profiler prof(options);
  prof.start();
  p.backward(flash);
  prof.step();
  prof.stop();
  std::vector<std::string> names;
  for (const auto& e : prof.take_trace().events) {
    if (e.category == Category::cpu_op) names.push_back("op " + e.name);
    if (e.category == Category::cpu_kernel) names.push_back("kernel " + e.name.substr(0, e.name.rfind('_')));
  }
  return names;
}

TEST(FusedBackward, FlashMatchesTheFp64GradientsUnderPytorchsCpuOpName) {
  Problem p(true);
  EXPECT_EQ(traced_names(p, true),
            (std::vector<std::string>{"op aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                                      "kernel cpu::flash_attention_backward_fp32"}));
  const auto err = variants::check_gradients(p.spec, p.in.q, p.in.k, p.in.v, p.dout, p.dq, p.dk, p.dv);
  EXPECT_LE(err.worst(), 1e-5) << "dq " << err.dq << ", dk " << err.dk << ", dv " << err.dv;
}

TEST(FusedBackward, EfficientMatchesTheFp64GradientsUnderPytorchsOpNames) {
  Problem p(false);
  EXPECT_EQ(traced_names(p, false),
            (std::vector<std::string>{"op aten::_scaled_dot_product_efficient_attention_backward",
                                      "op aten::_efficient_attention_backward",
                                      "kernel cpu::efficient_attention_backward_fp32"}));
  const auto err = variants::check_gradients(p.spec, p.in.q, p.in.k, p.in.v, p.dout, p.dq, p.dk, p.dv);
  EXPECT_LE(err.worst(), 1e-5) << "dq " << err.dq << ", dk " << err.dk << ", dv " << err.dv;
}

TEST(FusedBackward, WorkspaceBytesAreWhatTheBackwardAllocates) {
  for (bool flash : {true, false}) {
    Problem p(flash);
    const std::int64_t before = memory::stats(Device::cpu).current_bytes;
    memory::reset_peak(Device::cpu);
    p.backward(flash);
    const std::int64_t extra = memory::stats(Device::cpu).peak_bytes - before;
    EXPECT_EQ(extra, fused_backward_workspace_bytes(p.spec, flash)) << (flash ? "flash" : "efficient");
    EXPECT_EQ(memory::stats(Device::cpu).current_bytes, before);
  }
}

// Without a backend for the device (no CUDA here) the estimate is the CUDA backend's
// FlashAttention-2 backward's: Δ, fp32 per query row (dQ has no fp32 accumulator there).
TEST(FusedBackward, WorkspaceBytesWithoutABackendAreTheGpuEstimate) {
  AttentionSpec spec{.batch = 2, .heads = 8, .kv_heads = 8, .seq_q = 1000, .seq_k = 1000, .head_dim = 64,
                     .dtype = DType::bf16, .causal = true, .device = Device::cuda};
  if (has_backend(Device::cuda)) GTEST_SKIP() << "this machine has a CUDA backend";
  EXPECT_EQ(fused_backward_workspace_bytes(spec, true), 2 * 8 * 1000 * 4);
}

}  // namespace
}  // namespace attnprof::ops
