#include "cuda/hopper/flash_timeline.h"

#include <attnprof/error.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <utility>

#include "core/json_dump.h"

namespace attnprof::cuda::hopper {

std::vector<FlashTileTiming> decode_flash_timeline(const std::vector<std::uint64_t>& words, int consumers) {
  if (consumers < 1 || words.size() % static_cast<std::size_t>(kTimelineWords * consumers) != 0)
    throw Error(fmt::format("flash timeline: {} words is not a whole number of {}-word records of {} warpgroups",
                            words.size(), kTimelineWords, consumers));
  struct Anchors {
    std::uint64_t begin_ns = 0, end_ns = 0, end_clock = 0;
  };
  std::vector<FlashTileTiming> out;
  std::vector<Anchors> anchors;
  out.reserve(words.size() / kTimelineWords);
  for (std::size_t r = 0; r * kTimelineWords < words.size(); ++r) {
    const std::uint64_t* w = words.data() + r * kTimelineWords;
    FlashTileTiming t;
    t.tile = static_cast<int>(r / static_cast<std::size_t>(consumers));
    t.consumer = static_cast<int>((w[0] >> 32) & 0xff);
    t.sm = static_cast<int>(w[0] >> 40);
    t.key_tiles = static_cast<int>(w[0] & 0xffffffffu);
    t.begin = w[1];
    t.q_ready = w[2];
    t.mainloop_end = w[3];
    t.epilogue_end = w[4];
    t.q_issued = w[8];
    if (t.begin == 0 || t.q_issued == 0)
      throw Error(fmt::format("flash timeline: tile {} warpgroup {} was never recorded", t.tile,
                              r % static_cast<std::size_t>(consumers)));
    if (t.consumer != static_cast<int>(r % static_cast<std::size_t>(consumers)) || t.q_ready < t.begin ||
        t.mainloop_end < t.q_ready || t.epilogue_end < t.mainloop_end || (w[7] != 0 && w[7] < t.epilogue_end) ||
        t.q_ready < t.q_issued)
      throw Error(fmt::format("flash timeline: tile {} warpgroup {} is inconsistent (clocks run backwards or the "
                              "record names warpgroup {})",
                              t.tile, r % static_cast<std::size_t>(consumers), t.consumer));
    out.push_back(t);
    anchors.push_back({w[5], w[6], w[7]});
  }
  // Each (SM, warpgroup) lane in clock order: runs of passes from a start anchor to an end anchor
  // (one per CTA that ran there), the clocks between placed linearly on the global timer.
  std::map<std::pair<int, int>, std::vector<std::size_t>> lanes;
  for (std::size_t i = 0; i < out.size(); ++i) lanes[{out[i].sm, out[i].consumer}].push_back(i);
  for (auto& [lane, passes] : lanes) {
    std::sort(passes.begin(), passes.end(), [&](std::size_t a, std::size_t b) { return out[a].begin < out[b].begin; });
    for (std::size_t first = 0; first < passes.size();) {
      const FlashTileTiming& start = out[passes[first]];
      if (anchors[passes[first]].begin_ns == 0)
        throw Error(fmt::format("flash timeline: SM {} warpgroup {}: tile {} starts its passes without a global-timer "
                                "anchor",
                                lane.first, lane.second, start.tile));
      std::size_t last = first;
      while (anchors[passes[last]].end_ns == 0) {
        ++last;
        if (last == passes.size() || anchors[passes[last]].begin_ns != 0)
          throw Error(fmt::format("flash timeline: SM {} warpgroup {}: the passes from tile {} have no end anchor",
                                  lane.first, lane.second, start.tile));
      }
      const Anchors& a0 = anchors[passes[first]];
      const Anchors& a1 = anchors[passes[last]];
      if (a1.end_ns < a0.begin_ns || a1.end_clock <= start.begin)
        throw Error(fmt::format("flash timeline: SM {} warpgroup {}: its anchors run backwards", lane.first,
                                lane.second));
      const double ns_per_cycle =
          static_cast<double>(a1.end_ns - a0.begin_ns) / static_cast<double>(a1.end_clock - start.begin);
      auto at_ns = [&](std::uint64_t clock) {
        return a0.begin_ns + static_cast<std::uint64_t>(static_cast<double>(clock - start.begin) * ns_per_cycle + 0.5);
      };
      for (std::size_t k = first; k <= last; ++k) {
        FlashTileTiming& t = out[passes[k]];
        t.begin_ns = at_ns(t.begin);
        t.end_ns = at_ns(t.epilogue_end);
      }
      first = last + 1;
    }
  }
  return out;
}

FlashTimelineSummary summarize_flash_timeline(const std::vector<FlashTileTiming>& timings) {
  FlashTimelineSummary s;
  if (timings.empty()) throw Error("flash timeline: no records");
  // Passes of one warpgroup of one SM, in the order they ran.
  std::map<std::pair<int, int>, std::vector<const FlashTileTiming*>> lanes;
  for (const FlashTileTiming& t : timings) lanes[{t.sm, t.consumer}].push_back(&t);
  double q_wait = 0, mainloop = 0, epilogue = 0, between = 0, lane_spans = 0, later_q_wait = 0, lead = 0,
         issue_to_ready = 0;
  std::int64_t gaps = 0;
  for (auto& [key, passes] : lanes) {
    std::sort(passes.begin(), passes.end(), [](const auto* a, const auto* b) { return a->begin < b->begin; });
    for (std::size_t i = 0; i < passes.size(); ++i) {
      const FlashTileTiming& t = *passes[i];
      q_wait += static_cast<double>(t.q_ready - t.begin);
      lead += static_cast<double>(t.begin) - static_cast<double>(t.q_issued);
      issue_to_ready += static_cast<double>(t.q_ready - t.q_issued);
      if (i > 0) later_q_wait += static_cast<double>(t.q_ready - t.begin);
      mainloop += static_cast<double>(t.mainloop_end - t.q_ready);
      epilogue += static_cast<double>(t.epilogue_end - t.mainloop_end);
      s.key_tiles += t.key_tiles;
      if (i > 0 && t.begin >= passes[i - 1]->epilogue_end) {
        between += static_cast<double>(t.begin - passes[i - 1]->epilogue_end);
        ++gaps;
      }
    }
    lane_spans += static_cast<double>(passes.back()->epilogue_end - passes.front()->begin);
  }
  s.passes = static_cast<std::int64_t>(timings.size());
  s.q_wait_cycles = q_wait / static_cast<double>(s.passes);
  s.epilogue_cycles = epilogue / static_cast<double>(s.passes);
  s.mainloop_cycles_per_key_tile = s.key_tiles > 0 ? mainloop / static_cast<double>(s.key_tiles) : 0.0;
  s.between_cycles = gaps > 0 ? between / static_cast<double>(gaps) : 0.0;
  const auto later_passes = static_cast<double>(s.passes - static_cast<std::int64_t>(lanes.size()));
  s.later_q_wait_cycles = later_passes > 0 ? later_q_wait / later_passes : 0.0;
  s.q_issue_lead_cycles = lead / static_cast<double>(s.passes);
  s.q_issue_to_ready_cycles = issue_to_ready / static_cast<double>(s.passes);
  if (lane_spans > 0) {
    s.share_q_wait = q_wait / lane_spans;
    s.share_mainloop = mainloop / lane_spans;
    s.share_epilogue = epilogue / lane_spans;
    s.share_between = between / lane_spans;
  }
  // Per SM, on the global timer.
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> sm_window;  // first start, last end
  for (const FlashTileTiming& t : timings) {
    auto [it, fresh] = sm_window.try_emplace(t.sm, t.begin_ns, t.end_ns);
    if (!fresh) {
      it->second.first = std::min(it->second.first, t.begin_ns);
      it->second.second = std::max(it->second.second, t.end_ns);
    }
  }
  s.sms = static_cast<std::int64_t>(sm_window.size());
  std::uint64_t first = UINT64_MAX, last = 0, first_end = UINT64_MAX;
  for (const auto& [sm, window] : sm_window) {
    first = std::min(first, window.first);
    last = std::max(last, window.second);
    first_end = std::min(first_end, window.second);
  }
  s.span_ns = static_cast<double>(last - first);
  s.end_spread_ns = static_cast<double>(last - first_end);
  if (s.span_ns > 0) {
    double idle = 0;
    for (const auto& [sm, window] : sm_window)
      idle += static_cast<double>((window.first - first) + (last - window.second));
    s.idle_share = idle / (s.span_ns * static_cast<double>(s.sms));
  }
  return s;
}

std::string flash_timeline_text(const FlashTimelineSummary& s, double tensor_core_cycles_per_key_tile) {
  std::string text = fmt::format(
      "{} passes (query tile × consumer warpgroup) on {} SMs, {} key tiles\n"
      "  per pass: wait for Q {:.0f} cycles, main loop {:.0f} cycles a key tile{}, epilogue {:.0f} cycles, "
      "{:.0f} cycles between passes\n"
      "  Q: {:.0f} cycles of wait after a warpgroup's first pass; issued {:.0f} cycles before the warpgroup asked "
      "for it, in shared memory {:.0f} cycles after its issue\n"
      "  warpgroup time: {:.1f}% waiting for Q, {:.1f}% main loop, {:.1f}% epilogue, {:.1f}% between passes\n"
      "  SMs: {:.1f} µs from the first start to the last end; {:.1f}% of it idle (before their first or after "
      "their last pass); the last SM ends {:.1f} µs after the first\n",
      s.passes, s.sms, s.key_tiles, s.q_wait_cycles, s.mainloop_cycles_per_key_tile,
      tensor_core_cycles_per_key_tile > 0
          ? fmt::format(" (the CTA's GEMMs at the tensor cores' peak: {:.0f})", tensor_core_cycles_per_key_tile)
          : std::string(),
      s.epilogue_cycles, s.between_cycles, s.later_q_wait_cycles, s.q_issue_lead_cycles, s.q_issue_to_ready_cycles,
      100 * s.share_q_wait, 100 * s.share_mainloop, 100 * s.share_epilogue,
      100 * s.share_between, s.span_ns / 1000, 100 * s.idle_share, s.end_spread_ns / 1000);
  return text;
}

std::string flash_timeline_chrome_trace(const std::vector<FlashTileTiming>& timings) {
  std::uint64_t origin = UINT64_MAX;
  for (const FlashTileTiming& t : timings) origin = std::min(origin, t.begin_ns);
  nlohmann::json events = nlohmann::json::array();
  for (const FlashTileTiming& t : timings) {
    const double cycles = static_cast<double>(t.epilogue_end - t.begin);
    const double ns = static_cast<double>(t.end_ns - t.begin_ns);
    const double ns_per_cycle = cycles > 0 ? ns / cycles : 0.0;
    auto at_us = [&](std::uint64_t clock) {
      return (static_cast<double>(t.begin_ns - origin) + static_cast<double>(clock - t.begin) * ns_per_cycle) / 1000;
    };
    auto slice = [&](const char* name, std::uint64_t from, std::uint64_t to) {
      events.push_back({{"ph", "X"},
                        {"name", name},
                        {"pid", t.sm},
                        {"tid", t.consumer},
                        {"ts", at_us(from)},
                        {"dur", at_us(to) - at_us(from)},
                        {"args", {{"tile", t.tile}, {"key tiles", t.key_tiles}, {"cycles", to - from}}}});
    };
    slice("wait for Q", t.begin, t.q_ready);
    slice("main loop", t.q_ready, t.mainloop_end);
    slice("epilogue", t.mainloop_end, t.epilogue_end);
  }
  nlohmann::json doc = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
  return dump_json(doc) + "\n";
}

}  // namespace attnprof::cuda::hopper
