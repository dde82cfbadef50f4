// attnprof sweep: run_variant over a grid of sequence lengths, head dims and variants; results
// as DIR/<sweep_stem>.csv and .json (run/trace_stem.h), rewritten whole after every point.
#include <attnprof/error.h>
#include <attnprof/run.h>
#include <attnprof/variant.h>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/parameter_flags.h"
#include "cli/run_flags.h"
#include "run/preflight.h"
#include "run/run_pass.h"
#include "cli/shape_flags.h"
#include "core/atomic_file.h"
#include "core/utf8.h"
#include "report/ceilings.h"
#include "run/ceilings_measure.h"
#include "report/sweep.h"
#include "run/sweep.h"
#include "run/trace_stem.h"

namespace attnprof::cli {
namespace {

struct SweepArgs {
  std::string seqs = "512,1024,...,16384";
  std::optional<std::string> seq_ks;  // absent: each point's seq_k is its seq
  std::string head_dims = "64";
  std::optional<std::string> variants;  // absent: every variant the device supports
  std::string device;    // empty: cuda when a GPU is present, else cpu
  std::optional<std::int64_t> batch;  // default: 8 on a GPU, 1 on the CPU
  std::int64_t heads = 16;
  std::optional<std::int64_t> kv_heads;  // default: same as heads
  std::string dtype = "bf16";
  bool no_causal = false;
  std::optional<std::string> causal_align;  // a no-op at seq = seq-k, checked and recorded all the same
  std::string layout = "bhsd";
  int threads = 0;
  std::int64_t seed = 0;
  bool no_profile = false;
  int forwards = 10;  // measured per point: the profiler's active steps, or timed forwards with --no-profile
  double min_time = kDefaultMinTimeS;  // seconds a point's kept forwards fill at least
  std::string out = "sweep";
  std::string pass = "forward";
};

// Unknown variant or its refusal (of the spec, or of the pass) → "refused"; over the free memory → "skipped".
std::optional<report::SweepRecord> precheck_point(const report::SweepPoint& point, Pass pass) {
  const Variant* variant = find_variant(point.variant);
  if (!variant) {
    return report::record_not_run(point, "refused", fmt::format("unknown variant; allowed: {}", variant_names()));
  }
  if (auto refusal = variant->refusal(point.spec)) {
    return report::record_not_run(point, "refused", name_flags(*refusal));
  }
  if (auto refusal = pass_refusal(*variant, point.spec, pass)) {
    return report::record_not_run(point, "refused", name_flags(*refusal));
  }
  const std::int64_t needed = estimate_run_bytes(point.spec, *variant, pass);
  if (auto reason = report::memory_skip_reason(needed, free_device_bytes(point.spec.device))) {
    return report::record_not_run(point, "skipped", *reason);
  }
  return std::nullopt;
}

int run_sweep_command(const SweepArgs& args) {
  const Pass pass = parse_pass(args.pass);
  AttentionSpec base;
  base.device = args.device.empty() ? default_device() : parse_device(args.device);
  base.batch = args.batch.value_or(base.device == Device::cuda ? 8 : 1);
  base.heads = args.heads;
  base.kv_heads = args.kv_heads.value_or(args.heads);
  if (args.seed < 0) throw UsageError(fmt::format("--seed: must be a non-negative integer (got {})", args.seed));
  if (args.forwards < 1 || args.forwards > 1000) {
    throw UsageError(fmt::format("--forwards: must be 1..1000 (got {})", args.forwards));
  }
  apply_threads(args.threads);
  base.dtype = parse_dtype(args.dtype);
  base.causal = !args.no_causal;
  base.causal_align = causal_align_from_flags(args.causal_align, base.causal);
  base.layout = parse_layout(args.layout);

  const std::vector<std::int64_t> seqs = report::parse_int_list(args.seqs, "seq_q");
  const std::vector<std::int64_t> seq_ks =
      args.seq_ks ? report::parse_int_list(*args.seq_ks, "seq_k") : std::vector<std::int64_t>{};
  const std::vector<std::int64_t> head_dims = report::parse_int_list(args.head_dims, "head_dim");
  std::vector<std::string> variants;
  if (args.variants) {
    variants = parse_variant_list(*args.variants);
  } else {
    AttentionSpec probe = base;
    probe.seq_q = seqs.front();
    probe.seq_k = seq_ks.empty() ? seqs.front() : seq_ks.front();
    probe.head_dim = head_dims.front();
    for (Variant* v : all_variants()) {
      if (!v->refusal(probe) && !pass_refusal(*v, probe, pass)) variants.emplace_back(v->name());
    }
  }
  for (std::int64_t s : seqs) {
    for (std::int64_t k : seq_ks.empty() ? std::vector<std::int64_t>{s} : seq_ks) {
      AttentionSpec check = base;
      check.seq_q = s;
      check.seq_k = k;
      for (std::int64_t d : head_dims) {
        check.head_dim = d;
        check.validate();
      }
    }
  }
  const std::size_t keys = std::max<std::size_t>(seq_ks.size(), 1);
  const std::size_t grid = seqs.size() * keys * head_dims.size() * std::max<std::size_t>(variants.size(), 1);
  if (grid > report::kMaxSweepPoints) {
    throw UsageError(fmt::format("--seq, --seq-k, --head-dim, --variants: {} values x {} x {} x {} variants is {} "
                                 "points; allowed: at most {} points in a sweep",
                                 seqs.size(), keys, head_dims.size(), variants.size(), grid, report::kMaxSweepPoints));
  }
  apply_threads(args.threads);

  RunOptions options;
  options.pass = pass;
  options.threads = args.threads;
  options.seed = static_cast<std::uint64_t>(args.seed);
  options.profile = !args.no_profile;
  options.schedule.active = args.forwards;
  options.timed_forwards = args.forwards;
  options.min_time_s = checked_min_time(args.min_time);
  options.out_dir = args.no_profile ? std::string() : args.out;  // traces and tables beside the sweep's results, as compare's
  // Every output problem is found before anything is printed or made; the directory is made
  // when the first point's files are written.
  check_writable_directory(args.out, "--out");
  install_signal_cleanup();
  RunOptions named = options;
  named.spec = base;
  const std::string stem =
      sweep_stem(named, seqs, head_dims, args.variants ? variants : std::vector<std::string>{}, seq_ks);

  const report::Ceilings& ceilings = measured_ceilings(base.device);
  std::printf("ceilings: %s\n", report::ceilings_text(ceilings).c_str());

  const bool terminal = isatty(fileno(stderr)) != 0;
  SweepHooks hooks;
  hooks.run = [](const RunOptions& o) {
    try {
      return run_variant(o);
    } catch (const UsageError& e) {  // recorded as the point's reason: name flags, as printed errors do
      throw UsageError(name_flags(e.what()));
    }
  };
  hooks.precheck = [pass](const report::SweepPoint& point) { return precheck_point(point, pass); };
  hooks.checkpoint = [&](const std::vector<report::SweepRecord>& records) {
    report::write_sweep_files(args.out, records, ceilings, stem);
  };
  bool above_noted = false;  // a ceiling measured too low is said once, on the first point above it
  hooks.progress = [&](std::size_t done, std::size_t total, const report::SweepRecord& record) {
    std::string line = report::progress_line(done, total, record, terminal);
    const std::string above = report::above_ceiling_note(ceilings, record.point.spec.dtype, record.tflops);
    if (!above.empty() && !above_noted) {
      line += fmt::format("\n  {} S={}: {}", record.point.variant, record.point.spec.seq_q, above);
      above_noted = true;
    }
    if (terminal) {
      std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), done == total ? "\n" : "");
    } else {
      std::printf("%s\n", line.c_str());
    }
    std::fflush(terminal ? stderr : stdout);
  };
  auto points = report::sweep_grid(base, seqs, head_dims, variants, seq_ks);
  for (report::SweepPoint& point : points) point.pass = pass;
  const auto records = run_sweep(points, options, ceilings, hooks);
  if (records.empty()) report::write_sweep_files(args.out, records, ceilings, stem);

