#pragma once
// Ceilings measured on the machine at hand, not datasheet numbers: the rate of a large matmul
// and the bandwidth of a large copy (run/ceilings_measure.h measures them).
#include <attnprof/dtype.h>
#include <attnprof/tensor.h>

#include <nlohmann/json.hpp>

#include <string>

namespace attnprof::report {

// How one ceiling varied over its runs (each timed alone); the ceiling is their median.
struct CeilingSpread {
  double min = 0;
  double max = 0;
  int samples = 0;
};

struct Ceilings {
  Device device = Device::cpu;
  std::string device_name;   // the label: "AMD EPYC (2 threads)", "NVIDIA H200"
  std::string model;         // "AMD EPYC", "NVIDIA H200": with `threads`, what the cache is keyed by
  int threads = 0;           // CPU threads the measurement ran with (0 on a GPU)
  double matmul_tflops = 0;  // fp32 matmul, median of the runs; 0: not measured
  CeilingSpread matmul_spread;
  std::string matmul_what;   // "OpenBLAS sgemm 2048³ fp32, 2 threads"
  double matmul_bf16_tflops = 0;  // bf16 × bf16 → fp32 matmul, median; 0: not measured
  CeilingSpread matmul_bf16_spread;
  std::string matmul_bf16_what;   // "oneDNN bf16 matmul 2048³, fp32 accumulation, 2 threads"
  double copy_gbps = 0;      // read + write bytes per second / 1e9, median
  CeilingSpread copy_spread;
  std::string copy_what;     // "memcpy of 128 MiB, read + write, one thread"
  double seconds_spent = 0;  // how long the measurement took
  std::string measured_at;   // UTC, "2026-12-01T14:50:03Z"
  std::string cache_path;    // the cache file read or written; empty when none was

  bool measured() const { return matmul_tflops > 0 && copy_gbps > 0; }
  // The matmul ceiling a run of this dtype is measured against: the bf16 one for bf16 and fp16
  // when it was measured (a low-precision kernel can beat an fp32 sgemm), else the fp32 one.
  double peak_tflops(DType dtype) const;
  // FLOPs per byte where the roofline's slope meets its flat top.
  double ridge_flops_per_byte() const { return copy_gbps > 0 ? matmul_tflops * 1e3 / copy_gbps : 0; }
};

// TFLOP/s as a percentage of the ceiling peak_tflops; 0 when no ceiling was measured (0).
inline double pct_of_peak(double tflops, double peak_tflops) { return peak_tflops > 0 ? 100.0 * tflops / peak_tflops : 0; }

std::string ceilings_text(const Ceilings& ceilings);
// A rate above the matmul ceiling of its dtype (peak_tflops) beyond that ceiling's own spread
// (faster than the fastest of its runs) shows a ceiling measured too low, as under load: one
// line naming the ceiling, its spread, the cache file it came from and its date, and
// `attnprof devices --remeasure`. "" for a rate within the ceiling or without one.
std::string above_ceiling_note(const Ceilings& ceilings, DType dtype, double tflops);
nlohmann::json ceilings_json(const Ceilings& ceilings);
Ceilings ceilings_from_json(const nlohmann::json& json);

}  // namespace attnprof::report
