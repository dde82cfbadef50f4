#pragma once
// One profiler step drawn as lanes: the CPU's ranges (nested, one row per depth) above the
// device's work (GPU kernels, memcpys, memsets; or the CPU kernels of a CPU run).
#include <attnprof/trace.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::report {

struct StepSlice {
  std::string name;
  std::int64_t start_ns = 0;  // from the timeline's start
  std::int64_t dur_ns = 0;
  int depth = 0;        // CPU lane row
  std::string kind;     // cpu: the category ("cpu_op", "user_annotation", "cuda_runtime"); device: the kernel class
};

struct StepTimeline {
  std::string step;              // "ProfilerStep#3", "attn_fwd", or "trace"
  std::int64_t span_ns = 0;
  std::string device_lane;       // "GPU" or "CPU kernels"
  std::vector<StepSlice> cpu;
  std::vector<StepSlice> device;
  int cpu_depth = 0;             // rows in the CPU lane
};

// The middle ProfilerStep (else the middle forward, else the whole trace). At most
// `max_slices` per lane, the longest kept; CPU depth capped at `max_depth` rows.
StepTimeline extract_step_timeline(const trace::Trace& trace, std::size_t max_slices = 300, int max_depth = 6);

nlohmann::json step_timeline_json(const StepTimeline& timeline);
StepTimeline step_timeline_from_json(const nlohmann::json& json);

// Fill colour of a slice kind (a category on the CPU lane, a kernel class on the device lane).
const char* timeline_color(const std::string& kind);

// One time scale for every timeline on a page, so that steps compare by their drawn length: the
// longest span fills `plot_px` pixels; grid lines every `tick_ns`, the least 1-2-5 step that puts
// at most 8 of them on the longest span.
struct TimeScale {
  double ns_per_px = 1;
  std::int64_t tick_ns = 1;
};
TimeScale common_time_scale(std::int64_t longest_span_ns, int plot_px = 980);

// Inline SVG on `scale`: the step's span is a frame (rect class "span") span_ns / ns_per_px pixels
// wide after the lanes' labels; slices wide enough carry their name, all carry a <title>.
std::string timeline_svg(const StepTimeline& timeline, const TimeScale& scale);

}  // namespace attnprof::report
