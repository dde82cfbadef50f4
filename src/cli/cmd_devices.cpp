// attnprof devices: what this machine offers (CPU features, BLAS, CUDA) and what runs where.
#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cpu/cpu_features.h"
#include "cpu/fused_attention.h"
#include "cpu/kernel_names.h"
#include "ops/backend.h"
#include "report/ceilings.h"

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

}  // namespace

Command add_devices(CLI::App& app) {
  app.add_subcommand("devices", "Show the CPU and GPU this machine offers, and which variants run on each");
  return []() {
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
    fmt::print("  BLAS                 {}\n", openblas_get_config());
    fmt::print("  measured ceilings    {}\n", report::ceilings_text(report::measured_ceilings(Device::cpu)));
    std::string cuda_line;
    if (auto why = ops::unavailable_reason(Device::cuda)) {
      cuda_line = *why;  // "no NVIDIA driver (...)", or a build configured without CUDA
    } else {
      try {
        (void)ops::backend(Device::cuda);
        cuda_line = "available\n  measured ceilings    " + report::ceilings_text(report::measured_ceilings(Device::cuda));
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
