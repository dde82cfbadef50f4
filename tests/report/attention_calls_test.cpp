// The attention finder on small hand-built traces: each rule where it must find a call, and the
// near misses where it must not (a softmax that is not attention, a matmul chain without one).
// The recorded whole-model traces are checked by attention_calls_check.py.
#include <gtest/gtest.h>

#include "report/attention_calls.h"
#include "report/steps.h"
#include "report/timeline.h"

namespace attnprof::report {
namespace {

using trace::Category;

// An event of pid 1 on `tid` from `ts` lasting `dur`, with correlation id `corr` (−1: none).
trace::Event at(Category c, std::string name, std::int64_t ts, std::int64_t dur, std::int64_t corr,
                std::string tid = "1") {
  trace::Event e;
  e.category = c;
  e.name = std::move(name);
  e.pid = "1";
  e.tid = std::move(tid);
  e.ts_ns = ts;
  e.dur_ns = dur;
  e.correlation = corr;
  return e;
}

// A thread's ops and launches, each placed after the previous one (or inside the open one).
class TraceBuilder {
 public:
  // An op from `ts` lasting `dur`, with recorded inputs when `dims` is not empty.
  TraceBuilder& op(std::string name, std::int64_t ts, std::int64_t dur, std::string dims = "",
                   std::string types = "", std::string concrete = "", std::string tid = "1") {
    trace::Event e = event(Category::cpu_op, std::move(name), ts, dur, std::move(tid));
    e.input_dims = std::move(dims);
    e.input_types = std::move(types);
    if (!concrete.empty()) e.other_args.push_back({"Concrete Inputs", std::move(concrete)});
    t_.events.push_back(std::move(e));
    return *this;
  }
  // A launch at `ts` on `tid` and the kernel it started, lasting `kernel_dur` on the device.
  TraceBuilder& launch(std::int64_t ts, std::int64_t kernel_dur, std::string kernel = "k", std::string tid = "1") {
    trace::Event l = event(Category::cuda_runtime, "cudaLaunchKernel", ts, 1, std::move(tid));
    l.correlation = ++correlation_;
    trace::Event k = event(Category::kernel, std::move(kernel), 100000 + ts, kernel_dur, "7");
    k.correlation = correlation_;
    t_.events.push_back(std::move(l));
    t_.events.push_back(std::move(k));
    return *this;
  }
  TraceBuilder& step(std::string name, std::int64_t ts, std::int64_t dur) {
    t_.events.push_back(event(Category::user_annotation, std::move(name), ts, dur, "1"));
    return *this;
  }
  AttentionSummary find() const { return find_attention(Timeline::of(t_)); }

 private:
  static trace::Event event(Category c, std::string name, std::int64_t ts, std::int64_t dur, std::string tid) {
    return at(c, std::move(name), ts, dur, -1, std::move(tid));
  }
  trace::Trace t_;
  std::int64_t correlation_ = 0;
};

const char* kBf16x3 = R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])";

TEST(AttentionCalls, SdpaNamesItsBackendShapeDtypeAndCausalFromTheRecordedArguments) {
  TraceBuilder b;
  b.op("aten::scaled_dot_product_attention", 0, 100, "[[2, 8, 128, 64], [2, 2, 256, 64], [2, 2, 256, 64]]", kBf16x3,
       R"(["", "", "", "", "0.", "True", "", "True"])")
      .op("aten::_scaled_dot_product_flash_attention", 10, 80, "[[2, 8, 128, 64], [2, 2, 256, 64], [2, 2, 256, 64]]",
          kBf16x3, R"(["", "", "", "0.", "True", "False", ""])")
      .launch(20, 500, "flash_fwd_kernel")
      .launch(30, 7, "memset_kernel");
  auto s = b.find();
  ASSERT_EQ(s.calls.size(), 1u);
  const AttentionCall& c = s.calls[0];
  EXPECT_EQ(c.pass, AttentionPass::forward);
  EXPECT_EQ(c.implementation, "flash");
  EXPECT_EQ(c.op, "aten::scaled_dot_product_attention");
  EXPECT_EQ(*c.shape.batch, 2);
  EXPECT_EQ(*c.shape.heads, 8);
  EXPECT_EQ(*c.shape.kv_heads, 2);
  EXPECT_EQ(*c.shape.seq_q, 128);
  EXPECT_EQ(*c.shape.seq_k, 256);
  EXPECT_EQ(*c.shape.head_dim, 64);
  EXPECT_EQ(c.dtype, "bf16");
  ASSERT_TRUE(c.causal.has_value());
  EXPECT_TRUE(*c.causal);
  EXPECT_EQ(c.kernels, 2);
  // The memset [100030, 100037) runs inside the flash kernel [100020, 100520): counted once.
  EXPECT_EQ(c.device_time_ns, 500);
  EXPECT_EQ(c.kernel_names, (std::vector<std::string>{"flash_fwd_kernel", "memset_kernel"}));
}

