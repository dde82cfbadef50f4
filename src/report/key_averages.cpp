#include "report/key_averages.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
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
  std::size_t children = 0;
  bool merged = false;  // folded into its parent of the same name
};

// torch.autograd.profiler_util.EventList._remove_dup_nodes: an event whose parent has the same
// name and no other child is folded into that parent, which takes its children (and so its
// Self CPU) and its kernels; the parent keeps its own span. So aten::layer_norm called inside an
// aten::layer_norm (autocast's redispatch) is one call, as torch counts it. Nodes are in start
// order, parents first: a node's parent and that parent's child count are final when it is
// reached, so one pass gives torch's fixed point.
void fold_same_name_only_children(std::vector<Node>& nodes) {
  std::vector<std::vector<std::size_t>> children(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].parent >= 0) children[static_cast<std::size_t>(nodes[i].parent)].push_back(i);
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].children = children[i].size();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    if (n.parent < 0) continue;
    Node& p = nodes[static_cast<std::size_t>(n.parent)];
    if (p.event->name != n.event->name || p.children != 1) continue;
    n.merged = true;
    p.children = n.children;
    p.child_ns = n.child_ns;
    for (std::size_t c : children[i]) nodes[c].parent = n.parent;
  }
}

// Row kinds: torch keys its rows by name, device type and "is user annotation" together.
enum Kind : int { host_op = 0, host_annotation = 1, device_work = 2, device_annotation = 3 };

