// run_variant: one variant, checked against fp64, measured once for memory, then profiled.
#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <attnprof/run.h>
#include <attnprof/variant.h>
#include <fmt/format.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "core/atomic_file.h"
#include "ops/backend.h"
#include "report/key_averages.h"
#include "report/steps.h"
#include "run/npy.h"
#include "run/preflight.h"
#include "run/scoped_kernel_overrides.h"
#include "run/run_pass.h"
#include "run/trace_stem.h"
#include "trace/writer.h"
#include "variants/reference.h"

namespace attnprof {
namespace {

// The kept forwards one round measures: `kept` spread over `rounds`, rounded up.
int kept_this_round(int kept, int rounds) {
  const int r = std::max(1, rounds);
  return std::max(1, (kept + r - 1) / r);
}

}  // namespace

int kept_forwards(int count, double min_time_s, double one_forward_ns) {
  if (min_time_s <= 0 || count >= kMaxKeptForwards) return count;
  const double needed = std::ceil(min_time_s * 1e9 / std::max(one_forward_ns, 1.0));
  return std::max(count, static_cast<int>(std::min<double>(needed, kMaxKeptForwards)));
}

double sizing_pass_ns(int count, double min_time_s, const std::function<double()>& time_pass) {
  const double min_ns = min_time_s * 1e9;
  std::vector<double> times;
  double elapsed_ns = 0;
  const auto median = [&times] {
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  };
  while (times.size() < 100 && (times.size() < 3 || elapsed_ns < min_ns / 20)) {
    times.push_back(time_pass());
    elapsed_ns += times.back();
    if (times.size() == 1 && times[0] >= min_ns) break;
    if (times.size() >= 3 && median() * count >= min_ns) break;
  }
  return median();
}

namespace {

// The samples, their spreads and what follows from their medians.
void set_times(RunResult& result, std::vector<double> times, std::vector<double> cpu_times) {
  result.time = time_stats(times);
  result.cpu_time = time_stats(cpu_times);
  result.time_samples = std::move(times);
  result.cpu_time_samples = std::move(cpu_times);
  result.median_ns = result.time.median;
  result.cpu_ns = result.cpu_time.median;
  result.tflops = result.median_ns > 0 ? result.flops / result.median_ns / 1e3 : 0;
}

using variants::check_against_reference;
using variants::ErrorReport;
using variants::find_nonfinite;

void dump_inputs_and_output(const std::string& dir, const AttentionInputs& in, const Tensor& out) {
  ensure_writable_directory(dir, "dump_dir");
  write_npy((std::filesystem::path(dir) / "q.npy").string(), to_host(in.q));
  write_npy((std::filesystem::path(dir) / "k.npy").string(), to_host(in.k));
  write_npy((std::filesystem::path(dir) / "v.npy").string(), to_host(in.v));
  write_npy((std::filesystem::path(dir) / "out.npy").string(), to_host(out));
}

void reject_nonfinite(const AttentionInputs& in) {
  for (const auto& [name, tensor] : {std::pair{"q", &in.q}, std::pair{"k", &in.k}, std::pair{"v", &in.v}}) {
    if (auto where = find_nonfinite(to_host(*tensor))) {
      throw UsageError(fmt::format("input {} holds a non-finite value ({}); attention inputs must be finite", name, *where));
    }
  }
}

// Calls the variant's release_saved() on the way out.
class SavedForBackward {
 public:
  explicit SavedForBackward(Variant& variant) : variant_(variant) {}
  ~SavedForBackward() { variant_.release_saved(); }
  SavedForBackward(const SavedForBackward&) = delete;
  SavedForBackward& operator=(const SavedForBackward&) = delete;

