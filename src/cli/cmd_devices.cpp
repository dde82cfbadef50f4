// attnprof devices: what this machine offers (CPU features, BLAS, CUDA) and what runs where.
#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <fmt/format.h>
#include <omp.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cpu/cpu_features.h"
#include "cpu/fused_attention.h"
#include "cpu/kernel_names.h"
#include "cpu/openblas.h"
#include "ops/backend.h"
#include "report/ceilings.h"
#include "run/ceilings_measure.h"

namespace attnprof::cli {
namespace {

struct CpuInfo {
  std::string model = "unknown";
  std::set<std::string> flags;
};

CpuInfo read_cpuinfo() {
  CpuInfo info;
  std::ifstream file("/proc/cpuinfo");
  std::string line;
  while (std::getline(file, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && info.model == "unknown") info.model = value;
    if (key == "flags" && info.flags.empty()) {
      std::istringstream words(value);
      for (std::string w; words >> w;) info.flags.insert(w);
    }
  }
  return info;
}

// The device's ceilings (measured again first with --remeasure) and the cache file they live in.
std::string ceilings_lines(Device device, bool remeasure) {
  const report::Ceilings& c = remeasure ? remeasure_ceilings(device) : measured_ceilings(device);
  return fmt::format("  measured ceilings    {}\n  ceilings cache       {}", report::ceilings_text(c),
                     c.cache_path.empty() ? "none (measured for this run only)" : c.cache_path);
}

}  // namespace

Command add_devices(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("devices", "Show the CPU and GPU this machine offers, and which variants run on each");
  auto remeasure = std::make_shared<bool>(false);
  sub->add_flag("--remeasure", *remeasure,
                "measure this machine's ceilings (GEMM rates, copy bandwidth) again and rewrite their cache");
  return [remeasure]() {
    CpuInfo cpu = read_cpuinfo();
    fmt::print("cpu: {}\n", cpu.model);
    fmt::print("  threads (OpenMP)     {}\n", omp_get_max_threads());
    std::string features;
    for (const char* f : {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"}) {
      if (cpu.flags.count(f)) features += std::string(features.empty() ? "" : " ") + f;
    }
    fmt::print("  vector features      {}\n", features.empty() ? "none of avx2/avx512/amx" : features);
    fmt::print("  fused kernels        {} | {}\n", cpu::fused_kernel_name("flash_attention", DType::fp32, cpu::fused_isa(DType::fp32, cpu::kernel_isa())),
               cpu::fused_kernel_name("flash_attention", DType::bf16, cpu::fused_isa(DType::bf16, cpu::kernel_isa())));
    fmt::print("  BLAS                 {}\n", cpu::openblas_description());
    fmt::print("{}\n", ceilings_lines(Device::cpu, *remeasure));
    std::string cuda_line;
    if (auto why = ops::unavailable_reason(Device::cuda)) {
      cuda_line = *why;  // "no NVIDIA driver (...)", or a build configured without CUDA
    } else {
      try {
        (void)ops::backend(Device::cuda);
        cuda_line = "available\n" + ceilings_lines(Device::cuda, *remeasure);
      } catch (const Error& e) {
        cuda_line = e.what();
      }
    }
    fmt::print("cuda: {}\n", cuda_line);
    fmt::print("variants:\n");
    for (Device device : {Device::cpu, Device::cuda}) {
      AttentionSpec spec;
      spec.device = device;
      for (Variant* v : all_variants()) {
        auto reason = v->refusal(spec);
        fmt::print("  {:<5} {:<10} {}\n", device_name(device), v->name(), reason ? "no: " + *reason : "yes");
      }
    }
    return 0;
  };
}

}  // namespace attnprof::cli
