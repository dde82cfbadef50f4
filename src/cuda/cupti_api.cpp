#include "cuda/cupti_api.h"

#include <attnprof/error.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <cxxabi.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "cuda/check.h"

namespace attnprof::cuda {
namespace {

// 8 MiB per buffer: ~50k kernel records; CUPTI asks again when one fills.
constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kBufferAlign = 8;

std::string demangle(const char* name) {
  if (name == nullptr) return "<unnamed kernel>";
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;
  std::string result(out);
  std::free(out);
  return result;
}

CopyKind copy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CopyKind::host_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CopyKind::device_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CopyKind::device_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::host_to_host;
    default: return CopyKind::other;
  }
}

// The launch APIs whose callbacks count launches. Only these callbacks are enabled: a whole
// domain would put every API call (cuDNN makes a dozen driver calls per execute) through CUPTI's
// callback path; the activity records of every call are collected either way.
constexpr std::array<CUpti_CallbackId, 7> kRuntimeLaunches{
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,         CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
constexpr std::array<CUpti_CallbackId, 6> kDriverLaunches{
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};

template <std::size_t N>
bool listed(const std::array<CUpti_CallbackId, N>& ids, CUpti_CallbackId cbid) {
  return std::find(ids.begin(), ids.end(), cbid) != ids.end();
}
bool is_runtime_launch(CUpti_CallbackId cbid) { return listed(kRuntimeLaunches, cbid); }
bool is_driver_launch(CUpti_CallbackId cbid) { return listed(kDriverLaunches, cbid); }

class RealCuptiApi;
std::atomic<RealCuptiApi*> g_active{nullptr};
// Depth of runtime launch calls on this thread: a driver launch made inside one is the same launch.
thread_local int t_runtime_launch_depth = 0;

class RealCuptiApi final : public CuptiApi {
 public:
  explicit RealCuptiApi(RealCuptiOptions options) : options_(options) {}
  ~RealCuptiApi() override {
    if (started_) {
      try {
        stop();
      } catch (...) {
      }
    }
  }

  std::optional<std::string> start() override {
    RealCuptiApi* expected = nullptr;
    if (!g_active.compare_exchange_strong(expected, this)) return std::string("another attnprof collector is active");
    CUptiResult status = cuptiSubscribe(&subscriber_, &RealCuptiApi::on_callback, this);
    if (status != CUPTI_SUCCESS) {
      g_active = nullptr;
      const char* text = nullptr;
      cuptiGetResultString(status, &text);
      if (status == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
        return fmt::format("CUPTI is taken by another tool (Nsight Systems, Nsight Compute or compute-sanitizer): {}",
                           text ? text : "");
      return fmt::format("CUPTI cannot be used: {}", text ? text : "unknown error");
    }
    subscribed_ = true;
    try {
      // Thread ids as gettid() reports them, the profiler's CPU lanes' ids.
      ATTNPROF_CUPTI_CHECK(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
      for (CUpti_CallbackId cbid : kRuntimeLaunches)
        ATTNPROF_CUPTI_CHECK(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, cbid));
      for (CUpti_CallbackId cbid : kDriverLaunches)
        ATTNPROF_CUPTI_CHECK(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
      ATTNPROF_CUPTI_CHECK(cuptiActivityRegisterCallbacks(&RealCuptiApi::on_buffer_requested,
                                                          &RealCuptiApi::on_buffer_completed));
      for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                      CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                                      CUPTI_ACTIVITY_KIND_DRIVER}) {
        ATTNPROF_CUPTI_CHECK(cuptiActivityEnable(kind));
      }
    } catch (const Error& e) {
      cuptiUnsubscribe(subscriber_);
      subscribed_ = false;
      g_active = nullptr;
      return std::string(e.what());
    }
    started_ = true;
    return std::nullopt;
  }

  void stop() override {
    if (!started_) return;
    started_ = false;
    // FlushAll calls on_buffer_completed on this thread: no lock of ours may be held here.
    ATTNPROF_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                    CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
      ATTNPROF_CUPTI_CHECK(cuptiActivityDisable(kind));
    }
    read_remaining_dropped();
    if (subscribed_) {
      ATTNPROF_CUPTI_CHECK(cuptiUnsubscribe(subscriber_));
      subscribed_ = false;
    }
    g_active = nullptr;
  }

  ActivityBatch take() override {
    std::lock_guard lock(mutex_);
    ActivityBatch out = std::move(batch_);
    batch_ = ActivityBatch{};
    out.launches_seen = launches_seen_.exchange(0);
    return out;
  }

  std::int64_t timestamp_ns() override {
    std::uint64_t ts = 0;
    ATTNPROF_CUPTI_CHECK(cuptiGetTimestamp(&ts));
    return static_cast<std::int64_t>(ts);
  }

 private:
  // Records dropped with no buffer ever completed (starved queues) are read from the current
  // context's queue; cuCtxGetCurrent comes through the runtime (no -lcuda).
  void read_remaining_dropped() {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess || fn == nullptr) {
      cudaGetLastError();
      return;
    }
    CUcontext context = nullptr;
    if (reinterpret_cast<CUresult (*)(CUcontext*)>(fn)(&context) != CUDA_SUCCESS || context == nullptr) return;
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      std::lock_guard lock(mutex_);
      batch_.dropped_records += static_cast<std::int64_t>(dropped);
    }
  }

  static void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void* data) {
    auto* self = static_cast<RealCuptiApi*>(userdata);
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && is_runtime_launch(cbid)) {
      if (info->callbackSite == CUPTI_API_ENTER) {
        if (t_runtime_launch_depth++ == 0) self->launches_seen_.fetch_add(1, std::memory_order_relaxed);
      } else {
        --t_runtime_launch_depth;
      }
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && is_driver_launch(cbid)) {
      if (info->callbackSite == CUPTI_API_ENTER && t_runtime_launch_depth == 0)
        self->launches_seen_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  static void CUPTIAPI on_buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
    RealCuptiApi* self = g_active.load();
    *max_records = 0;
    if (self != nullptr && self->options_.starve_buffers) {
      *buffer = nullptr;  // CUPTI drops the records it cannot store and counts them
      *size = 0;
      return;
    }
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
  }

  static void CUPTIAPI on_buffer_completed(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer,
                                           std::size_t /*size*/, std::size_t valid_size) {
    RealCuptiApi* self = g_active.load();
    if (self != nullptr) self->parse(buffer, valid_size, context, stream_id);
    std::free(buffer);
  }

  void parse(std::uint8_t* buffer, std::size_t valid_size, CUcontext context, std::uint32_t stream_id) {
    ActivityBatch parsed;
    CUpti_Activity* record = nullptr;
    while (valid_size > 0 && cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
          KernelRecord r;
          r.name = demangle(k->name);
          r.start_ns = static_cast<std::int64_t>(k->start);
          r.end_ns = static_cast<std::int64_t>(k->end);
          r.correlation = k->correlationId;
          r.device = k->deviceId;
          r.context = k->contextId;
          r.stream = k->streamId;
          r.grid = {k->gridX, k->gridY, k->gridZ};
          r.block = {k->blockX, k->blockY, k->blockZ};
          r.registers_per_thread = k->registersPerThread;
          r.static_shared_bytes = k->staticSharedMemory;
          r.dynamic_shared_bytes = k->dynamicSharedMemory;
          parsed.kernels.push_back(std::move(r));
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
          parsed.memcpys.push_back(MemcpyRecord{copy_kind(m->copyKind), static_cast<std::int64_t>(m->bytes),
                                                static_cast<std::int64_t>(m->start), static_cast<std::int64_t>(m->end),
                                                m->correlationId, m->deviceId, m->contextId, m->streamId});
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
          parsed.memsets.push_back(MemsetRecord{static_cast<std::int64_t>(m->bytes), static_cast<std::int64_t>(m->start),
                                                static_cast<std::int64_t>(m->end), m->correlationId, m->deviceId,
                                                m->contextId, m->streamId});
          break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER: {
          const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
          ApiRecord r;
          r.driver = record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
          r.cbid = a->cbid;
          const char* name = nullptr;
          cuptiGetCallbackName(r.driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name);
          r.name = name ? name : fmt::format("cbid {}", a->cbid);
          // CUPTI names runtime calls with their version suffix (cudaLaunchKernel_v7000); Kineto strips it.
          if (auto cut = r.name.find("_v"); !r.driver && cut != std::string::npos) r.name.resize(cut);
          r.start_ns = static_cast<std::int64_t>(a->start);
          r.end_ns = static_cast<std::int64_t>(a->end);
          r.correlation = a->correlationId;
          r.process = a->processId;
          r.thread = a->threadId;
          parsed.apis.push_back(std::move(r));
          break;
        }
        default: break;
      }
    }
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
    std::lock_guard lock(mutex_);
    auto append = [](auto& into, auto& from) {
      for (auto& r : from) into.push_back(std::move(r));
    };
    append(batch_.kernels, parsed.kernels);
    append(batch_.memcpys, parsed.memcpys);
    append(batch_.memsets, parsed.memsets);
    append(batch_.apis, parsed.apis);
    batch_.dropped_records += static_cast<std::int64_t>(dropped);
  }

  RealCuptiOptions options_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool subscribed_ = false;
  bool started_ = false;
  std::mutex mutex_;  // guards batch_; taken only inside buffer callbacks and take()
  ActivityBatch batch_;
  std::atomic<std::int64_t> launches_seen_{0};
};

}  // namespace

std::unique_ptr<CuptiApi> make_real_cupti_api(RealCuptiOptions options) {
  return std::make_unique<RealCuptiApi>(options);
}

}  // namespace attnprof::cuda
