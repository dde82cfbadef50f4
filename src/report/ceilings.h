#pragma once
// Ceilings measured on the machine at hand, not datasheet numbers: the rate of a large matmul
// and the bandwidth of a large copy. The CPU's are measured here (OpenBLAS sgemm, memcpy); a
// device backend installs a probe for its own (cuBLASLt GEMM and a device-to-device copy).
#include <attnprof/tensor.h>

#include <nlohmann/json.hpp>

#include <string>

namespace attnprof::report {

struct Ceilings {
  Device device = Device::cpu;
  std::string device_name;   // "2-core AMD EPYC ...", "NVIDIA H200"
  double matmul_tflops = 0;  // 0: not measured
  std::string matmul_what;   // "OpenBLAS sgemm 2048³ (fp32)"
  double copy_gbps = 0;      // read + write bytes per second / 1e9
  std::string copy_what;     // "memcpy of 128 MiB (read + write)"
  double seconds_spent = 0;  // how long the measurement took

  bool measured() const { return matmul_tflops > 0 && copy_gbps > 0; }
  // FLOPs per byte where the roofline's slope meets its flat top.
  double ridge_flops_per_byte() const { return copy_gbps > 0 ? matmul_tflops * 1e3 / copy_gbps : 0; }
};

using CeilingProbe = Ceilings (*)();
// A device backend registers how to measure its ceilings (the CUDA one at start-up).
void install_ceiling_probe(Device device, CeilingProbe probe);

// The device's ceilings, measured on first use and cached for the process. A device without a
// probe gets unmeasured ceilings (zeros) naming why.
const Ceilings& measured_ceilings(Device device);

// OpenBLAS sgemm (square, sized to run about 0.2 s on two cores) and memcpy of 128 MiB.
Ceilings measure_cpu_ceilings();

std::string ceilings_text(const Ceilings& ceilings);
nlohmann::json ceilings_json(const Ceilings& ceilings);
Ceilings ceilings_from_json(const nlohmann::json& json);

}  // namespace attnprof::report
