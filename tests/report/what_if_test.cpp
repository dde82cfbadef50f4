// The what-if arithmetic on hand-made attention summaries: which times a step and a call count
// with (GPU time on a GPU trace, host wall time on a CPU one), the distinct shapes, what cannot
// run, and each projected step worked out by hand.
#include <gtest/gtest.h>

#include "report/what_if.h"

namespace attnprof::report {
namespace {

AttentionCall call(AttentionPass pass, long step, std::int64_t start, std::int64_t end, std::int64_t device_ns,
                   std::int64_t seq_k = 256, std::optional<bool> causal = true) {
  AttentionCall c;
  c.pass = pass;
  c.implementation = "cudnn";
  c.step = step;
  c.start_ns = start;
  c.end_ns = end;
  c.device_time_ns = device_ns;
  c.shape = {8, 4, 4, 256, seq_k, 64};
  c.dtype = "bf16";
  c.causal = causal;
  return c;
}

// Two steps: GPU time 1000 and 1200 ns, wall time 5000 and 6000 ns.
struct Fixture {
  AttentionSummary summary;
  std::vector<StepSummary> steps;
  Fixture() {
    for (int i = 0; i < 2; ++i) {
      AttentionStep st;
      st.name = "ProfilerStep#" + std::to_string(i + 1);
      st.device_time_ns = 1000 + 200 * i;
      summary.steps.push_back(st);
      StepSummary s;
      s.name = st.name;
      s.cpu_time_ns = 5000 + 1000 * i;
      steps.push_back(s);
    }
  }
};

TEST(WhatIf, GpuStepsAndCallsUseGpuTimeAndGroupCallsByShape) {
  Fixture f;
  f.summary.calls = {call(AttentionPass::forward, 0, 0, 50, 100), call(AttentionPass::forward, 0, 60, 90, 110, 128),
                     call(AttentionPass::backward, 0, 100, 200, 300), call(AttentionPass::forward, 1, 0, 50, 120),
                     call(AttentionPass::forward, -1, 0, 50, 999)};  // outside every step: left out
  // The steps' unions of their calls' work, as find_attention sets them: these calls do not overlap.
  f.summary.steps[0].forward_device_time_ns = 100 + 110;
  f.summary.steps[0].backward_device_time_ns = 300;
  f.summary.steps[1].forward_device_time_ns = 120;
  WhatIf w = plan_what_if(f.summary, f.steps, Device::cuda);
  ASSERT_TRUE(w.why_not.empty()) << w.why_not;
  ASSERT_EQ(w.shapes.size(), 2u);
  EXPECT_EQ(w.shapes[0].label, "8x4x256x64 bf16 causal");
  EXPECT_EQ(w.shapes[0].calls, 2);
  EXPECT_EQ(w.shapes[1].spec.seq_k, 128);
  EXPECT_EQ(w.shapes[1].spec.device, Device::cuda);
  EXPECT_EQ(w.forward_label, "cuDNN forward attention");
  ASSERT_EQ(w.steps.size(), 2u);
  EXPECT_EQ(w.steps[0].step_ns, 1000);
  EXPECT_EQ(w.steps[0].forward_ns, 210);
  EXPECT_EQ(w.steps[0].backward_ns, 300);
  EXPECT_EQ(w.steps[0].forward_shapes, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(w.steps[1].forward_ns, 120);
  // Backward kept: 300 ns over 2 steps.
  EXPECT_NE(w.assumptions.back().find("backward attention (150 ns per step) is kept as measured"), std::string::npos);

  // A variant at 40 ns (min 30, max 50) at the first shape and 20 ns (15..25) at the second.
  w.variants = {"flash"};
  w.measures = {{{TimeStats{10, 40, 30, 50, 31, 49}, ""}}, {{TimeStats{10, 20, 15, 25, 16, 24}, ""}}};
  auto p = project_what_if(w);
  ASSERT_EQ(p.size(), 1u);
  ASSERT_TRUE(p[0].not_projected.empty());
  EXPECT_DOUBLE_EQ(p[0].steps[0].projected_ns, 1000 - 210 + 40 + 20);  // 850
  EXPECT_DOUBLE_EQ(p[0].steps[1].projected_ns, 1200 - 120 + 40);       // 1120
  EXPECT_DOUBLE_EQ(p[0].projected_ns, (850 + 1120) / 2.0);
  EXPECT_DOUBLE_EQ(p[0].projected_min_ns, ((1000 - 210 + 30 + 15) + (1200 - 120 + 30)) / 2.0);
  EXPECT_DOUBLE_EQ(p[0].projected_max_ns, ((1000 - 210 + 50 + 25) + (1200 - 120 + 50)) / 2.0);
  EXPECT_DOUBLE_EQ(p[0].replaced_ns, (210 + 120) / 2.0);
  EXPECT_DOUBLE_EQ(p[0].variant_ns, (60 + 40) / 2.0);

  // Refused at the second shape: not projected, with the reason.
  w.measures[1][0] = {TimeStats{}, "needs about 9 GiB"};
  p = project_what_if(w);
  EXPECT_EQ(p[0].not_projected, "refused 8x4x256x64 seq-k 128 bf16 causal: needs about 9 GiB");
  EXPECT_TRUE(p[0].steps.empty());
}

// Two forward calls of 100 and 110 ns whose work overlaps by 20 ns: the step's GPU time holds their
// union once, so the part replaced is the union, 190 ns, not the sum.
TEST(WhatIf, GpuStepReplacesTheUnionOfItsForwardCallsWork) {
  Fixture f;
  f.summary.calls = {call(AttentionPass::forward, 0, 0, 50, 100), call(AttentionPass::forward, 0, 60, 90, 110)};
  f.summary.steps[0].forward_device_time_ns = 190;
  f.summary.calls.push_back(call(AttentionPass::forward, 1, 0, 50, 120));
  f.summary.steps[1].forward_device_time_ns = 120;
  WhatIf w = plan_what_if(f.summary, f.steps, Device::cuda);
  ASSERT_TRUE(w.why_not.empty()) << w.why_not;
  EXPECT_EQ(w.steps[0].forward_ns, 190);
  w.variants = {"flash"};
  w.measures = {{{TimeStats{10, 40, 30, 50, 31, 49}, ""}}};
  auto p = project_what_if(w);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_DOUBLE_EQ(p[0].steps[0].projected_ns, 1000 - 190 + 40 + 40);  // two calls at the one shape
}

TEST(WhatIf, CpuStepsAndCallsUseHostWallTime) {
  Fixture f;
  f.summary.calls = {call(AttentionPass::forward, 0, 100, 400, 0), call(AttentionPass::forward, 1, 100, 600, 0)};
  WhatIf w = plan_what_if(f.summary, f.steps, Device::cpu);
  ASSERT_TRUE(w.why_not.empty());
  EXPECT_EQ(w.steps[0].step_ns, 5000);
  EXPECT_EQ(w.steps[0].forward_ns, 300);
  EXPECT_EQ(w.steps[1].step_ns, 6000);
  EXPECT_EQ(w.steps[1].forward_ns, 500);
  EXPECT_EQ(w.shapes[0].spec.device, Device::cpu);
  EXPECT_NE(w.assumptions.front().find("host wall time"), std::string::npos);
  for (const std::string& a : w.assumptions) EXPECT_EQ(a.find("backward"), std::string::npos) << a;
}

TEST(WhatIf, UnknownCausalRunsNonCausalAndMissingShapesDoNotRun) {
  Fixture f;
  AttentionCall composed = call(AttentionPass::forward, 0, 0, 50, 100, 256, std::nullopt);
  composed.implementation = "composed";
  AttentionCall flat = call(AttentionPass::forward, 0, 60, 90, 100);
  flat.shape.batch.reset();  // 3-D inputs: [B·H, S, D]
  flat.shape.heads.reset();
  flat.shape.kv_heads.reset();
  AttentionCall untyped = call(AttentionPass::forward, 1, 0, 50, 100, 64);
  untyped.dtype.clear();
  f.summary.calls = {composed, flat, untyped};
  WhatIf w = plan_what_if(f.summary, f.steps, Device::cuda);
  ASSERT_EQ(w.shapes.size(), 3u);
  EXPECT_FALSE(w.shapes[0].spec.causal);
  EXPECT_TRUE(w.shapes[0].causal_assumed);
  EXPECT_EQ(w.shapes[1].not_runnable, "batch and heads not recorded (3-D inputs)");
  EXPECT_EQ(w.shapes[2].not_runnable, "dtype not recorded");
  EXPECT_EQ(w.runnable_shapes(), 1u);
  EXPECT_EQ(w.forward_label, "forward attention");  // composed and cuDNN
  EXPECT_NE(w.assumptions.back().find("causal not recorded at 1 shape: run non-causal"), std::string::npos);
  w.variants = {"flash"};
  w.measures.assign(3, {WhatIfMeasure{TimeStats{10, 40, 30, 50, 31, 49}, ""}});
  EXPECT_EQ(project_what_if(w)[0].not_projected, "?x?/?x256x256x64 bf16: batch and heads not recorded (3-D inputs)");
}

TEST(WhatIf, NothingToReplaceSaysWhyNot) {
  Fixture f;
  EXPECT_EQ(plan_what_if(f.summary, f.steps, Device::cuda).why_not,
            "what-if: no forward attention call inside a ProfilerStep#N range to replace");
  f.summary.calls = {call(AttentionPass::backward, 0, 0, 50, 100)};
  EXPECT_FALSE(plan_what_if(f.summary, f.steps, Device::cuda).why_not.empty());
  EXPECT_EQ(plan_what_if(AttentionSummary{}, {}, Device::cuda).why_not,
            "what-if needs ProfilerStep#N ranges to project a step's time; this trace has none");
}

}  // namespace
}  // namespace attnprof::report
