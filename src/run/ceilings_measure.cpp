// Measuring the ceilings (report/ceilings.h holds what they are): timed GEMMs and copies on the
// CPU and through a device's backend, kept for the process and in the cache file.
#include "run/ceilings_measure.h"

#include <attnprof/error.h>

#include <fmt/format.h>

#ifdef ATTNPROF_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "core/bytes_text.h"
#include "cpu/gemm.h"
#include "cpu/openblas.h"
#include "ops/backend.h"
#include "report/ceilings_cache.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

namespace attnprof {

using report::cached_or_measured;
using report::CeilingSpread;
using report::Ceilings;
using report::utc_now_text;
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "CPU";
}

struct Registry {
  std::mutex mutex;
  std::map<Device, CeilingProbe> probes;
  std::map<Device, Ceilings> measured;
};
Registry& registry() {
  static Registry r;
  return r;
}

// Runs `work` (which must finish its device work before returning) once to warm up, then until
// it has run `min_runs` times and for `min_seconds`; returns the seconds of each timed run.
template <typename Work>
std::vector<double> timed_runs(double min_seconds, int min_runs, Work work) {
  work();
  std::vector<double> seconds;
  double total = 0;
  while (static_cast<int>(seconds.size()) < min_runs || total < min_seconds) {
    auto start = Clock::now();
    work();
    seconds.push_back(seconds_since(start));
    total += seconds.back();
  }
  return seconds;
}

// The rate of each run (`amount` per second): returns their median, their range into `spread`.
double median_rate(const std::vector<double>& seconds, double amount, CeilingSpread& spread) {
  std::vector<double> rates;
  for (double s : seconds) rates.push_back(amount / s);
  std::sort(rates.begin(), rates.end());
  const std::size_t n = rates.size();
  spread = {rates.front(), rates.back(), static_cast<int>(n)};
  return n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
}

constexpr int kMinRuns = 5;

std::string threads_text(int threads) { return fmt::format("{} thread{}", threads, threads == 1 ? "" : "s"); }

#ifdef ATTNPROF_HAVE_DNNL
// oneDNN bf16 × bf16 → fp32 matmul of n³ (OpenMP threads), repeated for at least `min_seconds`;
// TFLOP/s. The inputs are constants (0.5 and 0.25, exact in bf16) so one output entry can be checked.
double measure_bf16_matmul(int n, double min_seconds, CeilingSpread& spread) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::desc a_md({n, n}, dt::bf16, tag::ab), b_md({n, n}, dt::bf16, tag::ab), c_md({n, n}, dt::f32, tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
  const dnnl::matmul matmul(pd);
  dnnl::memory a(a_md, engine), b(b_md, engine), c(c_md, engine);
  std::fill_n(static_cast<std::uint16_t*>(a.get_data_handle()), static_cast<std::size_t>(n) * n, std::uint16_t{0x3f00});
  std::fill_n(static_cast<std::uint16_t*>(b.get_data_handle()), static_cast<std::size_t>(n) * n, std::uint16_t{0x3e80});
  // The first run is the warm-up: kernel generation and page faults.
  const std::vector<double> seconds = timed_runs(min_seconds, kMinRuns, [&] {
    matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  });
  const float entry = static_cast<const float*>(c.get_data_handle())[17 * n + 1029 % n];
  if (std::fabs(entry - 0.125f * static_cast<float>(n)) > 1e-3f * static_cast<float>(n)) {
    throw Error(fmt::format("ceilings: oneDNN bf16 matmul gave {} where {} was expected", entry, 0.125 * n));
  }
  return median_rate(seconds, 2.0 * n * n * static_cast<double>(n) / 1e12, spread);
}

#endif

}  // namespace

void install_ceiling_probe(Device device, CeilingProbe probe) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.probes[device] = probe;
  r.measured.erase(device);
}

