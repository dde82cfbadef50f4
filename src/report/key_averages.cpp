#include "report/key_averages.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "core/utf8.h"
#include "report/timeline.h"
#include "trace/json_text.h"

namespace attnprof::report {
namespace {

using trace::Category;

std::string group_name(const std::string& name) {
  if (name.rfind("ProfilerStep#", 0) == 0) return "ProfilerStep*";
  return name;
}

struct Node {
  const TimelineEvent* event;
  long parent = -1;
  std::int64_t child_ns = 0;
  std::size_t row = 0;
};

// torch's _format_time.
std::string format_time(double ns) {
  double us = ns / 1000.0;
  if (us >= 1e6) return fmt::format("{:.3f}s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.3f}ms", us / 1e3);
  return fmt::format("{:.3f}us", us);
}

double average(std::int64_t total_ns, std::int64_t calls) {
  return calls > 0 ? static_cast<double>(total_ns) / static_cast<double>(calls) : 0.0;
}

std::string format_pct(std::int64_t part, std::int64_t total) {
  return fmt::format("{:.2f}%", total > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(total) : 0.0);
}

std::int64_t sort_value(const KeyAverage& r, const std::string& key) {
  if (key == "cpu_time_total") return r.cpu_total_ns;
  if (key == "self_cpu_time_total") return r.self_cpu_ns;
  if (key == "cpu_time") return r.calls ? r.cpu_total_ns / r.calls : 0;
  if (key == "cuda_time_total" || key == "device_time_total") return r.device_total_ns;
  if (key == "self_cuda_time_total" || key == "self_device_time_total") return r.self_device_ns;
  if (key == "cuda_time" || key == "device_time") return r.calls ? r.device_total_ns / r.calls : 0;
  return r.calls;  // count
}

}  // namespace

const std::vector<std::string>& sort_keys() {
  static const std::vector<std::string> keys = {
      "cpu_time_total",  "self_cpu_time_total", "cpu_time",        "cuda_time_total",        "device_time_total",
      "self_cuda_time_total", "self_device_time_total", "cuda_time", "device_time",          "count",
      "name"};
  return keys;
}

KeyAverages key_averages(const trace::Trace& trace, const std::string& sort_by, int row_limit) {
  return key_averages(Timeline::of(trace), sort_by, row_limit);
}

KeyAverages key_averages(const Timeline& timeline, const std::string& sort_by, int row_limit) {
  const auto& keys = sort_keys();
  if (std::find(keys.begin(), keys.end(), sort_by) == keys.end()) {
    std::string allowed;
    for (const auto& k : keys) allowed += (allowed.empty() ? "" : ", ") + k;
    throw UsageError(fmt::format("--sort-by {}: unknown column; use one of {}", sort_by, allowed));
  }
  if (row_limit == 0) throw UsageError("--row-limit 0: must be a positive number of rows, or -1 for all");

  KeyAverages out;
  bool gpu = false, cpu_kernels = false;
  for (const TimelineEvent& e : timeline.events()) {
    gpu = gpu || is_device_work(e.category);
    cpu_kernels = cpu_kernels || e.category == Category::cpu_kernel;
  }
  out.device_label = gpu ? "CUDA" : cpu_kernels ? "CPU kernel" : "";

  std::vector<KeyAverage> rows;
  std::vector<long> row_index[2];  // name id -> row, for [host rows, device-work rows]
  for (auto& v : row_index) v.assign(timeline.name_count(), -1);
  long step_row[2] = {-1, -1};      // ProfilerStep#N rows merge under one name, as torch does
  auto row_of = [&](std::uint32_t name, bool device_row) {
    long& slot = row_index[device_row][name];
    if (slot < 0) {
      std::string g = group_name(timeline.name_at(name));
      bool step = g == "ProfilerStep*";
      if (step && step_row[device_row] >= 0) {
        slot = step_row[device_row];
        return static_cast<std::size_t>(slot);
      }
      if (step) step_row[device_row] = static_cast<long>(rows.size());
      KeyAverage r;
      r.name = std::move(g);
      r.device_row = device_row;
      slot = static_cast<long>(rows.size());
      rows.push_back(std::move(r));
    }
    return static_cast<std::size_t>(slot);
  };

  // Host events as a forest per thread, parents found by containment.
  std::vector<Node> nodes;
  std::vector<std::vector<std::size_t>> tracks(timeline.track_count());
  for (const TimelineEvent& e : timeline.events()) {
    if (!is_host_event(e.category)) continue;
    tracks[e.track].push_back(nodes.size());
    // On a CPU trace the cpu_kernel events are the device rows; on a GPU trace they are host ops.
    nodes.push_back(Node{&e, -1, 0, row_of(e.name, !gpu && e.category == Category::cpu_kernel)});
  }
  for (auto& ids : tracks) {
    std::stable_sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
      const TimelineEvent* x = nodes[a].event;
      const TimelineEvent* y = nodes[b].event;
      if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns;
      return x->dur_ns > y->dur_ns;
    });
    std::vector<std::size_t> open;
    for (std::size_t id : ids) {
      const TimelineEvent* e = nodes[id].event;
      while (!open.empty() && nodes[open.back()].event->end_ns() <= e->ts_ns) open.pop_back();
      if (!open.empty()) {
        Node& parent = nodes[open.back()];
        nodes[id].parent = static_cast<long>(open.back());
        // A child that overruns its parent (a malformed trace) only counts inside the parent.
        parent.child_ns += std::min(e->end_ns(), parent.event->end_ns()) - e->ts_ns;
      }
      open.push_back(id);
    }
  }
  for (const Node& n : nodes) {
    KeyAverage& r = rows[n.row];
    ++r.calls;
    r.cpu_total_ns += n.event->dur_ns;
    r.self_cpu_ns += n.event->dur_ns - n.child_ns;
    out.self_cpu_total_ns += n.event->dur_ns - n.child_ns;
  }

  auto credit_ancestors = [&](long node, std::int64_t ns) {
    for (; node >= 0; node = nodes[static_cast<std::size_t>(node)].parent)
      rows[nodes[static_cast<std::size_t>(node)].row].device_total_ns += ns;
  };
  if (gpu) {
    std::unordered_map<std::int64_t, std::size_t> launch_node;  // correlation -> runtime/driver node
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const TimelineEvent* e = nodes[i].event;
      if ((e->category == Category::cuda_runtime || e->category == Category::cuda_driver) && e->correlation >= 0)
        launch_node.emplace(e->correlation, i);
    }
    for (const TimelineEvent& e : timeline.events()) {
      if (!is_device_work(e.category)) continue;
      KeyAverage& r = rows[row_of(e.name, true)];
      ++r.calls;
      r.self_device_ns += e.dur_ns;
      r.device_total_ns += e.dur_ns;
      out.self_device_total_ns += e.dur_ns;
      // The op that launched it (not the runtime call itself, as torch shows it) and its ancestors.
      auto it = launch_node.find(e.correlation);
      if (it != launch_node.end()) credit_ancestors(nodes[it->second].parent, e.dur_ns);
    }
  } else if (cpu_kernels) {
    for (const Node& n : nodes) {
      if (n.event->category != Category::cpu_kernel) continue;
      KeyAverage& r = rows[n.row];
      r.self_device_ns += n.event->dur_ns;
      r.device_total_ns += n.event->dur_ns;
      out.self_device_total_ns += n.event->dur_ns;
      credit_ancestors(n.parent, n.event->dur_ns);
    }
  }

  if (sort_by == "name") {
    std::stable_sort(rows.begin(), rows.end(), [](const KeyAverage& a, const KeyAverage& b) { return a.name < b.name; });
  } else {
    std::stable_sort(rows.begin(), rows.end(), [&](const KeyAverage& a, const KeyAverage& b) {
      std::int64_t x = sort_value(a, sort_by), y = sort_value(b, sort_by);
      if (x != y) return x > y;
      return a.name < b.name;
    });
  }
  out.total_rows = rows.size();
  if (row_limit > 0 && rows.size() > static_cast<std::size_t>(row_limit)) rows.resize(static_cast<std::size_t>(row_limit));
  out.rows = std::move(rows);
  return out;
}

