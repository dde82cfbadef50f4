// The insights about split-KV decoding: rules::split_kv_decode (from the trace) and
// decode_bandwidth (the run's K/V rate against the copy ceiling).
#include "report/decode_insights.h"

#include <attnprof/dtype.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "report/insight_parts.h"
#include "report/interval_union.h"
#include "report/kernel_class.h"
#include "report/occupancy.h"

namespace attnprof::report {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool is_split_kv(const std::string& name) {
  const std::string n = lower(name);
  return classify_kernel(name) == KernelClass::attention &&
         (n.find("splitkv") != std::string::npos || n.find("split_kv") != std::string::npos);
}

bool is_combine(const std::string& name) { return lower(name).find("combine") != std::string::npos; }

bool is_ours(const std::string& name) { return lower(name).find("attnprof::") != std::string::npos; }

// Whether argument `index` (from 0) of attnprof's DecodeGeometry<...> in a kernel name is true:
// `true` as __cxa_demangle writes it, or `(bool)1` / `1` as other tools print template arguments.
bool geometry_flag(const std::string& name, int index) {
  const std::string n = lower(name);
  const std::size_t open = n.find("decodegeometry<");
  if (!is_ours(name) || open == std::string::npos) return false;
  const std::size_t close = n.find('>', open);
  std::size_t at = open;
  for (int field = 0; field < index; ++field) {  // past the index-th comma
    const std::size_t comma = n.find(',', at);
    if (comma == std::string::npos || comma > close) return false;
    at = comma + 1;
  }
  while (at < close && n[at] == ' ') ++at;
  std::size_t end = at;
  while (end < close && n[end] != ',') ++end;
  std::string value = n.substr(at, end - at);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value == "true" || value == "(bool)1" || value == "1";
}

// attnprof's kernel on a persistent grid (its DecodeGeometry's 5th argument true): SMs × CTAs per
// SM looping over the (column, split) items, so the grid does not show the split count.
bool is_persistent(const std::string& name) { return geometry_flag(name, 4); }

// attnprof's kernel whose items of 2 splits (decode_plan.h's kDecodeMaxClusterSplits) run as one
// thread block cluster each, the first CTA reading the others' partial rows from their shared
// memory (its DecodeGeometry's 7th argument true).
bool merges_in_clusters(const std::string& name, std::int64_t splits) { return geometry_flag(name, 6) && splits == 2; }

// The split count, from the grid's y, for the kernels whose grid is known to put it there:
// attnprof's (x: batch · kv head · row block, y: split; not on a persistent grid) and
// FlashAttention 2's (x: query block, y: split, z: batch · head, when it splits at all).
std::optional<std::int64_t> splits_of(const trace::Event& kernel) {
  if (!kernel.launch || is_persistent(kernel.name)) return std::nullopt;
  const std::string n = lower(kernel.name);
  if (!is_ours(kernel.name) && n.find("flash_fwd_splitkv_kernel") == std::string::npos)
    return std::nullopt;
  return kernel.launch->grid[1];
}

std::string rate_text(double bytes, double ns) { return fmt::format("{:.2f} TB/s", bytes / ns / 1e3); }

}  // namespace

double decode_kv_bytes(const AttentionSpec& s) {
  const std::int64_t keys = s.causal ? std::clamp<std::int64_t>(s.seq_q + s.causal_offset(), 0, s.seq_k) : s.seq_k;
  return 2.0 * static_cast<double>(s.batch) * static_cast<double>(s.kv_heads) * static_cast<double>(keys) *
         static_cast<double>(s.head_dim) * static_cast<double>(dtype_size(s.dtype));
}