namespace {

// Measures the device's ceilings, or says why it cannot; `model` and `threads` are the cache key.
Ceilings measure_now(Device device, CeilingProbe probe, const std::string& model, int threads) {
  Ceilings c;
  if (probe) {
    c = probe();
  } else if (device == Device::cpu) {
    c = measure_cpu_ceilings();
  } else {
    c = measure_backend_ceilings(device);
  }
  c.model = model;
  c.threads = threads;
  if (device != Device::cpu && !model.empty()) c.device_name = model;
  c.measured_at = utc_now_text();
  return c;
}

const Ceilings& ceilings_for(Device device, bool remeasure) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto done = r.measured.find(device);
  if (done != r.measured.end() && !remeasure) return done->second;
  auto found = r.probes.find(device);
  const CeilingProbe probe = found != r.probes.end() ? found->second : nullptr;
  if (!probe && device != Device::cpu && !ops::has_backend(device)) {
    Ceilings c;
    c.device = device;
    c.device_name = std::string(device_name(device));
    c.matmul_what = "not measured: no ceiling probe installed for this device";
    c.copy_what = c.matmul_what;
    return r.measured.insert_or_assign(device, std::move(c)).first->second;
  }
  const std::string model = device == Device::cpu          ? cpu_model_name()
                            : ops::has_backend(device) ? ops::backend(device).model_name()
                                                       : std::string();
  const int threads = device == Device::cpu ? omp_get_max_threads() : 0;
  // A device whose model is unknown has no cache key: measured for the process only.
  Ceilings c = model.empty() ? measure_now(device, probe, model, threads)
                             : cached_or_measured(device, model, threads, remeasure,
                                                  [&] { return measure_now(device, probe, model, threads); });
  return r.measured.insert_or_assign(device, std::move(c)).first->second;
}

}  // namespace

const Ceilings& measured_ceilings(Device device) { return ceilings_for(device, false); }

const Ceilings& remeasure_ceilings(Device device) { return ceilings_for(device, true); }

namespace {

// Reads element [row, col] of a [1, 1, n, n] device tensor through a host copy.
double device_entry(ops::Backend& backend, const Tensor& device_tensor, std::int64_t row, std::int64_t col) {
  Tensor host = Tensor::empty(device_tensor.shape(), device_tensor.dtype(), Device::cpu);
  backend.copy(host, device_tensor);
  backend.synchronize();
  const std::int64_t n = device_tensor.size(-1);
  switch (host.dtype()) {
    case DType::bf16: return bf16_to_float(host.data<bf16>()[row * n + col]);
    case DType::fp32: return host.data<float>()[row * n + col];
    default: return NAN;
  }
}

}  // namespace

Ceilings measure_backend_ceilings(Device device, std::int64_t gemm_n, std::int64_t copy_bytes) {
  const auto begin = Clock::now();
  ops::Backend& backend = ops::backend(device);
  Ceilings c;
  c.device = device;
  c.device_name = std::string(device_name(device));

  // Constant operands (0.5 and 0.25, exact in bf16): every output entry is 0.125 · K.
  auto gemm_rate = [&](DType dtype, std::int64_t n, bool tensor_cores, CeilingSpread& spread) {
    Tensor a = Tensor::empty({1, 1, n, n}, dtype, device), b = Tensor::empty({1, 1, n, n}, dtype, device),
           out = Tensor::empty({1, 1, n, n}, dtype, device);
    backend.fill(a, 0.5);
    backend.fill(b, 0.25);
    const std::vector<double> seconds = timed_runs(0.2, kMinRuns, [&] {
      backend.batched_gemm(out, a, b, /*transpose_b=*/false, 1.0f, tensor_cores);
      backend.synchronize();
    });
    const double entry = device_entry(backend, out, 17 % n, 1029 % n);
    if (std::fabs(entry - 0.125 * static_cast<double>(n)) > 1e-2 * static_cast<double>(n)) {
      throw Error(fmt::format("ceilings: {} GEMM on {} gave {} where {} was expected", dtype_name(dtype),
                              device_name(device), entry, 0.125 * static_cast<double>(n)));
    }
    return median_rate(seconds, 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / 1e12,
                       spread);
  };
  c.matmul_bf16_tflops = gemm_rate(DType::bf16, gemm_n, true, c.matmul_bf16_spread);
  c.matmul_bf16_what = fmt::format("bf16 GEMM {}\u00b3 through the backend", gemm_n);
  const std::int64_t fp32_n = std::max<std::int64_t>(gemm_n / 2, 1);
  c.matmul_tflops = gemm_rate(DType::fp32, fp32_n, false, c.matmul_spread);
  c.matmul_what = fmt::format("fp32 GEMM {}\u00b3 off the tensor cores", fp32_n);

  const std::int64_t elements = std::max<std::int64_t>(copy_bytes / 4, 1);
  Tensor src = Tensor::empty({elements}, DType::fp32, device), dst = Tensor::empty({elements}, DType::fp32, device);
  backend.fill(src, 1.0);
  const std::vector<double> copy_seconds = timed_runs(0.1, kMinRuns, [&] {
    backend.copy(dst, src);
    backend.synchronize();
  });
  c.copy_gbps = median_rate(copy_seconds, 2.0 * static_cast<double>(elements) * 4 / 1e9, c.copy_spread);
  c.copy_what = fmt::format("device copy of {}, read + write", format_bytes(static_cast<double>(elements) * 4));
  c.seconds_spent = seconds_since(begin);
  return c;
}