std::string render_text(const KeyAverages& t) {
  constexpr std::size_t kMaxName = 55;
  const bool dev = !t.device_label.empty();
  const std::string& d = t.device_label;
  std::vector<std::string> headers = {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"};
  if (dev) {
    headers.insert(headers.end(), {"Self " + d, "Self " + d + " %", d + " total", d + " time avg"});
  }
  headers.push_back("# of Calls");
  // Names come from the trace: shown with control characters escaped, measured in code points.
  std::vector<std::string> names;
  for (const auto& r : t.rows) names.push_back(printable(r.name));
  std::size_t name_width = 4;
  for (const std::string& name : names) name_width = std::max(name_width, utf8_columns(name) + 4);
  name_width = std::min(name_width, kMaxName);
  std::vector<std::size_t> widths;
  for (std::size_t i = 0; i < headers.size(); ++i) widths.push_back(i == 0 ? name_width : std::max<std::size_t>(12, headers[i].size()));

  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) fmt::format_to(std::back_inserter(out), "{:>{}}  ", cells[i], widths[i]);
    out.push_back('\n');
  };
  std::string rule;
  for (std::size_t w : widths) rule += std::string(w, '-') + "  ";
  rule += '\n';
  out += rule;
  line(headers);
  out += rule;
  for (std::size_t row = 0; row < t.rows.size(); ++row) {
    const KeyAverage& r = t.rows[row];
    std::vector<std::string> cells = {cut_to_columns(names[row], name_width, "..."),
                                      format_pct(r.self_cpu_ns, t.self_cpu_total_ns),
                                      format_time(static_cast<double>(r.self_cpu_ns)),
                                      format_pct(r.cpu_total_ns, t.self_cpu_total_ns),
                                      format_time(static_cast<double>(r.cpu_total_ns)),
                                      format_time(average(r.cpu_total_ns, r.calls))};
    if (dev) {
      cells.push_back(format_time(static_cast<double>(r.self_device_ns)));
      cells.push_back(format_pct(r.self_device_ns, t.self_device_total_ns));
      cells.push_back(format_time(static_cast<double>(r.device_total_ns)));
      cells.push_back(format_time(average(r.device_total_ns, r.calls)));
    }
    cells.push_back(std::to_string(r.calls));
    line(cells);
  }
  out += rule;
  out += fmt::format("Self CPU time total: {}\n", format_time(static_cast<double>(t.self_cpu_total_ns)));
  if (dev) out += fmt::format("Self {} time total: {}\n", d, format_time(static_cast<double>(t.self_device_total_ns)));
  return out;
}