// The utility ops torch drops while reading its events (torch.autograd.profiler's _filter_name);
// their time stays in their parent's Self CPU.
bool filtered_name(const std::string& name) {
  static const char* const names[] = {"profiler::_record_function_enter", "profiler::_record_function_enter_new",
                                      "profiler::_record_function_exit", "aten::is_leaf", "aten::output_nr",
                                      "aten::_version"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

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

KeyAverages key_averages(const trace::Trace& trace, const std::string& sort_by, int row_limit, DeviceTime device_time) {
  return key_averages(Timeline::of(trace), sort_by, row_limit, device_time);
}

KeyAverages key_averages(const Timeline& timeline, const std::string& sort_by, int row_limit, DeviceTime device_time) {
  const auto& keys = sort_keys();
  if (std::find(keys.begin(), keys.end(), sort_by) == keys.end()) {
    std::string allowed;
    for (const auto& k : keys) allowed += (allowed.empty() ? "" : ", ") + k;
    throw UsageError(fmt::format("sort_by {}: unknown column; use one of {}", sort_by, allowed));
  }
  if (row_limit == 0) throw UsageError("row_limit 0: must be a positive number of rows, or -1 for all");

  KeyAverages out;
  const std::vector<TimelineEvent>& events = timeline.events();
  bool gpu = false, cpu_kernels = false;
  for (const TimelineEvent& e : events) {
    gpu = gpu || is_device_work(e.category);
    cpu_kernels = cpu_kernels || e.category == Category::cpu_kernel;
  }
  out.device_label = gpu ? "CUDA" : cpu_kernels ? "CPU kernel" : "";
  const bool torch = device_time == DeviceTime::torch;

  // Which row each event counts in (-1: none). Rows are created in the order torch meets them:
  // events by start time, the longer first, so ties in the sort keep that order.
  std::vector<bool> dropped(timeline.name_count());
  for (std::uint32_t n = 0; n < timeline.name_count(); ++n) dropped[n] = filtered_name(timeline.name_at(n));
  auto kind_of = [&](const TimelineEvent& e) -> int {
    if (dropped[e.name]) return -1;
    if (e.category == Category::gpu_user_annotation) return torch && gpu ? device_annotation : -1;
    if (is_device_work(e.category) || (!gpu && e.category == Category::cpu_kernel)) return device_work;
    if (e.category == Category::user_annotation) return host_annotation;
    return is_host_event(e.category) ? host_op : -1;
  };
  std::vector<std::size_t> order(events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (events[a].ts_ns != events[b].ts_ns) return events[a].ts_ns < events[b].ts_ns;
    return events[a].end_ns() > events[b].end_ns();
  });
  std::vector<KeyAverage> rows;
  std::vector<long> event_row(events.size(), -1);
  std::vector<long> row_index[4];                                  // kind, name id -> row
  for (auto& v : row_index) v.assign(timeline.name_count(), -1);
  std::map<std::pair<std::string, int>, std::size_t> row_by_key;  // (grouped name, kind) -> row
  for (std::size_t i : order) {
    int kind = kind_of(events[i]);
    if (kind < 0) continue;
    long& slot = row_index[kind][events[i].name];
    if (slot < 0) {
      std::string g = group_name(timeline.name_at(events[i].name));
      auto [it, added] = row_by_key.emplace(std::make_pair(g, kind), rows.size());
      if (added) {
        KeyAverage r;
        r.name = std::move(g);
        r.device_row = kind == device_work || kind == device_annotation;
        r.annotation_row = kind == device_annotation;
        rows.push_back(std::move(r));
      }
      slot = static_cast<long>(it->second);
    }
    event_row[i] = slot;
  }

  // Host events as a forest per thread, as torch builds it: by start time (the longer first), an
  // event's parent is the innermost open event that contains it whole; one that overruns an open
  // event closes it and is not its child.
  std::vector<Node> nodes;
  std::vector<long> node_of(events.size(), -1);
  std::vector<std::vector<std::size_t>> tracks(timeline.track_count());
  for (std::size_t i : order) {
    const TimelineEvent& e = events[i];
    if (!is_host_event(e.category) || event_row[i] < 0) continue;
    node_of[i] = static_cast<long>(nodes.size());
    tracks[e.track].push_back(nodes.size());
    nodes.push_back(Node{&e, -1, 0, static_cast<std::size_t>(event_row[i])});
  }
  for (auto& ids : tracks) {
    std::vector<std::size_t> open;
    for (std::size_t id : ids) {
      const TimelineEvent* e = nodes[id].event;
      while (!open.empty()) {
        const TimelineEvent* p = nodes[open.back()].event;
        if (e->ts_ns < p->end_ns() && e->end_ns() <= p->end_ns()) break;
        open.pop_back();
      }
      if (!open.empty()) {
        nodes[id].parent = static_cast<long>(open.back());
        nodes[open.back()].child_ns += e->dur_ns;
      }
      open.push_back(id);
    }
  }
  fold_same_name_only_children(nodes);
  for (const Node& n : nodes) {
    if (n.merged) continue;
    KeyAverage& r = rows[n.row];
    ++r.calls;
    r.cpu_total_ns += n.event->dur_ns;
    r.self_cpu_ns += n.event->dur_ns - n.child_ns;
    out.self_cpu_total_ns += n.event->dur_ns - n.child_ns;
  }

  // Device work: its own row, and the op that launched it (torch's "Self CUDA" of that op in
  // torch's booking) and that op's ancestors ("CUDA total").
  auto book = [&](long launcher, std::int64_t ns) {
    if (launcher >= 0 && torch) rows[nodes[static_cast<std::size_t>(launcher)].row].self_device_ns += ns;
    for (long node = launcher; node >= 0; node = nodes[static_cast<std::size_t>(node)].parent)
      rows[nodes[static_cast<std::size_t>(node)].row].device_total_ns += ns;
  };
  std::unordered_map<std::int64_t, std::size_t> launch_node;  // correlation -> runtime/driver node
  if (gpu) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const TimelineEvent* e = nodes[i].event;
      if ((e->category == Category::cuda_runtime || e->category == Category::cuda_driver) && e->correlation >= 0)
        launch_node.emplace(e->correlation, i);
    }
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TimelineEvent& e = events[i];
    if (event_row[i] < 0) continue;
    KeyAverage& r = rows[static_cast<std::size_t>(event_row[i])];
    if (e.category == Category::gpu_user_annotation) {
      ++r.calls;
      r.self_device_ns += e.dur_ns;
      r.device_total_ns += e.dur_ns;
    } else if (gpu && is_device_work(e.category)) {
      ++r.calls;
      r.self_device_ns += e.dur_ns;
      r.device_total_ns += e.dur_ns;
      out.self_device_total_ns += e.dur_ns;
      // The launching op is the one around its runtime/driver call: the op whose External id a
      // kernel carries in PyTorch's traces.
      auto it = launch_node.find(e.correlation);
      if (it != launch_node.end()) book(nodes[it->second].parent, e.dur_ns);
    } else if (!gpu && e.category == Category::cpu_kernel) {
      const Node& n = nodes[static_cast<std::size_t>(node_of[i])];
      r.self_device_ns += e.dur_ns;
      r.device_total_ns += e.dur_ns;
      out.self_device_total_ns += e.dur_ns;
      book(n.parent, e.dur_ns);
    }
  }

  // A row whose every event was folded into a parent is not one of torch's.
  rows.erase(std::remove_if(rows.begin(), rows.end(), [](const KeyAverage& r) { return r.calls == 0; }), rows.end());
  if (sort_by == "name") {
    std::stable_sort(rows.begin(), rows.end(), [](const KeyAverage& a, const KeyAverage& b) { return a.name < b.name; });
  } else {
    std::stable_sort(rows.begin(), rows.end(), [&](const KeyAverage& a, const KeyAverage& b) {
      return sort_value(a, sort_by) > sort_value(b, sort_by);
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
  // torch's value columns are 12 wide, even under its 13-character "CUDA time avg" header (which
  // then overflows by one, as torch prints it); the longer "CPU kernel" headers widen theirs.
  for (std::size_t i = 0; i < headers.size(); ++i)
    widths.push_back(i == 0 ? name_width : headers[i].size() <= 13 ? 12 : headers[i].size());

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
    // torch cuts every name of 52 characters or more to 52 and "..." (here in code points, of the
    // name with its control characters escaped).
    const std::string& full = names[row];
    std::string name = utf8_columns(full) >= kMaxName - 3 ? std::string(utf8_prefix_columns(full, kMaxName - 3)) + "..."
                                                          : full;
    std::vector<std::string> cells = {name,
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
        ", \"device_row\": {}, \"annotation_row\": {}, \"calls\": {}, \"self_cpu_us\": {}, \"self_cpu_pct\": {}, \"cpu_total_us\": {}, "
        "\"cpu_total_pct\": {}, \"cpu_time_avg_us\": {}, \"self_device_us\": {}, \"self_device_pct\": {}, "
        "\"device_total_us\": {}, \"device_time_avg_us\": {}}}",
        r.device_row ? "true" : "false", r.annotation_row ? "true" : "false", r.calls, us(r.self_cpu_ns), pct(r.self_cpu_ns, t.self_cpu_total_ns),
        us(r.cpu_total_ns), pct(r.cpu_total_ns, t.self_cpu_total_ns), us(r.calls ? (r.cpu_total_ns + r.calls / 2) / r.calls : 0),
        us(r.self_device_ns), pct(r.self_device_ns, t.self_device_total_ns), us(r.device_total_ns),
        us(r.calls ? (r.device_total_ns + r.calls / 2) / r.calls : 0));
  }
  out += t.rows.empty() ? "]" : "\n]";
  return out;
}

}  // namespace attnprof::report