TEST(AttentionCalls, AnExplicitMaskLeavesCausalUnknown) {
  TraceBuilder b;
  b.op("aten::scaled_dot_product_attention", 0, 100, "[[1, 1, 4, 8], [1, 1, 4, 8], [1, 1, 4, 8], [4, 4]]",
       kBf16x3, R"(["", "", "", "", "0.", "False", "", "False"])")
      .op("aten::_scaled_dot_product_efficient_attention", 10, 80,
          "[[1, 1, 4, 8], [1, 1, 4, 8], [1, 1, 4, 8], [4, 4], []]", kBf16x3,
          R"(["", "", "", "", "False", "0.", "False", ""])");
  auto s = b.find();
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].implementation, "efficient");
  EXPECT_FALSE(s.calls[0].causal.has_value());
}

TEST(AttentionCalls, BackwardNodeIsOneCallWithTheShapesOfItsBackwardOp) {
  TraceBuilder b;
  b.op("autograd::engine::evaluate_function: ScaledDotProductCudnnAttentionBackward0", 0, 100, "", "", "", "2")
      .op("ScaledDotProductCudnnAttentionBackward0", 5, 90, "[[8, 4, 256, 64]]", R"(["c10::BFloat16"])", "", "2")
      .op("aten::_scaled_dot_product_cudnn_attention_backward", 10, 80,
          "[[8, 4, 256, 64], [8, 4, 256, 32], [8, 4, 512, 32], [8, 4, 512, 64]]", kBf16x3,
          R"(["", "", "", "", "", "", "", "", "", "", "", "256", "256", "0.", "True", ""])", "2")
      .launch(20, 300, "bprop", "2");
  auto s = b.find();
  ASSERT_EQ(s.calls.size(), 1u);
  const AttentionCall& c = s.calls[0];
  EXPECT_EQ(c.pass, AttentionPass::backward);
  EXPECT_EQ(c.implementation, "cudnn");
  EXPECT_EQ(*c.shape.seq_q, 256);  // q is the backward op's second input, after grad_out
  EXPECT_EQ(*c.shape.seq_k, 512);
  EXPECT_EQ(*c.shape.head_dim, 32);
  EXPECT_TRUE(c.causal.value_or(false));
  EXPECT_EQ(c.device_time_ns, 300);
}

