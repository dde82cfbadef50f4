#include "profiler/device_activity.h"

#include <atomic>

namespace attnprof::profiler {
namespace {
std::atomic<DeviceActivityFactory> g_factory{nullptr};
}
void install_device_activity_factory(DeviceActivityFactory factory) { g_factory.store(factory); }
DeviceActivityFactory device_activity_factory() { return g_factory.load(); }
}  // namespace attnprof::profiler