 private:
  Variant& variant_;
};

}  // namespace

RunResult run_variant(const RunOptions& options) {
  const AttentionSpec& spec = options.spec;
  spec.validate();
  const ScopedKernelOverrides overrides(options.kernels);  // from before any kernel is chosen until the run returns
  if (options.threads > 0) omp_set_num_threads(options.threads);  // before prepare(): kernels size work by it
  Variant* variant = find_variant(options.variant);
  if (variant == nullptr) {
    throw UsageError(unknown_variant_message("variant", options.variant));
  }
  if (auto reason = variant->refusal(spec)) {
    throw UsageError(fmt::format("variant {}: {}", variant->name(), *reason));
  }
  if (auto reason = pass_refusal(*variant, spec, options.pass)) throw UsageError(*reason);
  preflight_memory(spec, *variant, options.pass);
  // Checked now, made when the first file is written: a run refused or failing before then
  // leaves no directory behind.
  if (!options.out_dir.empty()) check_writable_directory(options.out_dir, "out_dir");
  if (!options.dump_dir.empty()) check_writable_directory(options.dump_dir, "dump_dir");

  RunResult result;
  result.variant = std::string(variant->name());
  result.summary = variant->describe(spec);
  result.spec = spec;
  result.pass = options.pass;
  result.flops = pass_flops(spec, options.pass);
  result.threads = omp_get_max_threads();

  const Pass pass = options.pass;
  PassTensors tensors = make_pass_tensors(spec, pass, options.seed);
  AttentionInputs& in = tensors.in;
  reject_nonfinite(in);
  Tensor& out = tensors.out;
  ops::Backend& device = ops::backend(spec.device);
  // What a backward's forward kept is dropped when the run ends, however it ends.
  const SavedForBackward saved(*variant);
  const auto setup_start = std::chrono::steady_clock::now();
  variant->prepare(spec);
  if (pass != Pass::forward) variant->prepare_backward(spec);
  device.synchronize();
  result.setup_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - setup_start).count();

  // 1. Correctness: every element written (NaN-poisoned first), error against fp64.
  poison(out);
  if (pass == Pass::forward) {
    variant->forward(spec, in.q, in.k, in.v, out);
  } else {
    variant->forward_for_backward(spec, in.q, in.k, in.v, out);
  }
  device.synchronize();
  Tensor host_out = to_host(out);
  ErrorReport error = check_against_reference(spec, to_host(in.q), to_host(in.k), to_host(in.v), host_out);
  result.rel_err = error.rel_err;
  result.err_scope = error.scope();
  result.nan_output = error.nan_count > 0;
  result.masked_rows = error.masked_rows;
  result.masked_rows_nan = error.masked_rows_nan;
  result.masked_rows_zero = error.masked_rows_zero;
  result.nan_only_in_masked_rows = error.nan_only_in_masked_rows();
  // (a dump writes the checked gradients, so it checks them whatever check_gradients says)
  if (pass != Pass::forward && (options.check_gradients || !options.dump_dir.empty())) {
    check_backward(*variant, spec, tensors, device, result);
  }
  if (!options.dump_dir.empty()) dump_inputs_and_output(options.dump_dir, in, host_out);
  if (!options.dump_dir.empty() && pass != Pass::forward) dump_gradients(options.dump_dir, tensors);

  // 1b. Determinism: the same inputs, bit-identical outputs and gradients (atomics or split-K
  // would break it).
  int determinism_runs = options.determinism_runs >= 0 ? options.determinism_runs
                                                       : (spec.device == Device::cuda ? 10 : 0);
  if (determinism_runs > 1) check_determinism(*variant, spec, pass, tensors, device, determinism_runs, result);

  // 2. Peak extra memory of one pass: everything it allocates beyond q, k, v and out (and dO and
  // the gradients for a backward).
  result.peak_extra_bytes = pass_peak_extra_bytes(*variant, spec, pass, tensors, device);

  // 2b. The kept passes: the count, or more when that many would take under options.min_time_s,
  // sized from the median of passes timed as they will run (after the allocations and first
  // touches above: sizing_pass_ns).
  const int count = options.profile ? options.schedule.active : options.timed_forwards;
  int kept = count;
  if (options.min_time_s > 0) {
    const double one_ns = sizing_pass_ns(count, options.min_time_s,
                                         [&] { return time_pass_ns(*variant, spec, pass, tensors, device); });
    kept = kept_forwards(count, options.min_time_s, one_ns);
  }
  kept = kept_this_round(kept, options.rounds);

