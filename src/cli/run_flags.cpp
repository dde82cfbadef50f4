#include "cli/run_flags.h"

#include <attnprof/compare.h>
#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <fmt/format.h>


#include "report/expect.h"

namespace attnprof::cli {

void add_pass_flag(CLI::App& app, std::string& pass) {
  app.add_option("--pass", pass,
                 "forward, backward (the backward of a forward run outside the measured region) or train (a "
                 "forward then its backward, measured as one step)")
      ->capture_default_str();
}

void RunFlags::add_to(CLI::App& app, bool single_variant) {
  shape.add_to(app);
  kernels.add_to(app);
  add_pass_flag(app, pass);
  app.add_option("--plugin", plugins,
                 "load out-of-tree variants from a shared library exporting attnprof_register_variants (repeatable)")
      ->check(non_empty_path());
  if (single_variant) {
    app.add_option("--variant,-v", variant, "naive, inplace, math, fused, efficient, flash or cudnn")
        ->capture_default_str();
    app.add_option("--dump", dump,
                   "write q.npy, k.npy, v.npy and out.npy (NumPy format) into this directory; with --pass backward "
                   "or train also do.npy, dq.npy, dk.npy and dv.npy")
        ->check(non_empty_path());
    app.add_option("--expect", expect,
                   "guess one forward's work first (e.g. gemm,mul,masked_fill,softmax,gemm); the trace checks it");
  } else {
    app.add_option("--variants", variants, "comma-separated variants (default: every one the device supports)");
    app.add_option("--rounds", rounds,
                   "measure the kept passes (--active or --repeat) in this many rounds, each over every variant "
                   "on fresh inputs, rounds 2.. each in a fresh process; the samples then come from that many "
                   "processes (default: 15 on the CPU, 5 on a GPU)")
        ->check(strict_integer());
    compare = true;
  }
  app.add_option("--format", format, "text or json")->capture_default_str();
  CLI::Option* out_option =
      app.add_option("--out", out, "directory for the traces (.json.gz) and tables (.txt); --no-profile writes none")
          ->capture_default_str()
          ->check(non_empty_path());
  app.add_flag("--no-profile", no_profile, "time plain passes (forwards, or the --pass backward or train steps) without recording a trace")->excludes(out_option);
  app.add_option("--wait", wait, "profiler schedule: steps skipped first")->check(strict_integer())->capture_default_str();
  app.add_option("--warmup", warmup, "profiler schedule: steps recorded then discarded")->capture_default_str();
  app.add_option("--active", active, "profiler schedule: steps kept, one pass each (a forward, or with --pass a backward or "
                 "training step); times are their median and spread")
      ->capture_default_str();
  app.add_option("--repeat", repeat, "--no-profile: passes (forwards, or the --pass backward or train steps) timed after one "
                 "warm-up; times are their median and spread")
      ->capture_default_str();
  add_min_time_option(app, min_time, "--active or --repeat");
}

void add_min_time_option(CLI::App& app, double& min_time, const std::string& count_flags) {
  app.add_option("--min-time", min_time,
                 "seconds the kept passes (" + count_flags + ") fill at least: a fast pass is kept more times, up to " +
                     std::to_string(kMaxKeptForwards) + "; 0 keeps exactly that count")
      ->capture_default_str();
}

double checked_min_time(double seconds) {
  if (!(seconds >= 0 && seconds <= 60))
    throw UsageError(fmt::format("--min-time: must be 0..60 seconds (got {})", seconds));
  return seconds;
}

RunOptions RunFlags::to_options() const {
  for (const std::string& plugin : plugins) load_plugin(plugin);
  if (!expect.empty() && no_profile) throw UsageError("--expect: needs a trace; it cannot be used with --no-profile");
  if (!expect.empty()) (void)report::parse_expect(expect);  // an unknown word fails before the run
  // --expect reads the attn_fwd ranges: a guess checked against a forward would pass for a backward's.
  if (!expect.empty() && parse_pass(pass) != Pass::forward) {
    throw UsageError(fmt::format("--expect: guesses one forward's work; allowed with --pass forward only (got --pass {})",
                                 pass));
  }
  if (format != "text" && format != "json") {
    throw UsageError(fmt::format("--format: unknown format '{}'; allowed: text, json", format));
  }
  if (wait < 0 || wait > 1000) throw UsageError(fmt::format("--wait: must be 0..1000 (got {})", wait));
  if (warmup < 0 || warmup > 1000) throw UsageError(fmt::format("--warmup: must be 0..1000 (got {})", warmup));
  if (active < 1 || active > 1000) throw UsageError(fmt::format("--active: must be 1..1000 (got {})", active));
  if (repeat < 1 || repeat > 100000) throw UsageError(fmt::format("--repeat: must be 1..100000 (got {})", repeat));
  if (compare && rounds && (*rounds < 1 || *rounds > 100))
    throw UsageError(fmt::format("--rounds: must be 1..100 (got {})", *rounds));
  apply_threads(shape.threads);
  if (shape.seed < 0) throw UsageError(fmt::format("--seed: must be a non-negative integer (got {})", shape.seed));
  RunOptions options;
  options.pass = parse_pass(pass);
  options.spec = shape.to_spec(shape.device.empty() ? default_device() : parse_device(shape.device));
  options.variant = variant;
  options.threads = shape.threads;
  options.seed = static_cast<std::uint64_t>(shape.seed);
  options.profile = !no_profile;
  options.schedule = profiler::Schedule{wait, warmup, active, 1};
  options.timed_forwards = repeat;
  options.out_dir = no_profile ? std::string() : out;
  options.dump_dir = dump;
  options.kernels = kernels.to_overrides(options.spec.device, compare ? variant_list() : std::vector<std::string>{variant},
                                         options.pass != Pass::forward);
  options.rounds = !compare ? 1 : rounds ? *rounds : compare_rounds(options.spec.device);
  options.min_time_s = checked_min_time(min_time);
  return options;
}

std::vector<std::string> RunFlags::variant_list() const {
  if (variants) return parse_variant_list(*variants);
  std::vector<std::string> names;
  for (Variant* v : all_variants()) names.emplace_back(v->name());
  return names;
}

std::vector<std::string> parse_variant_list(const std::string& list) {
  if (list.empty()) throw UsageError("--variants: empty list; allowed: a comma-separated list of " + variant_names());
  std::vector<std::string> names;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty()) {
      throw UsageError(fmt::format("--variants: empty name in '{}'; allowed: {}", list, variant_names()));
    }
    if (find_variant(name) == nullptr) {
      throw UsageError(unknown_variant_message("--variants", name));
    }
    names.push_back(std::move(name));
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

}  // namespace attnprof::cli
