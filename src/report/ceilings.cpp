#include "report/ceilings.h"

#include <attnprof/error.h>

#include <cblas.h>
#include <fmt/format.h>

#ifdef ATTNPROF_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "ops/backend.h"
#include "report/insights.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace attnprof::report {
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

// One sgemm of n×n; returns seconds. C = A·B with A, B filled so one entry can be checked.
double time_sgemm(int n, std::vector<float>& a, std::vector<float>& b, std::vector<float>& c) {
  auto start = Clock::now();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  return seconds_since(start);
}

#ifdef ATTNPROF_HAVE_DNNL
// oneDNN bf16 × bf16 → fp32 matmul of n³ repeated for at least `min_seconds`; TFLOP/s. The
// inputs are constants (0.5 and 0.25, exact in bf16) so one output entry can be checked.
double measure_bf16_matmul(int n, double min_seconds, int& runs) {
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
  auto once = [&] {
    auto start = Clock::now();
    matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
    return seconds_since(start);
  };
  once();  // warm-up: kernel generation and page faults
  double seconds = 0;
  runs = 0;
  while (runs < 2 || seconds < min_seconds) {
    seconds += once();
    ++runs;
  }
  const float entry = static_cast<const float*>(c.get_data_handle())[17 * n + 1029 % n];
  if (std::fabs(entry - 0.125f * static_cast<float>(n)) > 1e-3f * static_cast<float>(n)) {
    throw Error(fmt::format("ceilings: oneDNN bf16 matmul gave {} where {} was expected", entry, 0.125 * n));
  }
  return 2.0 * n * n * static_cast<double>(n) * runs / seconds / 1e12;
}

#endif

}  // namespace

double Ceilings::peak_tflops(DType dtype) const {
  const bool low_precision = dtype == DType::bf16 || dtype == DType::fp16;
  return low_precision && matmul_bf16_tflops > 0 ? matmul_bf16_tflops : matmul_tflops;
}

void install_ceiling_probe(Device device, CeilingProbe probe) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.probes[device] = probe;
  r.measured.erase(device);
}

const Ceilings& measured_ceilings(Device device) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto done = r.measured.find(device);
  if (done != r.measured.end()) return done->second;
  Ceilings c;
  auto probe = r.probes.find(device);
  if (probe != r.probes.end() && probe->second) {
    c = probe->second();
  } else if (device == Device::cpu) {
    c = measure_cpu_ceilings();
  } else if (ops::has_backend(device)) {
    c = measure_backend_ceilings(device);
  } else {
    c.device = device;
    c.device_name = std::string(device_name(device));
    c.matmul_what = "not measured: no ceiling probe installed for this device";
    c.copy_what = c.matmul_what;
  }
  return r.measured.emplace(device, std::move(c)).first->second;
}

namespace {

// Repeats `work` (which must finish its device work before returning) until `min_seconds`
// have passed, at least twice after one warm-up; returns seconds per run.
template <typename Work>
double seconds_per_run(double min_seconds, int& runs, Work work) {
  work();
  double seconds = 0;
  runs = 0;
  while (runs < 2 || seconds < min_seconds) {
    auto start = Clock::now();
    work();
    seconds += seconds_since(start);
    ++runs;
  }
  return seconds / runs;
}

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
  auto gemm_rate = [&](DType dtype, std::int64_t n, bool tensor_cores, int& runs) {
    Tensor a = Tensor::empty({1, 1, n, n}, dtype, device), b = Tensor::empty({1, 1, n, n}, dtype, device),
           out = Tensor::empty({1, 1, n, n}, dtype, device);
    backend.fill(a, 0.5);
    backend.fill(b, 0.25);
    const double seconds = seconds_per_run(0.2, runs, [&] {
      backend.batched_gemm(out, a, b, /*transpose_b=*/false, 1.0f, tensor_cores);
      backend.synchronize();
    });
    const double entry = device_entry(backend, out, 17 % n, 1029 % n);
    if (std::fabs(entry - 0.125 * static_cast<double>(n)) > 1e-2 * static_cast<double>(n)) {
      throw Error(fmt::format("ceilings: {} GEMM on {} gave {} where {} was expected", dtype_name(dtype),
                              device_name(device), entry, 0.125 * static_cast<double>(n)));
    }
    return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / seconds / 1e12;
  };
  int runs = 0;
  c.matmul_bf16_tflops = gemm_rate(DType::bf16, gemm_n, true, runs);
  c.matmul_bf16_what = fmt::format("bf16 GEMM {}\u00b3 through the backend, {} runs", gemm_n, runs);
  const std::int64_t fp32_n = std::max<std::int64_t>(gemm_n / 2, 1);
  c.matmul_tflops = gemm_rate(DType::fp32, fp32_n, false, runs);
  c.matmul_what = fmt::format("fp32 GEMM {}\u00b3 off the tensor cores, {} runs", fp32_n, runs);

  const std::int64_t elements = std::max<std::int64_t>(copy_bytes / 4, 1);
  Tensor src = Tensor::empty({elements}, DType::fp32, device), dst = Tensor::empty({elements}, DType::fp32, device);
  backend.fill(src, 1.0);
  const double copy_seconds = seconds_per_run(0.1, runs, [&] {
    backend.copy(dst, src);
    backend.synchronize();
  });
  c.copy_gbps = 2.0 * static_cast<double>(elements) * 4 / copy_seconds / 1e9;
  c.copy_what = fmt::format("device copy of {}, read + write, {} runs", format_bytes(static_cast<double>(elements) * 4), runs);
  c.seconds_spent = seconds_since(begin);
  return c;
}

