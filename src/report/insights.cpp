#include "report/insights.h"

#include <attnprof/dtype.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "report/attention_calls.h"
#include "report/backward_insights.h"
#include "core/utf8.h"
#include "report/glance.h"
#include "report/insight_parts.h"
#include "report/named_ranges.h"
#include "report/occupancy.h"

namespace attnprof::report {

std::string format_duration_ns(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.1f} \u00b5s", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::string tflops_number(double tflops) {
  if (tflops >= 10) return fmt::format("{:.1f}", tflops);
  if (tflops >= 0.1) return fmt::format("{:.2f}", tflops);
  return fmt::format("{:.4f}", tflops);
}

std::string format_tflops(double tflops) { return tflops_number(tflops) + " TFLOP/s"; }

namespace {

using trace::Category;

std::string strip_aten(const std::string& name) { return name.rfind("aten::", 0) == 0 ? name.substr(6) : name; }

// Ops that exist to copy or to allocate: a copy below them is what they were asked for.
bool is_copy_op(const std::string& name) {
  static const std::set<std::string> kCopyOps = {"copy_", "clone", "to", "_to_copy", "contiguous", "empty", "empty_like",
                                                 "empty_strided", "as_strided", "expand", "copy", "type_as", "resize_"};
  return kCopyOps.count(strip_aten(name)) != 0;
}

// Ops that are views when they can be and copy when they cannot.
bool is_view_that_may_copy(const std::string& name) {
  static const std::set<std::string> kViews = {"reshape", "flatten", "unflatten", "view_as_real", "movedim"};
  return kViews.count(strip_aten(name)) != 0;
}

// The op a copy was done for: the first op above it that is not itself a copy op.
const trace::Event* copy_owner(const WorkItem& item) {
  for (const trace::Event* op : item.ops) {
    if (!is_copy_op(op->name)) return op;
  }
  return nullptr;
}

// True when every non-copy piece of work under `owner` ran in the owner itself or in its
// in-place twin (masked_fill → masked_fill_): an out-of-place op built as copy + in-place op,
// not a composite of many ops.
bool is_out_of_place_op(const trace::Event* owner, const Forward& forward) {
  const std::string name = owner->name;
  if (name.empty() || name.back() == '_') return false;
  const std::string twin = name + "_";
  int own_work = 0;
  for (const WorkItem& w : forward.work) {
    auto at = std::find(w.ops.begin(), w.ops.end(), owner);
    if (at == w.ops.end()) continue;
    if (w.kind == KernelClass::copy || w.kind == KernelClass::memcpy || w.kind == KernelClass::memset) continue;
    for (auto it = w.ops.begin(); it != at; ++it) {
      if ((*it)->name != twin && !is_copy_op((*it)->name)) return false;
    }
    ++own_work;
  }
  return own_work > 0;
}

std::string share_text(double part_ns, double whole_ns) {
  if (whole_ns <= 0) return {};
  const double percent = 100.0 * part_ns / whole_ns;
  if (percent < 1) return ", under 1% of the forward's work";
  return fmt::format(", {:.0f}% of the forward's work", percent);
}

bool name_or_ops_have(const WorkItem& w, std::string_view token) {
  if (has_name_token(w.event->name, token)) return true;
  return std::any_of(w.ops.begin(), w.ops.end(), [&](const trace::Event* op) { return has_name_token(op->name, token); });
}

bool contains_text(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

bool is_mask_building(const WorkItem& w) {
  const std::string& n = w.event->name;
  if (contains_text(n, "tril") || contains_text(n, "triu") || contains_text(n, "FillFunctor<bool>") ||
      has_name_token(n, "logical_not")) {
    return true;
  }
  for (const trace::Event* op : w.ops) {
    std::string o = strip_aten(op->name);
    if (o == "ones" || o == "ones_like" || o == "ones_bool" || o == "tril" || o == "triu" || o == "logical_not" ||
        o == "tril_" || o == "triu_") {
      return true;
    }
  }
  return has_name_token(n, "ones");
}

std::string mask_label(const WorkItem& w) {
  for (const trace::Event* op : w.ops) {
    std::string o = strip_aten(op->name);
    if (o == "ones" || o == "ones_like" || o == "ones_bool" || o.rfind("tril", 0) == 0 || o.rfind("triu", 0) == 0 ||
        o == "logical_not") {
      return op->name;
    }
  }
  return w.ops.empty() ? short_kernel_name(w.event->name) : w.ops.front()->name;
}

}  // namespace

namespace rules {

std::optional<Insight> hidden_copy(const TraceWork& work) {
  struct Found {
    std::map<std::string, int> memcpys;  // launches by short name ("Memcpy DtoD")
    int copy_kernels = 0;                // launches of copy kernels
    std::vector<std::string> copy_kernel_names;  // distinct, in launch order
    double ns = 0;
    std::int64_t bytes = 0;
    std::string path;
    bool out_of_place = false;
  };
  std::map<std::string, Found> by_owner;  // keyed by the owning op's name ("" for a bare device copy)
  std::vector<std::string> calls, kernels;
  double total_work_ns = 0;
  for (const Forward& f : work.forwards) {
    total_work_ns += static_cast<double>(f.work_ns);
    for (const WorkItem& w : f.work) {
      if (w.kind != KernelClass::copy && w.kind != KernelClass::memcpy) continue;
      const trace::Event* owner = copy_owner(w);
      bool out_of_place = owner != nullptr && is_out_of_place_op(owner, f);
      bool view_copy = owner != nullptr && is_view_that_may_copy(owner->name);
      bool bare_device_copy = owner == nullptr && w.kind == KernelClass::memcpy &&
                              contains_text(w.event->name, "DtoD");
      if (!out_of_place && !view_copy && !bare_device_copy) continue;
      Found& found = by_owner[owner ? owner->name : std::string()];
      if (w.kind == KernelClass::memcpy) {
        ++found.memcpys[short_kernel_name(w.event->name, 32)];
      } else {
        ++found.copy_kernels;
        add_unique(found.copy_kernel_names, w.event->name);
      }
      found.ns += static_cast<double>(w.event->dur_ns);
      if (w.event->bytes > 0) found.bytes = std::max(found.bytes, w.event->bytes);
      found.path = w.op_path();
      found.out_of_place = out_of_place;
      add_call(calls, f);
      add_unique(kernels, w.event->name);
    }
  }
  if (by_owner.empty()) return std::nullopt;
  const double n = forwards_count(work);
  // What copied, per forward: "Memcpy DtoD", "2 Memcpy DtoD", "a copy kernel", "3 copy kernels"
  // (launches), "4 launches of 2 copy kernels" (launches of distinct kernels).
  auto what_of = [n](const Found& found) {
    std::vector<std::string> what;
    for (const auto& [name, launches] : found.memcpys) {
      what.push_back(launches == n ? name : fmt::format("{} {}", format_percent(launches / n), name));
    }
    if (found.copy_kernels > 0) {
      const std::string launches = format_percent(found.copy_kernels / n);
      const std::size_t distinct = found.copy_kernel_names.size();
      if (distinct > 1) {
        what.push_back(fmt::format("{} launches of {} copy kernels", launches, distinct));
      } else {
        what.push_back(found.copy_kernels == n ? std::string("a copy kernel") : launches + " copy kernels");
      }
    }
    return join(what, ", ");
  };
  std::vector<std::string> parts;
  for (const auto& [owner, found] : by_owner) {
    std::string size = found.bytes > 0 ? format_bytes(static_cast<double>(found.bytes)) + ", " : std::string();
    std::string cost = fmt::format("{}{} per forward{}", size, format_duration_ns(found.ns / n),
                                   share_text(found.ns / n, total_work_ns / n));
    if (owner.empty()) {
      parts.push_back(fmt::format("a device-to-device copy inside the forward ({}{}{})", found.path,
                                  found.path.empty() ? "" : ": ", cost));
    } else if (found.out_of_place) {
      parts.push_back(fmt::format("{} is out of place: it copies its input first ({}, {}); {}_ would not",
                                  owner, what_of(found), cost, owner));
    } else {
      parts.push_back(fmt::format("{} could not return a view and copied ({}, {})", owner, what_of(found), cost));
    }
  }
  return Insight{"hidden_copy", join(parts, "; "), about_of(calls, kernels)};
}

std::optional<Insight> fp32_gemm_cuda_cores(const TraceWork& work) {
  std::vector<std::string> names, about;
  double slow_ns = 0, gemm_ns = 0, total_ns = 0;
  int slow = 0, gemms = 0;
  for (const Forward& f : work.forwards) {
    total_ns += static_cast<double>(f.work_ns);
    for (const WorkItem& w : f.work) {
      if (w.kind != KernelClass::gemm || w.event->category != Category::kernel) continue;
      ++gemms;
      gemm_ns += static_cast<double>(w.event->dur_ns);
      if (gemm_uses_tensor_cores(w.event->name)) continue;
      ++slow;
      slow_ns += static_cast<double>(w.event->dur_ns);
      add_unique(names, short_kernel_name(w.event->name, 60));
      add_unique(about, w.event->name);
    }
  }
  if (slow == 0) return std::nullopt;
  const double n = forwards_count(work);
  return Insight{"fp32_gemm_cuda_cores",
                 fmt::format("{} of {} GEMM kernels per forward have no tensor-core signature (fp32 FFMA on the CUDA "
                             "cores): {}; {} per forward{}",
                             format_percent(slow / n), format_percent(gemms / n), join(names, ", "),
                             format_duration_ns(slow_ns / n), share_text(slow_ns / n, total_ns / n)),
                 about};
}

std::optional<Insight> mask_rebuilt(const TraceWork& work) {
  if (work.forwards.empty()) return std::nullopt;
  std::vector<std::string> labels, calls, kernels;
  double ns = 0;
  int items = 0;
  for (const Forward& f : work.forwards) {
    bool built = false;
    for (const WorkItem& w : f.work) {
      if (!is_mask_building(w)) continue;
      built = true;
      ++items;
      ns += static_cast<double>(w.event->dur_ns);
      add_unique(labels, mask_label(w));
      add_call(calls, f);
      add_unique(kernels, w.event->name);
    }
    if (!built) return std::nullopt;  // built once, outside some forward: that is the cached mask
  }
  const double n = forwards_count(work);
  return Insight{"mask_rebuilt",
                 fmt::format("the mask is rebuilt in every forward ({}: {} kernels, {} per forward); it depends only "
                             "on the shape and could be built once",
                             join(labels, ", "), format_percent(items / n), format_duration_ns(ns / n)),
                 about_of(calls, kernels)};
}

std::optional<Insight> safe_softmax(const TraceWork& work) {
  std::vector<std::string> labels, calls, kernels;
  double ns = 0;
  int extras = 0;
  bool guard_seen = false;
  for (const Forward& f : work.forwards) {
    auto softmax = std::find_if(f.work.begin(), f.work.end(), [](const WorkItem& w) { return w.kind == KernelClass::softmax; });
    if (softmax == f.work.end()) continue;
    for (auto it = softmax + 1; it != f.work.end(); ++it) {
      if (it->kind == KernelClass::gemm || it->kind == KernelClass::attention || it->kind == KernelClass::softmax) break;
      bool guard = name_or_ops_have(*it, "isneginf") || name_or_ops_have(*it, "all") ||
                   contains_text(it->event->name, "and_kernel") || name_or_ops_have(*it, "where");
      bool inside_safe_softmax = std::any_of(it->ops.begin(), it->ops.end(), [](const trace::Event* op) {
        return contains_text(op->name, "safe_softmax");
      });
      if (!guard && !inside_safe_softmax) continue;
      if (name_or_ops_have(*it, "isneginf")) guard_seen = true;
      ++extras;
      ns += static_cast<double>(it->event->dur_ns);
      add_unique(labels, it->label());
      add_call(calls, f);
      add_unique(kernels, it->event->name);
    }
  }
  if (!guard_seen || extras == 0) return std::nullopt;
  const double n = forwards_count(work);
  return Insight{"safe_softmax",
                 fmt::format("{} extra kernels per forward after the softmax ({}) turn fully masked "
                             "rows into zeros instead of NaN; {} per forward",
                             format_percent(extras / n), join(labels, ", "), format_duration_ns(ns / n)),
                 about_of(calls, kernels)};
}

std::optional<Insight> s2_materialized(const TraceWork& work, const RunFacts& facts) {
  if (!facts.spec || !facts.peak_extra_bytes) return std::nullopt;
  // One kernel per forward hands no scores from op to op; its workspace can pass one S×S
  // matrix at tiny shapes (tiles per thread) without holding the scores.
  const bool single_kernel = !work.forwards.empty() && std::all_of(work.forwards.begin(), work.forwards.end(),
                                                                   [](const Forward& f) { return f.kernels() <= 1; });
  if (single_kernel && work.per_forward(KernelClass::memcpy) == 0 && !work.forwards.front().work.empty()) {
    return std::nullopt;
  }
  const AttentionSpec& s = *facts.spec;
  const double element = static_cast<double>(dtype_size(s.dtype));
  const double scores = static_cast<double>(s.batch) * static_cast<double>(s.heads) * static_cast<double>(s.seq_q) *
                        static_cast<double>(s.seq_k) * element;
  const double peak = static_cast<double>(*facts.peak_extra_bytes);
  if (scores <= 0 || peak < scores) return std::nullopt;
  std::vector<std::string> calls;
  for (const Forward& f : work.forwards) add_call(calls, f);
  return Insight{"s2_materialized",
                 fmt::format("peak extra memory {} ≥ one S×S score matrix, B·H·Sq·Sk·{:.0f} B = "
                             "{}·{}·{}·{}·{:.0f} B = {} ({:.2f}×)",
                             format_bytes(peak), element, s.batch, s.heads, s.seq_q, s.seq_k, element,
                             format_bytes(scores), peak / scores),
                 calls};
}

std::optional<Insight> single_fused_kernel(const TraceWork& work) {
  if (work.forwards.empty()) return std::nullopt;
  const WorkItem* kernel = nullptr;
  std::vector<std::string> calls, kernels;
  double ns = 0;
  int memsets = 0;
  for (const Forward& f : work.forwards) {
    if (f.kernels() != 1 || f.count(KernelClass::memcpy) != 0) return std::nullopt;
    memsets += f.count(KernelClass::memset);
    add_call(calls, f);
    for (const WorkItem& w : f.work) {
      if (w.kind == KernelClass::memset) continue;
      kernel = &w;
      ns += static_cast<double>(w.event->dur_ns);
      add_unique(kernels, w.event->name);
    }
  }
  const double n = forwards_count(work);
  std::string extra = memsets > 0 ? fmt::format(" (plus {} memset per forward)", format_percent(memsets / n)) : "";
  std::string why = kernel->kind == KernelClass::attention ? "; no S×S scores are written to memory" : "";
  return Insight{"single_fused_kernel", fmt::format("one kernel per forward{}: {} ({} per forward){}", extra,
                                                    short_kernel_name(kernel->event->name, 60),
                                                    format_duration_ns(ns / n), why),
                 about_of(calls, kernels)};
}

std::optional<Insight> cpu_bound(const TraceWork& work, const RunFacts& facts) {
  const bool gpu = work.gpu || (facts.spec && facts.spec->device == Device::cuda);
  if (!gpu) return std::nullopt;
  const double cpu = facts.cpu_ns_per_forward.value_or(work.cpu_ns_per_forward());
  const double device = facts.device_ns_per_forward.value_or(work.busy_ns_per_forward());
  if (cpu <= 0 || device <= 0 || cpu <= device) return std::nullopt;
  std::vector<std::string> ranges;
  for (const Forward& f : work.forwards) add_call(ranges, f);
  return Insight{"cpu_bound", fmt::format("{} of CPU per forward against {} on the GPU ({:.1f}×); the GPU "
                                          "waits for launches",
                                          format_duration_ns(cpu), format_duration_ns(device), cpu / device),
                 ranges};
}

std::optional<Insight> nan_output(const RunFacts& facts) {
  if (!facts.nan_output) return std::nullopt;
  if (facts.nan_only_in_masked_rows) {
    std::string where = "rows that see no key";
    if (facts.spec) {
      const AttentionSpec& s = *facts.spec;
      where = fmt::format("the first {} query rows of each head see no key ({}, seq {} > seq-k {})",
                          std::min(s.seq_q, s.seq_q - s.seq_k), causal_align_name(s.causal_align), s.seq_q, s.seq_k);
    }
    return Insight{"nan_output",
                   fmt::format("{} of {} fully masked rows are NaN: {}, and softmax over an all −inf row is "
                               "NaN, as in PyTorch's naive module (expected; math and the fused kernels give 0); "
                               "err is over the rows that see a key",
                               facts.masked_rows_nan, facts.masked_rows, where),
                   {}};
  }
  return Insight{"nan_output", "the output holds NaN or Inf, so its error against fp64 is undefined", {}};
}

std::optional<Insight> one_time_setup(double setup_ns, double device_ns_per_forward) {
  if (!(setup_ns >= kNotableSetupNs)) return std::nullopt;
  std::string text = fmt::format("{:.1f} ms of one-time setup before the first forward (prepare: a plan build, a "
                                 "mask), in none of the per-forward times",
                                 setup_ns / 1e6);
  if (device_ns_per_forward > 0)
    text += fmt::format("; as long as {:.0f} forwards", setup_ns / device_ns_per_forward);
  return Insight{"one_time_setup", text, {}};
}

}  // namespace rules

std::optional<std::int64_t> peak_extra_from_memory_events(const trace::Trace& trace, const TraceWork& work) {
  std::optional<std::int64_t> best;
  for (const Forward& f : work.forwards) {
    if (f.end_ns <= f.start_ns) continue;  // the whole trace: no forward to measure from
    std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> by_device;  // device -> (start, peak)
    for (const trace::Event& e : trace.events) {
      if (e.category != Category::cpu_instant_event || e.total_allocated < 0 || e.bytes == -1) continue;
      if (e.ts_ns < f.start_ns || e.ts_ns > f.end_ns) continue;
      auto [it, fresh] = by_device.try_emplace(e.device, e.total_allocated - e.bytes, e.total_allocated);
      if (!fresh) it->second.second = std::max(it->second.second, e.total_allocated);
      it->second.second = std::max(it->second.second, e.total_allocated);
    }
    for (const auto& [device, range] : by_device) {
      std::int64_t extra = range.second - range.first;
      if (!best || extra > *best) best = extra;
    }
  }
  return best;
}

std::string insights_text(const std::vector<Insight>& insights, std::size_t width) {
  if (insights.empty()) return {};
  std::string out = "what the trace revealed:\n";
  for (const Insight& i : insights) {
    std::vector<std::string> lines = wrap_text(printable(i.code + ": " + i.text), width > 4 ? width - 4 : width);
    // The names the sentence leaves out follow it, so the text names all the insight is about.
    std::vector<std::string> unnamed;
    for (const std::string& name : i.about) {
      const std::string shown = short_kernel_name(name, 60);
      if (i.text.find(shown) == std::string::npos) add_unique(unnamed, shown);
    }
    if (!unnamed.empty()) {
      for (std::string& line : wrap_text(printable("about: " + join(unnamed, ", ")), width > 4 ? width - 4 : width))
        lines.push_back(std::move(line));
    }
    for (std::size_t l = 0; l < lines.size(); ++l) out += (l == 0 ? "  - " : "    ") + lines[l] + "\n";
  }
  return out;
}

nlohmann::json insights_json(const std::vector<Insight>& insights) {
  nlohmann::json out = nlohmann::json::array();
  for (const Insight& i : insights) out.push_back({{"code", i.code}, {"text", i.text}, {"about", i.about}});
  return out;
}

std::optional<DType> dtype_from_type_name(const std::string& name) {
  if (name == "c10::BFloat16" || name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "c10::Half" || name == "fp16" || name == "half" || name == "float16") return DType::fp16;
  if (name == "float" || name == "fp32" || name == "float32") return DType::fp32;
  return std::nullopt;
}

std::optional<AttentionSpec> spec_from_trace(const trace::Trace& trace, const TraceWork& work) {
  for (const trace::Event& e : trace.events) {
    if (e.category != Category::cpu_op || e.input_dims.empty()) continue;
    bool inside = work.forwards.empty() || work.forwards.front().range == nullptr;
    for (const Forward& f : work.forwards) {
      if (f.range && e.ts_ns >= f.range->ts_ns && e.ts_ns < f.range->end_ns()) inside = true;
    }
    if (!inside) continue;
    nlohmann::json dims = nlohmann::json::parse(e.input_dims, nullptr, /*allow_exceptions=*/false);
    if (!dims.is_array() || dims.size() < 2 || !dims[0].is_array() || !dims[1].is_array() || dims[0].size() != 4 ||
        dims[1].size() != 4) {
      continue;
    }
    auto at = [&](int input, int axis) { return dims[input][axis].is_number_integer() ? dims[input][axis].get<std::int64_t>() : 0; };
    AttentionSpec spec;
    spec.batch = at(0, 0);
    spec.heads = at(0, 1);
    spec.seq_q = at(0, 2);
    spec.head_dim = at(0, 3);
    spec.kv_heads = at(1, 1);
    spec.seq_k = at(1, 3) == spec.head_dim ? at(1, 2) : at(1, 3);
    if (spec.batch <= 0 || spec.heads <= 0 || spec.seq_q <= 0 || spec.seq_k <= 0 || spec.head_dim <= 0) continue;
    nlohmann::json types = nlohmann::json::parse(e.input_types, nullptr, false);
    std::optional<DType> dtype;
    if (types.is_array() && !types.empty() && types[0].is_string()) dtype = dtype_from_type_name(types[0].get<std::string>());
    if (!dtype) continue;
    spec.dtype = *dtype;
    spec.device = work.gpu ? Device::cuda : Device::cpu;
    return spec;
  }
  return std::nullopt;
}

namespace {
// The forwards are ranges of the names asked for, not the ProfilerStep#N fallback.
bool has_forward_ranges(const TraceWork& work, const std::vector<std::string>& range_names) {
  return !work.forwards.empty() && work.forwards.front().range != nullptr &&
         is_named_range(work.forwards.front().range->category, work.forwards.front().range->name, range_names);
}

}  // namespace

FoundCalls attention_call_windows(const trace::Trace& trace, AttentionPass pass) {
  const Timeline timeline = Timeline::of(trace);
  FoundCalls out;
  std::set<long> steps;
  for (const AttentionCall& c : find_attention(timeline).calls) {
    if (c.pass != pass) continue;
    const std::string& key = timeline.track_key(c.track);
    const std::size_t sep = key.find('\x1f');
    out.windows.push_back(WorkWindow{c.op, key.substr(0, sep), key.substr(sep + 1), c.start_ns, c.end_ns});
    if (c.step >= 0) steps.insert(c.step);
    const AttentionShape& s = c.shape;
    if (out.spec || !s.batch || !s.heads || !s.kv_heads || !s.seq_q || !s.seq_k || !s.head_dim) continue;
    AttentionSpec spec;
    spec.batch = *s.batch;
    spec.heads = *s.heads;
    spec.kv_heads = *s.kv_heads;
    spec.seq_q = *s.seq_q;
    spec.seq_k = *s.seq_k;
    spec.head_dim = *s.head_dim;
    if (auto dtype = dtype_from_type_name(c.dtype)) spec.dtype = *dtype;
    else continue;
    if (c.causal) spec.causal = *c.causal;
    out.causal_known = c.causal.has_value();
    out.spec = spec;
  }
  out.steps = static_cast<int>(steps.size());
  return out;
}

std::vector<Insight> derive_insights(const trace::Trace& trace, const RunFacts& facts) {
  return derive_insights(trace, facts, default_range_names());
}

std::vector<Insight> derive_insights(const trace::Trace& trace, const RunFacts& facts,
                                     const std::vector<std::string>& range_names) {
  // General rules read every forward range (attnprof's attn_fwd, or the ranges named), else every
  // step, else the whole trace. Attention rules read attention only: those ranges where the trace
  // has them, else the forward attention calls found in it, so on a model's trace they speak of
  // its attention calls alone, and on a trace without attention they say nothing.
  const TraceWork work = collect_forwards(trace, range_names);
  const bool ranges = has_forward_ranges(work, range_names);
  RunFacts known = facts;
  TraceWork attention;
  if (ranges) {
    attention = work;
    if (!known.spec) known.spec = spec_from_trace(trace, work);
  } else {
    FoundCalls calls = attention_call_windows(trace, AttentionPass::forward);
    attention = collect_windows(trace, calls.windows);
    if (!known.spec) known.spec = calls.spec;
  }
  if (!known.peak_extra_bytes) known.peak_extra_bytes = peak_extra_from_memory_events(trace, attention);
  std::vector<Insight> out;
  auto add = [&](std::optional<Insight> insight) {
    if (insight) out.push_back(std::move(*insight));
  };
  add(rules::hidden_copy(attention));
  add(rules::fp32_gemm_cuda_cores(work));
  add(rules::mask_rebuilt(attention));
  add(rules::safe_softmax(attention));
  add(rules::s2_materialized(attention, known));
  add(rules::single_fused_kernel(attention));
  add(rules::low_occupancy_by_design(trace, work));
  add(rules::low_occupancy(trace, work));
  add(rules::occupancy_recorded_zero(trace, work));
  add(rules::warp_specialized(trace, attention));
  add(rules::split_kv_decode(attention, known));
  // The backward's rules read attn_bwd ranges, else the backward attention calls.
  for (Insight& i : derive_backward_insights(trace, facts)) out.push_back(std::move(i));
  // CPU against GPU time per forward says "the GPU waits for launches" only of the named ranges: a
  // model's step also holds data loading, Python and the profiler's own overhead.
  if (ranges || facts.cpu_ns_per_forward) add(rules::cpu_bound(work, known));
  add(rules::nan_output(known));
  return out;
}

}  // namespace attnprof::report