  int ok = 0, skipped = 0, refused = 0, failed = 0;
  for (const auto& r : records) {
    if (r.status == "ok") ++ok;
    if (r.status == "skipped") ++skipped;
    if (r.status == "refused") ++refused;
    if (r.status == "failed") {
      ++failed;
      std::fprintf(stderr, "attnprof: %s S=%lld D=%lld failed: %s\n", r.point.variant.c_str(),
                   static_cast<long long>(r.point.spec.seq_q), static_cast<long long>(r.point.spec.head_dim),
                   printable(r.reason).c_str());
    }
  }
  std::printf("wrote %s/%s.csv and .json: %zu points, %d run, %d skipped for memory, %d refused, %d failed\n",
              args.out.c_str(), stem.c_str(), records.size(), ok, skipped, refused, failed);
  return failed > 0 ? 1 : 0;
}

}  // namespace

Command add_sweep(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* sub = app.add_subcommand("sweep", "Run variants over a grid of sequence lengths and head dims; CSV and JSON");
  sub->add_option("--seq", args->seqs, "Sequence lengths, e.g. 512,1024,...,16384 ('...' continues a doubling)")
      ->capture_default_str();
  sub->add_option("--seq-k", args->seq_ks,
                  "Key lengths, each run with every --seq (default: each point's --seq), e.g. --seq 1 --seq-k "
                  "4096,8192,...,131072 for decode against a KV cache");
  sub->add_option("--head-dim", args->head_dims, "Head dims, e.g. 64,128")->capture_default_str();
  sub->add_option("--variants", args->variants, "Comma-separated variants (default: every one the device supports)");
  sub->add_option("--device", args->device, "cpu or cuda (default: cuda when a GPU is present)");
  sub->add_option("--batch", args->batch, "Batch (default: 8 on a GPU, 1 on the CPU)")->check(strict_integer());
  sub->add_option("--heads", args->heads, "Query heads")->capture_default_str()->check(strict_integer());
  sub->add_option("--kv-heads", args->kv_heads, "Key/value heads (default: --heads)")->check(strict_integer());
  sub->add_option("--dtype", args->dtype, "bf16, fp16 or fp32")->capture_default_str();
  sub->add_flag("--no-causal", args->no_causal, "Attend to every key (default: causal)");
  add_causal_align_flag(*sub, args->causal_align);
  sub->add_option("--layout", args->layout, "bhsd or bshd")->capture_default_str();
  sub->add_option("--threads", args->threads, "CPU threads (0: all cores)")->check(strict_integer());
  sub->add_option("--seed", args->seed, "Input seed")->check(strict_integer());
  sub->add_flag("--no-profile", args->no_profile, "Time without the profiler (no traces, no kernel counts)");
  sub->add_option("--forwards", args->forwards,
                  "Forwards measured per point (profiled steps, or timed ones with --no-profile); times are their "
                  "median and spread")
      ->capture_default_str()
      ->check(strict_integer());
  add_min_time_option(*sub, args->min_time, "--forwards");
  add_pass_flag(*sub, args->pass);
  sub->add_option("--out", args->out, "Directory for the results (sweep_<configuration>.csv and .json), traces (.json.gz) and tables (.txt)")
      ->capture_default_str()
      ->check(non_empty_path());
  return [args] { return run_sweep_command(*args); };
}

}  // namespace attnprof::cli