namespace rules {

std::optional<Insight> split_kv_decode(const TraceWork& work, const RunFacts& facts) {
  const trace::Event* split = nullptr;
  const trace::Event* combine = nullptr;
  // Times summed over the forwards, each forward's the union of its intervals
  // (report/interval_union.h): the split kernels', the combine kernels', and the time the combine
  // kernels add to the forward's busy time (Forward::busy_ns, the union of all its work) beyond the
  // rest of its work (a combine launched with programmatic dependent launch starts while the split
  // kernel still runs and waits inside it).
  double split_ns = 0, combine_ns = 0, combine_adds_ns = 0, busy_ns = 0;
  std::vector<std::string> calls, kernels;
  for (const Forward& f : work.forwards) {
    bool here = false;
    std::vector<Interval> splits, combines, others;
    for (const WorkItem& w : f.work) {
      const Interval interval{w.event->ts_ns, w.event->end_ns()};
      if (w.event->category != trace::Category::kernel || !is_split_kv(w.event->name)) {
        others.push_back(interval);  // every item busy_ns covers, CPU kernels included
        continue;
      }
      here = true;
      add_unique(kernels, w.event->name);
      if (is_combine(w.event->name)) {
        if (!combine) combine = w.event;
        combines.push_back(interval);
      } else {
        if (!split) split = w.event;
        splits.push_back(interval);
        others.push_back(interval);
      }
    }
    busy_ns += static_cast<double>(f.busy_ns);
    if (!here) continue;
    add_call(calls, f);
    split_ns += static_cast<double>(union_ns(splits));
    combine_ns += static_cast<double>(union_ns(combines));
    combine_adds_ns += static_cast<double>(f.busy_ns - union_ns(std::move(others)));
  }
  if (!split) return std::nullopt;
  const double n = forwards_count(work);
  const double forward_ns = facts.device_ns_per_forward.value_or(work.busy_ns_per_forward());
  std::string text = short_kernel_name(split->name, 60) + ": split-KV decoding";
  if (auto splits = splits_of(*split)) {
    const auto& g = split->launch->grid;
    const auto& b = split->launch->block;
    text += fmt::format(", the keys in {} split{} (the grid's y), {} CTAs of {} threads", *splits, *splits == 1 ? "" : "s",
                        group_digits(g[0] * g[1] * g[2]), b[0] * b[1] * b[2]);
  }
  text += fmt::format(" ({} per forward)", format_duration_ns(split_ns / n));
  if (combine) {
    // Its share of the forward is the time it adds to the trace's own busy time (so it never
    // exceeds it, whatever the run's median says); when it overlaps other work (the split kernel
    // under programmatic dependent launch), both its time and the time it adds are named.
    std::string share;
    if (busy_ns > 0) {
      const std::string percent = format_percent(100.0 * combine_adds_ns / busy_ns);
      share = combine_adds_ns < 0.99 * combine_ns
                  ? fmt::format(", {} of it after the other work: {}% of the forward", format_duration_ns(combine_adds_ns / n), percent)
                  : fmt::format(", {}% of the forward", percent);
    }
    text += fmt::format("; {} merges the splits' partial outputs by their log-sum-exp ({} per forward{})",
                        short_kernel_name(combine->name, 60), format_duration_ns(combine_ns / n), share);
  } else {
    const std::optional<std::int64_t> splits = splits_of(*split);
    if (splits && *splits == 1)
      text += "; no combine kernel: each CTA wrote its rows of O itself";
    else if (splits && merges_in_clusters(split->name, *splits))
      text += fmt::format("; no combine kernel: the {} CTAs of each (batch, kv head, row block) run as one thread "
                          "block cluster, and the first reads the others' partial outputs from their shared memory "
                          "(distributed shared memory), merges them by their log-sum-exp and writes O",
                          *splits);
    else if (splits && is_ours(split->name))
      text += "; no combine kernel: the merge is in the split kernel, where the last CTA of each (batch, kv head, row "
              "block) to finish merges the splits' partial outputs by their log-sum-exp and writes O";
    else if (is_persistent(split->name))
      text += "; a persistent grid (SMs × CTAs per SM looping over the work: the split count is not in the grid), no "
              "combine kernel: with several splits the merge is in the split kernel, where the last CTA of each (batch, "
              "kv head, row block) to finish merges the splits' partial outputs by their log-sum-exp and writes O";
    else
      text += "; no combine kernel in the trace";
  }
  if (facts.spec && forward_ns > 0 && split_ns > 0) {
    const double bytes = decode_kv_bytes(*facts.spec);
    text += fmt::format("; K and V, {} per forward, read at {} over the forward ({} in the split kernel alone)",
                        format_bytes(bytes), rate_text(bytes, forward_ns), rate_text(bytes, split_ns / n));
  }
  return Insight{"split_kv_decode", text, about_of(calls, kernels)};
}

}  // namespace rules

std::optional<Insight> decode_bandwidth(const std::vector<Insight>& insights, const RunResult& result,
                                        const Ceilings& ceilings) {
  const auto decode = std::find_if(insights.begin(), insights.end(),
                                   [](const Insight& i) { return i.code == "split_kv_decode"; });
  if (decode == insights.end() || ceilings.copy_gbps <= 0 || result.median_ns <= 0) return std::nullopt;
  const double bytes = decode_kv_bytes(result.spec);
  const double gbps = bytes / result.median_ns;
  return Insight{"decode_bandwidth",
                 fmt::format("K and V ({} per forward) read at {:.0f} GB/s over the median forward of {}: {}% of the "
                             "measured copy ceiling, {:.0f} GB/s ({}, read + write)",
                             format_bytes(bytes), gbps, format_duration_ns(result.median_ns),
                             format_percent(100.0 * gbps / ceilings.copy_gbps), ceilings.copy_gbps, ceilings.copy_what),
                 decode->about};  // the calls and kernels split_kv_decode read
}

}  // namespace attnprof::report