  // 3. Time: profiled with the schedule, or plain wall-clock forwards.
  if (options.profile) {
    profiler::Options popts;
    popts.cpu = true;
    popts.cuda = spec.device == Device::cuda;
    popts.record_shapes = options.record_shapes;
    popts.profile_memory = options.profile_memory;
    popts.schedule = options.schedule;
    popts.schedule.active = kept;
    popts.schedule.repeat = 1;
    profiler::Profiler prof(popts);
    prof.start();
    int steps = popts.schedule.wait + popts.schedule.warmup + popts.schedule.active;
    for (int step = 0; step < steps; ++step) {
      run_pass_step(*variant, spec, pass, tensors, device);
      // Outside attn_fwd / attn_bwd, so a range's CPU time is the cost of issuing its work
      // (PyTorch's CPU µs per forward), not the wait for the GPU.
      device.synchronize();
      prof.step();
    }
    prof.stop();
    trace::Trace trace = prof.take_trace();
    trace.trace_name = trace_stem(options);
    report::ForwardSummary forwards = summarize_passes(trace, pass);
    result.kernels_per_forward = forwards.kernels_per_forward;
    result.memcpy_per_forward = forwards.memcpy_per_forward;
    result.memset_per_forward = forwards.memset_per_forward;
    std::vector<double> cpu_times, device_times;
    for (const report::ForwardWork& f : forwards.forwards) {
      cpu_times.push_back(static_cast<double>(f.cpu_time_ns));
      device_times.push_back(static_cast<double>(f.device_time_ns));
    }
    set_times(result, spec.device == Device::cpu ? cpu_times : device_times, cpu_times);
    const std::string ranges = pass == Pass::forward ? "attn_fwd" : pass == Pass::backward ? "attn_bwd" : "attn_fwd + attn_bwd";
    result.timing_source = spec.device == Device::cpu
                               ? fmt::format("profiler ({} wall time, median of active steps)", ranges)
                               : fmt::format("profiler (device busy time in {}, median of active steps)", ranges);
    if (!options.out_dir.empty()) {
      std::filesystem::path stem = std::filesystem::path(options.out_dir) / trace_stem(options);
      result.trace_path = stem.string() + ".json.gz";
      result.table_path = stem.string() + ".txt";
      trace::write_trace_file(result.trace_path, trace, "out_dir");
      std::string sort_by = spec.device == Device::cpu ? "cpu_time_total" : "device_time_total";
      write_file_atomically(result.table_path, report::render_text(report::key_averages(trace, sort_by)), "out_dir");
    }
    result.trace = std::move(trace);
  } else {
    std::vector<double> wall;
    (void)time_pass_ns(*variant, spec, pass, tensors, device);  // warm-up
    for (int i = 0; i < kept; ++i) {
      wall.push_back(time_pass_ns(*variant, spec, pass, tensors, device));
    }
    set_times(result, wall, wall);
    result.timing_source = "wall clock, synchronised (profiler off)";
  }
  return result;
}

RunOptions later_round(const RunOptions& options) {
  RunOptions again = options;
  again.out_dir.clear();
  again.dump_dir.clear();
  again.determinism_runs = 0;
  again.check_gradients = false;
  return again;
}

void add_round(RunResult& into, const RoundSamples& round) {
  std::vector<double> times = into.time_samples, cpu_times = into.cpu_time_samples;
  times.insert(times.end(), round.times.begin(), round.times.end());
  cpu_times.insert(cpu_times.end(), round.cpu_times.begin(), round.cpu_times.end());
  const int processes = into.time.processes + (round.other_process ? 1 : 0);
  set_times(into, std::move(times), std::move(cpu_times));
  into.time.processes = into.cpu_time.processes = processes;
}

}  // namespace attnprof
