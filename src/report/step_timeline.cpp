#include "report/step_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/utf8.h"
#include "report/forward_work.h"
#include "report/html_escape.h"
#include "report/insights.h"
#include "report/kernel_class.h"
#include "report/svg_plot.h"

namespace attnprof::report {
namespace {

using trace::Category;

bool is_cpu_lane(Category c) {
  return c == Category::user_annotation || c == Category::cpu_op || c == Category::cuda_runtime ||
         c == Category::cuda_driver || c == Category::python_function;
}

const trace::Event* middle(const std::vector<const trace::Event*>& list) {
  return list.empty() ? nullptr : list[(list.size() - 1) / 2];
}

void keep_longest(std::vector<StepSlice>& slices, std::size_t max_slices) {
  if (slices.size() <= max_slices) return;
  std::stable_sort(slices.begin(), slices.end(), [](const auto& a, const auto& b) { return a.dur_ns > b.dur_ns; });
  slices.resize(max_slices);
  std::stable_sort(slices.begin(), slices.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
}

}  // namespace

StepTimeline extract_step_timeline(const trace::Trace& trace, std::size_t max_slices, int max_depth) {
  StepTimeline t;
  std::vector<const trace::Event*> steps;
  for (const auto& e : trace.events) {
    if (e.category == Category::user_annotation && e.phase == 'X' && e.name.rfind("ProfilerStep#", 0) == 0) {
      steps.push_back(&e);
    }
  }
  std::sort(steps.begin(), steps.end(), [](auto* a, auto* b) { return a->ts_ns < b->ts_ns; });
  const TraceWork work = collect_forwards(trace);
  const trace::Event* window = middle(steps);
  if (!window) {
    std::vector<const trace::Event*> ranges;
    for (const Forward& f : work.forwards) {
      if (f.range) ranges.push_back(f.range);
    }
    window = middle(ranges);
  }
  std::int64_t begin = 0, end = 0;
  std::string pid, tid;
  if (window) {
    t.step = window->name;
    begin = window->ts_ns;
    end = window->end_ns();
    pid = window->pid;
    tid = window->tid;
  } else {
    t.step = "trace";
    begin = INT64_MAX;
    end = INT64_MIN;
    for (const auto& e : trace.events) {
      if (!is_cpu_lane(e.category) && e.category != Category::cpu_kernel) continue;
      begin = std::min(begin, e.ts_ns);
      end = std::max(end, e.end_ns());
    }
    if (begin > end) begin = end = 0;
  }

  // Device lane: the work of the forwards inside the window (GPU work may end after it).
  t.device_lane = work.gpu ? "GPU" : "CPU kernels";
  std::int64_t last = end;
  for (const Forward& f : work.forwards) {
    if (f.range && (f.range->ts_ns < begin || f.range->ts_ns > end)) continue;
    for (const WorkItem& w : f.work) {
      t.device.push_back({short_kernel_name(w.event->name, 80), w.event->ts_ns - begin, w.event->dur_ns, 0,
                          kernel_class_name(w.kind)});
      last = std::max(last, w.event->end_ns());
    }
  }
  t.span_ns = std::max<std::int64_t>(last - begin, 1);

  // CPU lane: ranges on the window's thread, nested by a stack sweep.
  std::vector<const trace::Event*> host;
  for (const auto& e : trace.events) {
    if (!is_cpu_lane(e.category) || e.phase != 'X') continue;
    if (window && (e.pid != pid || e.tid != tid)) continue;
    // A range that starts where the window ends (the next step) is not part of it.
    if (e.ts_ns < begin || (e.ts_ns >= end && end > begin)) continue;
    host.push_back(&e);
  }
  std::stable_sort(host.begin(), host.end(), [](auto* a, auto* b) {
    return a->ts_ns != b->ts_ns ? a->ts_ns < b->ts_ns : a->dur_ns > b->dur_ns;
  });
  std::vector<std::int64_t> open_ends;
  for (const trace::Event* e : host) {
    while (!open_ends.empty() && open_ends.back() <= e->ts_ns) open_ends.pop_back();
    const int depth = static_cast<int>(open_ends.size());
    open_ends.push_back(e->end_ns());
    if (depth >= max_depth) continue;
    t.cpu.push_back({e->name, e->ts_ns - begin, e->dur_ns, depth, trace::category_name(e->category)});
    t.cpu_depth = std::max(t.cpu_depth, depth + 1);
  }
  keep_longest(t.cpu, max_slices);
  keep_longest(t.device, max_slices);
  return t;
}

nlohmann::json step_timeline_json(const StepTimeline& t) {
  auto slices = [](const std::vector<StepSlice>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : list) {
      out.push_back({{"name", s.name}, {"start_ns", s.start_ns}, {"dur_ns", s.dur_ns}, {"depth", s.depth}, {"kind", s.kind}});
    }
    return out;
  };
  return {{"step", t.step},         {"span_ns", t.span_ns}, {"device_lane", t.device_lane},
          {"cpu_depth", t.cpu_depth}, {"cpu", slices(t.cpu)}, {"device", slices(t.device)}};
}

StepTimeline step_timeline_from_json(const nlohmann::json& j) {
  StepTimeline t;
  t.step = j.value("step", std::string());
  t.span_ns = j.value("span_ns", std::int64_t{1});
  t.device_lane = j.value("device_lane", std::string("device"));
  t.cpu_depth = j.value("cpu_depth", 0);
  auto slices = [](const nlohmann::json& list, std::vector<StepSlice>& out) {
    if (!list.is_array()) return;
    for (const auto& s : list) {
      out.push_back({s.value("name", std::string()), s.value("start_ns", std::int64_t{0}), s.value("dur_ns", std::int64_t{0}),
                     s.value("depth", 0), s.value("kind", std::string())});
    }
  };
  if (j.contains("cpu")) slices(j["cpu"], t.cpu);
  if (j.contains("device")) slices(j["device"], t.device);
  return t;
}

const char* timeline_color(const std::string& kind) {
  if (kind == "user_annotation") return "#c9d6e8";
  if (kind == "cpu_op") return "#8fb3de";
  if (kind == "cuda_runtime" || kind == "cuda_driver") return "#e3c47b";
  if (kind == "gemm") return "#d9634c";
  if (kind == "attention") return "#8e5bb5";
  if (kind == "softmax") return "#4f9d69";
  if (kind == "mask") return "#e09a3b";
  if (kind == "copy" || kind == "memcpy") return "#c43b7b";
  if (kind == "memset") return "#9a9a9a";
  if (kind == "elementwise") return "#4aa3b5";
  return "#b0b0b0";
}

TimeScale common_time_scale(std::int64_t longest_span_ns, int plot_px) {
  TimeScale scale;
  const std::int64_t longest = std::max<std::int64_t>(longest_span_ns, 1);
  scale.ns_per_px = static_cast<double>(longest) / std::max(plot_px, 1);
  for (std::int64_t decade = 1;; decade *= 10) {
    for (std::int64_t step : {decade, 2 * decade, 5 * decade}) {
      if (step * 8 >= longest) {
        scale.tick_ns = step;
        return scale;
      }
    }
  }
}

std::string timeline_svg(const StepTimeline& t, const TimeScale& scale) {
  constexpr int kLabel = 110, kRow = 18, kGap = 10, kAxis = 22;
  const double px_per_ns = 1.0 / scale.ns_per_px;
  const double span_px = static_cast<double>(std::max<std::int64_t>(t.span_ns, 1)) * px_per_ns;
  const int cpu_rows = std::max(t.cpu_depth, 1);
  const int device_top = kAxis + cpu_rows * kRow + kGap;
  const int height = device_top + 24 + 8;
  // Grid lines at multiples of the page's tick inside the span; the SVG holds the last one's
  // label, centred on it (starting at it when it is the first).
  std::vector<std::int64_t> ticks;
  for (std::int64_t at = 0; at <= t.span_ns; at += scale.tick_ns) ticks.push_back(at);
  const double last_label = text_width_px(format_duration_ns(static_cast<double>(ticks.back())), 11);
  const double last_end = static_cast<double>(ticks.back()) * px_per_ns + (ticks.back() == 0 ? last_label : last_label / 2);
  const int width = kLabel + static_cast<int>(std::ceil(std::max(span_px + 10, last_end + 4)));
  std::string svg = fmt::format(
      "<svg class=\"timeline\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      width, height, width, height);
  svg += fmt::format("<rect class=\"span\" x=\"{}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"#fafafa\" "
                     "stroke=\"#bbb\"/>\n",
                     kLabel, kAxis - 4, span_px, height - kAxis);
  for (std::int64_t at : ticks) {
    const double x = kLabel + static_cast<double>(at) * px_per_ns;
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>", x, kAxis - 4, x, height - 4);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"12\" text-anchor=\"{}\" fill=\"#555\">{}</text>\n", x,
                       at == 0 ? "start" : "middle", html_escape(format_duration_ns(static_cast<double>(at))));
  }
  svg += fmt::format("<text x=\"4\" y=\"{}\" fill=\"#222\">CPU</text>\n", kAxis + 13);
  svg += fmt::format("<text x=\"4\" y=\"{}\" fill=\"#222\">{}</text>\n", device_top + 16, html_escape(t.device_lane));
  auto draw = [&](const StepSlice& s, int y, int h) {
    const double x = kLabel + static_cast<double>(s.start_ns) * px_per_ns;
    const double w = std::max(static_cast<double>(s.dur_ns) * px_per_ns, 1.0);
    svg += fmt::format("<g><title>{} ({}, {})</title><rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" "
                       "stroke=\"#fff\" stroke-width=\"0.5\"/>",
                       html_escape(s.name), html_escape(s.kind), html_escape(format_duration_ns(static_cast<double>(s.dur_ns))),
                       x, y, w, h, timeline_color(s.kind));
    // 7.2 px a character: kernel names in an 11 px sans-serif measure up to 6.6 px a character
    // in Chromium, and the ellipsis is 11 px; the label then ends inside its slice.
    const std::size_t fits = static_cast<std::size_t>((w - 4) / 7.2);
    if (fits >= 4) {
      std::string label = cut_to_columns(printable(s.name), fits);
      svg += fmt::format("<text x=\"{:.2f}\" y=\"{}\" fill=\"#111\">{}</text>", x + 2, y + h - 5, html_escape(label));
    }
    svg += "</g>\n";
  };
  for (const auto& s : t.cpu) draw(s, kAxis + s.depth * kRow, kRow - 2);
  for (const auto& s : t.device) draw(s, device_top, 24);
  svg += "</svg>\n";
  return svg;
}

}  // namespace attnprof::report