Ceilings measure_cpu_ceilings() {
  const auto begin = Clock::now();
  Ceilings c;
  c.device = Device::cpu;
  c.device_name = fmt::format("{} ({} threads)", cpu_model_name(), std::thread::hardware_concurrency());

  // sgemm: one warm-up (thread pool, page faults), then repeat until 0.2 s have passed.
  constexpr int kN = 2048;
  std::vector<float> a(static_cast<std::size_t>(kN) * kN), b(a.size()), out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.25f;
    b[i] = static_cast<float>(static_cast<int>(i % 5) - 2) * 0.5f;
  }
  time_sgemm(kN, a, b, out);
  double gemm_seconds = 0;
  int gemms = 0;
  while (gemms < 2 || gemm_seconds < 0.2) {
    gemm_seconds += time_sgemm(kN, a, b, out);
    ++gemms;
  }
  // The timed work must be the real product: check one entry against a plain dot product.
  double expected = 0;
  const int row = 17, col = 1029;
  for (int k = 0; k < kN; ++k) expected += static_cast<double>(a[row * kN + k]) * b[static_cast<std::size_t>(k) * kN + col];
  if (std::fabs(out[static_cast<std::size_t>(row) * kN + col] - expected) > 1e-3 * (1 + std::fabs(expected))) {
    throw Error(fmt::format("ceilings: OpenBLAS sgemm gave {} where {} was expected",
                            out[static_cast<std::size_t>(row) * kN + col], expected));
  }
  c.matmul_tflops = 2.0 * kN * kN * static_cast<double>(kN) * gemms / gemm_seconds / 1e12;
  c.matmul_what = fmt::format("OpenBLAS sgemm {}\u00b3 fp32, {} runs", kN, gemms);

#ifdef ATTNPROF_HAVE_DNNL
  int bf16_runs = 0;
  c.matmul_bf16_tflops = measure_bf16_matmul(kN, 0.2, bf16_runs);
  c.matmul_bf16_what = fmt::format("oneDNN bf16 matmul {}\u00b3, fp32 accumulation, {} runs", kN, bf16_runs);
#else  // no oneDNN on this machine: attnprof's own bf16 GEMM is the yardstick, and says so
  const Ceilings own = measure_backend_ceilings(Device::cpu, kN, std::int64_t{16} << 20);
  c.matmul_bf16_tflops = own.matmul_bf16_tflops;
  c.matmul_bf16_what = own.matmul_bf16_what + " (attnprof's kernel: oneDNN was not found at build time)";
#endif

  // memcpy: 128 MiB, pages touched first; counts read + write bytes, as the anchors do.
  constexpr std::size_t kBytes = 128u << 20;
  std::vector<char> src(kBytes, 1), dst(kBytes, 0);
  std::memcpy(dst.data(), src.data(), kBytes);
  double copy_seconds = 0;
  int copies = 0;
  while (copies < 3 || copy_seconds < 0.1) {
    src[static_cast<std::size_t>(copies) % kBytes] = static_cast<char>(copies);
    auto start = Clock::now();
    std::memcpy(dst.data(), src.data(), kBytes);
    copy_seconds += seconds_since(start);
    ++copies;
  }
  if (dst[0] != src[0]) throw Error("ceilings: memcpy did not copy");
  c.copy_gbps = 2.0 * static_cast<double>(kBytes) * copies / copy_seconds / 1e9;
  c.copy_what = fmt::format("memcpy of 128 MiB, read + write, {} runs", copies);
  c.seconds_spent = seconds_since(begin);
  return c;
}

std::string ceilings_text(const Ceilings& c) {
  if (!c.measured()) return fmt::format("{}: ceilings {}", c.device_name, c.matmul_what);
  auto rate = [](double tflops) { return format_tflops(tflops); };
  std::string bf16 = c.matmul_bf16_tflops > 0
                         ? fmt::format("; bf16 matmul {} ({})", rate(c.matmul_bf16_tflops), c.matmul_bf16_what)
                         : std::string();
  return fmt::format("{}: fp32 matmul {} ({}){}; copy {:.1f} GB/s ({}); ridge at {:.1f} FLOP/byte", c.device_name,
                     rate(c.matmul_tflops), c.matmul_what, bf16, c.copy_gbps, c.copy_what, c.ridge_flops_per_byte());
}

nlohmann::json ceilings_json(const Ceilings& c) {
  return {{"device", std::string(device_name(c.device))},
          {"device_name", c.device_name},
          {"matmul_tflops", c.matmul_tflops},
          {"matmul_what", c.matmul_what},
          {"matmul_bf16_tflops", c.matmul_bf16_tflops},
          {"matmul_bf16_what", c.matmul_bf16_what},
          {"copy_gbps", c.copy_gbps},
          {"copy_what", c.copy_what}};
}

Ceilings ceilings_from_json(const nlohmann::json& j) {
  Ceilings c;
  c.device = parse_device(j.value("device", std::string("cpu")));
  c.device_name = j.value("device_name", std::string());
  c.matmul_tflops = j.value("matmul_tflops", 0.0);
  c.matmul_what = j.value("matmul_what", std::string());
  c.matmul_bf16_tflops = j.value("matmul_bf16_tflops", 0.0);
  c.matmul_bf16_what = j.value("matmul_bf16_what", std::string());
  c.copy_gbps = j.value("copy_gbps", 0.0);
  c.copy_what = j.value("copy_what", std::string());
  return c;
}

}  // namespace attnprof::report