std::string render_json_rows(const KeyAverages& t) {
  std::string out = "[";
  auto us = [](std::int64_t ns) {
    std::string s;
    trace::append_us(s, ns);
    return s;
  };
  auto pct = [](std::int64_t part, std::int64_t total) {
    return fmt::format("{:.4f}", total > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(total) : 0.0);
  };
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const KeyAverage& r = t.rows[i];
    out += i ? ",\n  {" : "\n  {";
    out += "\"name\": ";
    trace::append_json_string(out, r.name);
    out += fmt::format(
        ", \"device_row\": {}, \"calls\": {}, \"self_cpu_us\": {}, \"self_cpu_pct\": {}, \"cpu_total_us\": {}, "
        "\"cpu_total_pct\": {}, \"cpu_time_avg_us\": {}, \"self_device_us\": {}, \"self_device_pct\": {}, "
        "\"device_total_us\": {}, \"device_time_avg_us\": {}}}",
        r.device_row ? "true" : "false", r.calls, us(r.self_cpu_ns), pct(r.self_cpu_ns, t.self_cpu_total_ns),
        us(r.cpu_total_ns), pct(r.cpu_total_ns, t.self_cpu_total_ns), us(r.calls ? (r.cpu_total_ns + r.calls / 2) / r.calls : 0),
        us(r.self_device_ns), pct(r.self_device_ns, t.self_device_total_ns), us(r.device_total_ns),
        us(r.calls ? (r.device_total_ns + r.calls / 2) / r.calls : 0));
  }
  out += t.rows.empty() ? "]" : "\n]";
  return out;
}

}  // namespace attnprof::report
