// The real CUPTI collector on the GPU: N launches give N kernel records with flows and occupancy,
// cuBLASLt's launches included; a forced loss is an error.
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include "cuda/cupti_collector.h"
#include "cuda/gpu_test_util.h"

using namespace attnprof;
using namespace attnprof::cuda;
using namespace attnprof::cuda::gpu_testing;

namespace {

// Drops one kernel record between CUPTI and the assembler: a loss the collector must notice.
struct LosingOneRecord final : CuptiApi {
  std::unique_ptr<CuptiApi> inner;
  explicit LosingOneRecord(std::unique_ptr<CuptiApi> api) : inner(std::move(api)) {}
  std::optional<std::string> start() override { return inner->start(); }
  void stop() override { inner->stop(); }
  ActivityBatch take() override {
    ActivityBatch b = inner->take();
    if (!b.kernels.empty()) b.kernels.pop_back();
    return b;
  }
  std::int64_t timestamp_ns() override { return inner->timestamp_ns(); }
};

std::unique_ptr<CuptiCollector> collector(std::unique_ptr<CuptiApi> api) {
  CollectorSeams seams;
  seams.api = std::move(api);
  seams.fallback = make_event_timer();
  seams.device = current_device_properties();
  seams.synchronize = [] { gpu().synchronize(); };
  seams.host_clock = [] { return std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch()).count(); };
  return std::make_unique<CuptiCollector>(std::move(seams));
}

}  // namespace

TEST(CuptiOnGpu, NLaunchesGiveNKernelRecordsWithFlowsAndOccupancy) {
  ATTNPROF_REQUIRE_GPU();
  Tensor a = Tensor::empty({4, 4, 64, 64}, DType::bf16, Device::cuda);
  Tensor b = Tensor::empty({4, 4, 64, 64}, DType::bf16, Device::cuda);
  Tensor c = Tensor::empty({4, 4, 64, 64}, DType::bf16, Device::cuda);
  gpu().fill(a, 0.5);
  gpu().fill(b, 0.25);
  gpu().batched_gemm(c, a, b, true, 1.0f, true);  // warm: cuBLASLt loads its kernels outside the capture
  gpu().synchronize();
  auto source = collector(make_real_cupti_api());
  source->start();
  if (source->fallback_reason()) GTEST_SKIP() << "CUPTI unavailable here: " << *source->fallback_reason();
  constexpr int kFills = 20;
  for (int i = 0; i < kFills; ++i) gpu().fill(a, i);
  gpu().batched_gemm(c, a, b, true, 1.0f, true);  // cuBLASLt: launched through the driver (cuLaunchKernelEx)
  gpu().copy(b, a);                              // a DtoD memcpy, not a kernel
  source->stop();
  trace::Trace t;
  source->collect(t);
  const AssemblyReport& r = source->last_report();
  EXPECT_EQ(r.kernels, kFills + 1);
  EXPECT_EQ(r.launches_seen, kFills + 1);
  EXPECT_EQ(r.memcpys, 1);
  EXPECT_EQ(r.flows, kFills + 2);
  std::int64_t checked = 0;
  for (const auto& e : t.events) {
    if (e.category != trace::Category::kernel) continue;
    ASSERT_TRUE(e.launch.has_value());
    ASSERT_TRUE(e.launch->recorded_occupancy_pct.has_value());
    EXPECT_GT(*e.launch->recorded_occupancy_pct, 0.0) << e.name;
    EXPECT_GT(e.launch->registers_per_thread, 0) << e.name;
    ++checked;
  }
  EXPECT_EQ(checked, kFills + 1);
  bool driver_launch = false;
  for (const auto& e : t.events) driver_launch = driver_launch || (e.category == trace::Category::cuda_driver &&
                                                                    e.name.find("cuLaunchKernel") == 0);
  std::printf("kernels %lld, flows %lld, driver launch seen: %s\n", static_cast<long long>(r.kernels),
              static_cast<long long>(r.flows), driver_launch ? "yes" : "no");
}

TEST(CuptiOnGpu, ALostRecordIsAnError) {
  ATTNPROF_REQUIRE_GPU();
  Tensor a = Tensor::empty({1 << 16}, DType::fp32, Device::cuda);
  auto source = collector(std::make_unique<LosingOneRecord>(make_real_cupti_api()));
  source->start();
  if (source->fallback_reason()) GTEST_SKIP() << "CUPTI unavailable here: " << *source->fallback_reason();
  for (int i = 0; i < 5; ++i) gpu().fill(a, i);
  source->stop();
  trace::Trace t;
  try {
    source->collect(t);
    FAIL() << "a lost record was not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4 kernel records for 5 launches"), std::string::npos) << e.what();
  }
}

TEST(CuptiOnGpu, StarvedBuffersAreReportedAsDropped) {
  ATTNPROF_REQUIRE_GPU();
  Tensor a = Tensor::empty({1 << 16}, DType::fp32, Device::cuda);
  auto source = collector(make_real_cupti_api(RealCuptiOptions{true}));
  source->start();
  if (source->fallback_reason()) GTEST_SKIP() << "CUPTI unavailable here: " << *source->fallback_reason();
  for (int i = 0; i < 5; ++i) gpu().fill(a, i);
  source->stop();
  trace::Trace t;
  EXPECT_THROW(source->collect(t), Error);  // dropped records, or 0 kernel records for 5 launches
}