TEST(AttentionCalls, ComposedForwardSpansFromQkMatmulToPvMatmul) {
  TraceBuilder b;
  b.op("aten::linear", 0, 10, "[[2, 16, 32], [32, 32]]")
      .launch(1, 1000, "linear_gemm")
      .op("aten::matmul", 20, 10, "[[2, 4, 16, 8], [2, 4, 8, 16]]", R"(["float", "float"])")
      .launch(21, 40, "qk_gemm")
      .op("aten::mul", 31, 5, "[[2, 4, 16, 16], []]")
      .launch(32, 10)
      .op("aten::masked_fill", 37, 5, "[[2, 4, 16, 16], [16, 16], []]")
      .launch(38, 10)
      .op("aten::softmax", 43, 5, "[[2, 4, 16, 16], [], []]")
      .launch(44, 20, "softmax")
      .op("aten::matmul", 49, 10, "[[2, 4, 16, 16], [2, 4, 16, 8]]")
      .launch(50, 30, "pv_gemm")
      .op("aten::linear", 60, 10, "[[2, 16, 32], [32, 32]]")
      .launch(61, 1000, "linear_gemm");
  auto s = b.find();
  ASSERT_EQ(s.calls.size(), 1u);
  const AttentionCall& c = s.calls[0];
  EXPECT_EQ(c.implementation, "composed");
  EXPECT_EQ(c.kernels, 5);
  // Kernels start 100000 ns after their launch: qk [100021, 100061) holds mul [100032, 100042) and
  // masked_fill [100038, 100048); softmax [100044, 100064) and pv [100050, 100080) extend it to
  // 100080. The linears' kernels are outside the call.
  EXPECT_EQ(c.device_time_ns, 100080 - 100021);
  EXPECT_EQ(*c.shape.seq_k, 16);
  EXPECT_EQ(*c.shape.head_dim, 8);
  EXPECT_EQ(c.dtype, "fp32");
  EXPECT_FALSE(c.causal.has_value());
}

TEST(AttentionCalls, SoftmaxThatIsNotAttentionIsNotACall) {
  TraceBuilder b;
  // A routing softmax after a linear layer, a loss's log_softmax, and a matmul → softmax whose
  // shape is not the scores of that matmul: none is attention.
  b.op("aten::linear", 0, 10, "[[64, 128], [8, 128]]")
      .op("aten::softmax", 11, 5, "[[64, 8], [], []]")
      .op("aten::log_softmax", 20, 5, "[[64, 1000], [], []]")
      .op("aten::matmul", 30, 5, "[[2, 4, 16, 8], [2, 4, 8, 16]]")
      .op("aten::softmax", 40, 5, "[[2, 4, 16, 32], [], []]")
      .op("aten::matmul", 50, 5, "[[2, 4, 16, 32], [2, 4, 32, 8]]")
      .op("aten::matmul", 60, 5, "[[2, 4, 16, 8], [2, 4, 8, 16]]")
      .op("aten::relu", 66, 5, "[[2, 4, 16, 16]]")
      .op("aten::softmax", 72, 5, "[[2, 4, 16, 16], [], []]")
      .op("aten::matmul", 80, 5, "[[2, 4, 16, 16], [2, 4, 16, 8]]");
  EXPECT_TRUE(b.find().calls.empty());
}

TEST(AttentionCalls, ComposedBackwardRunsFromBmmBackwardThroughSoftmaxBackward) {
  TraceBuilder b;
  auto node = [&](const std::string& n, std::int64_t ts, const std::string& dims) -> TraceBuilder& {
    return b.op("autograd::engine::evaluate_function: " + n, ts, 8, "", "", "", "2")
        .op(n, ts + 1, 6, dims, R"(["c10::Half"])", "", "2");
  };
  node("BmmBackward0", 0, "[[8, 16, 8]]").launch(2, 10, "k", "2");
  node("ExpandBackward0", 10, "[[2, 4, 16, 16]]");
  node("SoftmaxBackward0", 20, "[[2, 4, 16, 16]]").launch(22, 5, "k", "2");
  node("MaskedFillBackward0", 30, "[[2, 4, 16, 16]]").launch(32, 3, "k", "2");
  node("MulBackward0", 40, "[[2, 4, 16, 16]]").launch(42, 2, "k", "2");
  node("BmmBackward0", 50, "[[8, 16, 16]]").launch(52, 10, "k", "2");
  node("AddmmBackward0", 60, "[[32, 32]]").launch(62, 100, "k", "2");
  auto s = b.find();
  ASSERT_EQ(s.calls.size(), 1u);
  const AttentionCall& c = s.calls[0];
  EXPECT_EQ(c.pass, AttentionPass::backward);
  EXPECT_EQ(c.implementation, "composed");
  EXPECT_EQ(c.device_time_ns, 10 + 5 + 3 + 2 + 10);  // disjoint: the union is the sum
  EXPECT_EQ(*c.shape.batch, 2);
  EXPECT_EQ(*c.shape.heads, 4);
  EXPECT_EQ(*c.shape.head_dim, 8);
  EXPECT_EQ(c.dtype, "fp16");
}

