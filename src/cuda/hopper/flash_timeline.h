#pragma once
// The sm90 tile-counter kernel's own timeline: its timeline build (TileCounterTraits<D, true>,
// flash_dispatch.cu) records, for each consumer warpgroup's pass over a query tile, the SM clock when
// the pass starts, when its Q is in shared memory, when its main loop ends and when its epilogue
// ends (the TMA store issued), with the SM and the key tiles visited; and, once per warpgroup of a
// CTA, the global timer beside the clock at its first start and at its end (a %globaltimer read
// costs hundreds of cycles: read per pass, it inflated the very gaps it measured). What no outside
// profiler shows: where a warp-specialised kernel's time goes inside one launch. Plain host code
// (decoding, summary, Chrome trace), tested without a GPU.
#include <cstdint>
#include <string>
#include <vector>

namespace attnprof::cuda::hopper {

// The kernel's words per (query tile, consumer warpgroup): meta (SM << 40 | warpgroup << 32 | key
// tiles), the clock at the pass's start, Q there, main loop end, epilogue end; then the global
// timer at the start (a warpgroup's first pass of its CTA only, else 0), the global timer and the
// clock at the warpgroup's end (its last pass only, else 0); then the producer's clock when it
// issued the tile's Q (or released the consumers of a tile that sees no key).
inline constexpr int kTimelineWords = 9;

struct FlashTileTiming {
  int tile = 0;  // position in the grid's tile order
  int sm = 0, consumer = 0, key_tiles = 0;
  std::uint64_t begin = 0, q_ready = 0, mainloop_end = 0, epilogue_end = 0;  // SM clock cycles
  std::uint64_t q_issued = 0;  // the producer's clock (the same SM's) when it issued this tile's Q
  // Global timer at the pass's start and epilogue end: the lane's anchors, the clocks between them
  // placed by the lane's cycles per ns.
  std::uint64_t begin_ns = 0, end_ns = 0;
};

// The kernel's words (kTimelineWords per record, record = tile · consumers + consumer) → timings.
// Throws Error for a record that was never written (all zero), whose clocks run backwards, or
// whose warpgroup's passes lack a start or an end anchor.
std::vector<FlashTileTiming> decode_flash_timeline(const std::vector<std::uint64_t>& words, int consumers);

struct FlashTimelineSummary {
  std::int64_t passes = 0, key_tiles = 0, sms = 0;
  // Means per pass, in SM cycles: start → Q there; main loop per key tile (Σ main loop / Σ key
  // tiles); epilogue; and from a warpgroup's previous pass end to its next start.
  double q_wait_cycles = 0, mainloop_cycles_per_key_tile = 0, epilogue_cycles = 0, between_cycles = 0;
  // The wait for Q over the passes after each lane's first (the first waits for the kernel's start);
  // how long before the warpgroup asked for it the producer issued the Q (negative: after); and
  // issue → the warpgroup past its wait (the load's latency, when it was issued late).
  double later_q_wait_cycles = 0, q_issue_lead_cycles = 0, q_issue_to_ready_cycles = 0;
  // Shares of the warpgroups' summed time from their first start to their last end.
  double share_q_wait = 0, share_mainloop = 0, share_epilogue = 0, share_between = 0;
  // By the global timer: first start to last end over all SMs; the SMs' idle share of that span
  // (before their first start and after their last end); last SM end − first SM end.
  double span_ns = 0, idle_share = 0, end_spread_ns = 0;
};

FlashTimelineSummary summarize_flash_timeline(const std::vector<FlashTileTiming>& timings);

// A few lines for a terminal; `tensor_core_cycles_per_key_tile`, when > 0, is printed beside the
// main loop's cost (the GEMMs' time at the SM's peak: 4·128·128·D / 4096 cycles on Hopper).
std::string flash_timeline_text(const FlashTimelineSummary& summary, double tensor_core_cycles_per_key_tile);

// A Chrome trace (Perfetto opens it): one process per SM, one thread per consumer warpgroup, each
// pass three slices ("wait for Q", "main loop", "epilogue") on the global timer, the clocks in
// between placed by the pass's own cycles-per-ns.
std::string flash_timeline_chrome_trace(const std::vector<FlashTileTiming>& timings);

}  // namespace attnprof::cuda::hopper
