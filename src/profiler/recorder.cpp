// Thread-local recording: one relaxed load when off; when on, a push into this thread's vector.
#include "profiler/recorder.h"

#include <attnprof/memory.h>

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <memory>
#include <mutex>

namespace attnprof::profiler {

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

namespace detail {

std::atomic<int> g_recording{0};

namespace {

struct ThreadBuffer {
  std::uint64_t session = 0;
  ThreadEvents events;
  std::vector<Record*> open;  // open ranges, innermost last
};

std::atomic<std::uint64_t> g_session{0};
std::atomic<bool> g_record_shapes{false};
std::atomic<bool> g_profile_memory{false};
std::atomic<std::int64_t> g_external_id{1};
std::mutex g_registry_mutex;
std::vector<std::shared_ptr<ThreadBuffer>> g_registry;  // buffers of the current session

thread_local std::shared_ptr<ThreadBuffer> t_buffer;

ThreadBuffer& buffer() {
  std::uint64_t session = g_session.load(std::memory_order_acquire);
  ThreadBuffer* b = t_buffer.get();
  if (b != nullptr && b->session == session) [[likely]] return *b;
  auto fresh = std::make_shared<ThreadBuffer>();
  fresh->session = session;
  fresh->events.tid = current_thread_id();
  fresh->open.reserve(64);
  {
    std::lock_guard lock(g_registry_mutex);
    g_registry.push_back(fresh);
  }
  t_buffer = std::move(fresh);
  return *t_buffer;
}

void append_dims(std::string& out, const Tensor* const* inputs, std::size_t count) {
  out.push_back('[');
  for (std::size_t i = 0; i < count; ++i) {
    if (i) out.append(", ");
    out.push_back('[');
    if (inputs[i] != nullptr) {
      const auto& shape = inputs[i]->shape();
      for (std::size_t d = 0; d < shape.size(); ++d) {
        if (d) out.append(", ");
        out.append(std::to_string(shape[d]));
      }
    }
    out.push_back(']');
  }
  out.push_back(']');
}

void append_types(std::string& out, const Tensor* const* inputs, std::size_t count) {
  out.push_back('[');
  for (std::size_t i = 0; i < count; ++i) {
    if (i) out.append(", ");
    out.push_back('"');
    if (inputs[i] != nullptr) out.append(kineto_type_name(inputs[i]->dtype()));
    out.push_back('"');
  }
  out.push_back(']');
}

}  // namespace

const char* kineto_type_name(DType dtype) {
  switch (dtype) {
    case DType::bf16: return "c10::BFloat16";
    case DType::fp16: return "c10::Half";
    case DType::fp32: return "float";
    case DType::fp64: return "double";
    case DType::boolean: return "bool";
    case DType::int32: return "int";
  }
  return "";
}

std::int64_t current_thread_id() {
  thread_local std::int64_t tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
  return tid;
}

std::int64_t next_external_id() { return g_external_id.fetch_add(1, std::memory_order_relaxed); }

void begin_range(trace::Category category, std::string_view name, const Tensor* const* inputs,
                 std::size_t input_count) {
  ThreadBuffer& b = buffer();
  Record& r = b.events.records.push();
  r.category = category;
  r.external_id = next_external_id();
  r.name = b.events.text.copy(name);
  r.name_size = static_cast<std::uint32_t>(name.size());
  if (input_count > 0 && g_record_shapes.load(std::memory_order_relaxed)) {
    thread_local std::string scratch;
    scratch.clear();
    append_dims(scratch, inputs, input_count);
    r.dims = b.events.text.copy(scratch);
    r.dims_size = static_cast<std::uint32_t>(scratch.size());
    scratch.clear();
    append_types(scratch, inputs, input_count);
    r.types = b.events.text.copy(scratch);
    r.types_size = static_cast<std::uint32_t>(scratch.size());
  }
  b.open.push_back(&r);
  r.ts_ns = now_ns();  // last, so the bookkeeping above is not inside the range
}

void end_range() {
  std::int64_t t = now_ns();
  ThreadBuffer* b = t_buffer.get();
  // A range that began before stop() (or in another session) ends with nothing to close.
  if (b == nullptr || b->open.empty() || b->session != g_session.load(std::memory_order_relaxed)) return;
  b->open.back()->end_ns = t;
  b->open.pop_back();
}

std::int64_t current_external_id() {
  ThreadBuffer* b = t_buffer.get();
  if (b == nullptr || b->open.empty() || b->session != g_session.load(std::memory_order_relaxed)) return -1;
  return b->open.back()->external_id;
}

void begin_session(bool record_shapes, bool profile_memory) {
  std::lock_guard lock(g_registry_mutex);
  g_registry.clear();
  g_record_shapes.store(record_shapes, std::memory_order_relaxed);
  g_profile_memory.store(profile_memory, std::memory_order_relaxed);
  memory::set_allocation_observer(&record_allocation);
  g_external_id.store(1, std::memory_order_relaxed);
  g_session.fetch_add(1, std::memory_order_acq_rel);
}

std::vector<ThreadEvents> end_session() {
  g_recording.store(0, std::memory_order_relaxed);
  std::lock_guard lock(g_registry_mutex);
  std::vector<ThreadEvents> out;
  out.reserve(g_registry.size());
  for (auto& b : g_registry) {
    out.push_back(std::move(b->events));
    b->events = ThreadEvents{};
    b->open.clear();
  }
  g_registry.clear();
  g_session.fetch_add(1, std::memory_order_acq_rel);  // stale buffers re-register next time
  return out;
}

}  // namespace detail

void record_allocation(Device device, const void* ptr, std::int64_t signed_bytes, std::int64_t total_allocated) {
  if (!detail::recording() || !detail::g_profile_memory.load(std::memory_order_relaxed)) return;
  detail::ThreadBuffer& b = detail::buffer();
  detail::Record& r = b.events.records.push();
  r.category = trace::Category::cpu_instant_event;
  r.phase = 'i';
  r.ts_ns = now_ns();
  r.end_ns = r.ts_ns;
  static constexpr std::string_view kName = "[memory]";
  r.name = b.events.text.copy(kName);
  r.name_size = static_cast<std::uint32_t>(kName.size());
  r.bytes = signed_bytes;
  r.total_allocated = total_allocated;
  r.address = reinterpret_cast<std::uintptr_t>(ptr);
  r.device = device;
}

}  // namespace attnprof::profiler