TEST(AttentionCalls, LibraryOpsAndFlexKernelsNameTheirImplementationAndPass) {
  TraceBuilder b;
  b.op("flash_attn::_flash_attn_forward", 0, 10, "[[1, 64, 8, 128], [1, 64, 8, 128], [1, 64, 8, 128]]")
      .op("xformers::efficient_attention_backward_cutlass", 20, 10)
      .op("triton_per_fused_flex_attention_backward_0", 40, 5)
      .op("triton_tem_fused_flex_attention_backward_1", 46, 5);
  auto s = b.find();
  ASSERT_EQ(s.calls.size(), 3u);
  EXPECT_EQ(s.calls[0].implementation, "flash_attn");
  EXPECT_EQ(s.calls[0].pass, AttentionPass::forward);
  EXPECT_EQ(s.calls[1].implementation, "xformers");
  EXPECT_EQ(s.calls[1].pass, AttentionPass::backward);
  EXPECT_EQ(s.calls[2].implementation, "flex");  // the two flex backward ops are one call
  EXPECT_EQ(s.calls[2].end_ns, 51);
}

TEST(AttentionCalls, StepsSumTheirCallsAndShare) {
  TraceBuilder b;
  b.step("ProfilerStep#1", 0, 100)
      .op("aten::scaled_dot_product_attention", 10, 20)
      .launch(11, 30)
      .op("aten::linear", 40, 10)
      .launch(41, 90)
      .step("ProfilerStep#2", 200, 100)
      .op("aten::linear", 210, 10)
      .launch(211, 50);
  auto s = b.find();
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].device_time_ns, 120);
  EXPECT_EQ(s.steps[0].attention_device_time_ns, 30);
  EXPECT_EQ(s.steps[0].forward_calls, 1);
  EXPECT_DOUBLE_EQ(s.steps[0].share(), 0.25);
  EXPECT_EQ(s.steps[1].attention_device_time_ns, 0);
  EXPECT_EQ(s.calls[0].step, 0);
}

// One step: an SDPA call whose two kernels run [1000, 1400) and, from `second`, 130 ns; then a
// linear whose kernel runs [1700, 1800).
trace::Trace step_with_attention(std::int64_t second) {
  trace::Trace t;
  t.events = {at(Category::user_annotation, "ProfilerStep#1", 0, 300, -1),
              at(Category::cpu_op, "aten::scaled_dot_product_attention", 10, 100, -1),
              at(Category::cuda_runtime, "cudaLaunchKernel", 20, 5, 1),
              at(Category::kernel, "flash_bwd_dq_dk_dv", 1000, 400, 1, "7"),
              at(Category::cuda_runtime, "cudaLaunchKernelExC", 30, 5, 2),
              at(Category::kernel, "flash_bwd_convert_dq", second, 130, 2, "7"),
              at(Category::cpu_op, "aten::linear", 150, 20, -1),
              at(Category::cuda_runtime, "cudaLaunchKernel", 160, 5, 3),
              at(Category::kernel, "gemm", 1700, 100, 3, "7")};
  return t;
}

TEST(AttentionCalls, OverlappingKernelsOfACallCountTheirSharedTimeOnce) {
  // The second kernel starts at 1370, 30 ns before the first ends (programmatic dependent launch):
  // the call's GPU time is the union [1000, 1500) = 500 ns, not 400 + 130 = 530; the step's is
  // 500 + the gemm's 100 = 600, and the share 500 / 600.
  const AttentionSummary s = find_attention(Timeline::of(step_with_attention(1370)));
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].kernels, 2);
  EXPECT_EQ(s.calls[0].device_time_ns, 500);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].attention_device_time_ns, 500);
  EXPECT_EQ(s.steps[0].forward_device_time_ns, 500);
  EXPECT_EQ(s.steps[0].device_time_ns, 600);
  EXPECT_DOUBLE_EQ(s.steps[0].share(), 500.0 / 600.0);
  EXPECT_EQ(s.attention_device_time_ns, 500);
}