Ceilings measure_cpu_ceilings() {
  const auto begin = Clock::now();
  Ceilings c;
  c.device = Device::cpu;
  c.model = cpu_model_name();
  c.threads = omp_get_max_threads();
  c.device_name = fmt::format("{} ({})", c.model, threads_text(c.threads));

  // sgemm on c.threads threads: an OpenMP OpenBLAS takes OpenMP's count; a pthreads one is held
  // at one thread for attnprof's own parallel loops (cpu::openblas), so it is lifted to
  // c.threads here and put back; a sequential one has one thread.
  const cpu::OpenBlas& blas = cpu::openblas();
  const int parallel = blas.get_parallel();  // 0 sequential, 1 pthreads, 2 OpenMP
  const int sgemm_threads = parallel == 0 ? 1 : c.threads;
  if (parallel == 1) blas.set_num_threads(sgemm_threads);
  constexpr int kN = 2048;
  std::vector<float> a(static_cast<std::size_t>(kN) * kN), b(a.size()), out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.25f;
    b[i] = static_cast<float>(static_cast<int>(i % 5) - 2) * 0.5f;
  }
  const std::vector<double> gemm_seconds = timed_runs(0.2, kMinRuns, [&] {
    blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f,
                out.data(), kN);
  });
  if (parallel == 1) blas.set_num_threads(1);
  // The timed work must be the real product: check one entry against a plain dot product.
  double expected = 0;
  const int row = 17, col = 1029;
  for (int k = 0; k < kN; ++k) expected += static_cast<double>(a[row * kN + k]) * b[static_cast<std::size_t>(k) * kN + col];
  if (std::fabs(out[static_cast<std::size_t>(row) * kN + col] - expected) > 1e-3 * (1 + std::fabs(expected))) {
    throw Error(fmt::format("ceilings: OpenBLAS sgemm gave {} where {} was expected",
                            out[static_cast<std::size_t>(row) * kN + col], expected));
  }
  c.matmul_tflops = median_rate(gemm_seconds, 2.0 * kN * kN * static_cast<double>(kN) / 1e12, c.matmul_spread);
  c.matmul_what = fmt::format("OpenBLAS sgemm {}\u00b3 fp32, {}", kN, threads_text(sgemm_threads));

#ifdef ATTNPROF_HAVE_DNNL
  c.matmul_bf16_tflops = measure_bf16_matmul(kN, 0.2, c.matmul_bf16_spread);
  c.matmul_bf16_what = fmt::format("oneDNN bf16 matmul {}\u00b3, fp32 accumulation, {}", kN, threads_text(c.threads));
#else  // no oneDNN on this machine: attnprof's own bf16 GEMM is the yardstick, and says so
  const Ceilings own = measure_backend_ceilings(Device::cpu, kN, std::int64_t{16} << 20);
  c.matmul_bf16_tflops = own.matmul_bf16_tflops;
  c.matmul_bf16_spread = own.matmul_bf16_spread;
  c.matmul_bf16_what = own.matmul_bf16_what + ", 1 thread (attnprof's kernel: oneDNN was not found at build time)";
#endif

  // memcpy: 128 MiB on one thread, pages touched first; counts read + write bytes, as the anchors do.
  constexpr std::size_t kBytes = 128u << 20;
  std::vector<char> src(kBytes, 1), dst(kBytes, 0);
  std::size_t copies = 0;
  const std::vector<double> copy_seconds = timed_runs(0.1, kMinRuns, [&] {
    src[copies % kBytes] = static_cast<char>(copies);
    std::memcpy(dst.data(), src.data(), kBytes);
    ++copies;
  });
  if (dst[0] != src[0]) throw Error("ceilings: memcpy did not copy");
  c.copy_gbps = median_rate(copy_seconds, 2.0 * static_cast<double>(kBytes) / 1e9, c.copy_spread);
  c.copy_what = "memcpy of 128 MiB, read + write, 1 thread";
  c.seconds_spent = seconds_since(begin);
  return c;
}

}  // namespace attnprof
