#include "cuda/cupti_collector.h"

#include <attnprof/error.h>
#include <attnprof/profiler.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/event_pairs.h"

namespace attnprof::cuda {

CuptiCollector::CuptiCollector(CollectorSeams seams) : seams_(std::move(seams)) {
  if (!seams_.api || !seams_.synchronize || !seams_.host_clock) throw Error("CuptiCollector: missing seams");
}

void CuptiCollector::start() {
  report_ = AssemblyReport{};
  fallback_reason_ = seams_.api->start();
  if (fallback_reason_) {
    std::fprintf(stderr, "attnprof: %s; device times come from CUDA events around the capture (no kernels, "
                         "flows or occupancy in the trace)\n", fallback_reason_->c_str());
    if (!seams_.fallback) throw Error(fmt::format("{}; and no CUDA-event fallback is available", *fallback_reason_));
    fallback_start_ns_ = seams_.host_clock();
    seams_.fallback->start();
    return;
  }
  clock_ = ClockMap{};
  clock_.set_start(sample_clocks(seams_.host_clock, [this] { return seams_.api->timestamp_ns(); }));
}

void CuptiCollector::stop() {
  seams_.synchronize();
  if (fallback_reason_) {
    seams_.fallback->stop();
    return;
  }
  clock_.set_end(sample_clocks(seams_.host_clock, [this] { return seams_.api->timestamp_ns(); }));
  seams_.api->stop();
}

void CuptiCollector::collect(trace::Trace& trace) {
  auto known = std::find_if(trace.devices.begin(), trace.devices.end(),
                            [&](const trace::DeviceProperties& d) { return d.id == seams_.device.id; });
  if (known == trace.devices.end()) trace.devices.push_back(seams_.device);
  if (fallback_reason_) {
    trace::Event e;
    e.category = trace::Category::gpu_user_annotation;
    e.name = "device time by CUDA events (CUPTI unavailable)";
    e.ts_ns = fallback_start_ns_;
    e.dur_ns = seams_.fallback->elapsed_ns();
    e.pid = std::to_string(seams_.device.id);
    e.tid = "0";
    e.device = seams_.device.id;
    e.other_args.push_back({"timing", "\"CUDA events around the whole capture (fallback)\""});
    std::string reason = *fallback_reason_;
    std::replace(reason.begin(), reason.end(), '"', '\'');
    e.other_args.push_back({"reason", fmt::format("\"{}\"", reason)});
    trace.events.push_back(std::move(e));
    return;
  }
  ActivityBatch batch = seams_.api->take();
  report_ = assemble_activity(trace, batch, clock_, seams_.device);
}

namespace {

class EventTimer final : public FallbackTimer {
 public:
  void start() override { events_.record_begin(0, backend_stream()); }
  void stop() override {
    events_.record_end(0, backend_stream());
    events_.wait_end(0);
  }
  std::int64_t elapsed_ns() override { return static_cast<std::int64_t>(events_.elapsed_ms(0) * 1e6); }

 private:
  EventPairs events_{1};
};

}  // namespace

std::unique_ptr<FallbackTimer> make_event_timer() { return std::make_unique<EventTimer>(); }

trace::DeviceProperties current_device_properties() {
  int id = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&id));
  cudaDeviceProp p{};
  ATTNPROF_CUDA_CHECK(cudaGetDeviceProperties(&p, id));
  trace::DeviceProperties d;
  d.id = id;
  d.name = p.name;
  d.total_global_mem = static_cast<std::int64_t>(p.totalGlobalMem);
  d.compute_major = p.major;
  d.compute_minor = p.minor;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.regs_per_block = p.regsPerBlock;
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.warp_size = p.warpSize;
  d.shared_per_block = static_cast<std::int64_t>(p.sharedMemPerBlock);
  d.shared_per_block_optin = static_cast<std::int64_t>(p.sharedMemPerBlockOptin);
  d.shared_per_sm = static_cast<std::int64_t>(p.sharedMemPerMultiprocessor);
  d.num_sms = p.multiProcessorCount;
  d.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  return d;
}

std::unique_ptr<profiler::DeviceActivitySource> make_cupti_activity_source() {
  cuda_backend();  // throws UsageError without a GPU
  CollectorSeams seams;
  seams.api = make_real_cupti_api();
  seams.fallback = make_event_timer();
  seams.device = current_device_properties();
  seams.synchronize = [] { ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(backend_stream())); ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize()); };
  seams.host_clock = [] { return profiler::now_ns(); };
  return std::make_unique<CuptiCollector>(std::move(seams));
}

}  // namespace attnprof::cuda