TEST(AttentionCalls, DisjointKernelsOfACallGiveTheSum) {
  // The second kernel at [1450, 1580): the union is the sum, 530; the step's 530 + 100.
  const AttentionSummary s = find_attention(Timeline::of(step_with_attention(1450)));
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].device_time_ns, 530);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].attention_device_time_ns, 530);
  EXPECT_EQ(s.steps[0].device_time_ns, 630);
}

TEST(AttentionCalls, TwoCallsWhoseWorkOverlapsShareTheStepOnce) {
  // Two SDPA calls; the second's kernel [1300, 1500) starts inside the first's [1000, 1400).
  // Each call has its own 400 and 200 ns; together they cover [1000, 1500) = 500 ns, which is
  // also the step's whole GPU time: the share is 1, not (400 + 200) / 500.
  trace::Trace t;
  t.events = {at(Category::user_annotation, "ProfilerStep#1", 0, 300, -1),
              at(Category::cpu_op, "aten::scaled_dot_product_attention", 10, 50, -1),
              at(Category::cuda_runtime, "cudaLaunchKernel", 20, 5, 1),
              at(Category::kernel, "attn", 1000, 400, 1, "7"),
              at(Category::cpu_op, "aten::scaled_dot_product_attention", 100, 50, -1),
              at(Category::cuda_runtime, "cudaLaunchKernel", 110, 5, 2),
              at(Category::kernel, "attn", 1300, 200, 2, "8")};
  const AttentionSummary s = find_attention(Timeline::of(t));
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[0].device_time_ns, 400);
  EXPECT_EQ(s.calls[1].device_time_ns, 200);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].forward_calls, 2);
  EXPECT_EQ(s.steps[0].attention_device_time_ns, 500);
  EXPECT_EQ(s.steps[0].device_time_ns, 500);
  EXPECT_DOUBLE_EQ(s.steps[0].share(), 1.0);
}

TEST(AttentionCalls, ACallLaunchingAfterItsStepEndsStaysInsideTheStepsTime) {
  // The step's range [0, 300) launches a gemm [600, 700) at 100; an SDPA call that starts at 250,
  // inside it, launches its kernel [1000, 1400) at 350, after the step's range has ended. The steps
  // table counts only the gemm (100 ns); the attention step adds its call's work: [600, 700) ∪
  // [1000, 1400) = 500 ns, so the share is 400 / 500, not 400 / 100.
  trace::Trace t;
  t.events = {at(Category::user_annotation, "ProfilerStep#1", 0, 300, -1),
              at(Category::cpu_op, "aten::linear", 90, 20, -1),
              at(Category::cuda_runtime, "cudaLaunchKernel", 100, 5, 1),
              at(Category::kernel, "gemm", 600, 100, 1, "7"),
              at(Category::cpu_op, "aten::scaled_dot_product_attention", 250, 150, -1),
              at(Category::cuda_runtime, "cudaLaunchKernel", 350, 5, 2),
              at(Category::kernel, "attn", 1000, 400, 2, "7")};
  const Timeline timeline = Timeline::of(t);
  const std::vector<StepSummary> steps = summarize_steps(timeline);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].device_time_ns, 100);
  const AttentionSummary s = find_attention(timeline);
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].step, 0);
  EXPECT_EQ(s.calls[0].device_time_ns, 400);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].attention_device_time_ns, 400);
  EXPECT_EQ(s.steps[0].device_time_ns, 500);
  EXPECT_DOUBLE_EQ(s.steps[0].share(), 0.8);
}

}  // namespace
}  // namespace attnprof::report
