// flash_timeline: the sm90 tile-counter kernel's own timeline at given shapes (bf16, causal unless
// --no-causal): where each consumer warpgroup's time goes per query tile (waiting for Q, the main
// loop per key tile, the epilogue, between tiles) and how evenly the SMs finish, from clock reads
// inside the kernel (its timeline build; src/cuda/hopper/flash_timeline.h). Needs an sm_90 GPU.
//
//   flash_timeline --shapes 8x16x1024x64,16x32x512x128 [--runs 3] [--trace DIR]
// --trace writes DIR/flash_timeline_<shape>.json (Chrome trace: a process per SM, a thread per
// warpgroup) for the last run of each shape.
#include <attnprof/error.h>
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_text.h"
#include "core/atomic_file.h"
#include "cuda/cuda_backend.h"
#include "cuda/fused_attention.h"
#include "cuda/gpu_test_util.h"
#include "cuda/hopper/flash_hopper.h"

using namespace attnprof;

namespace {

using bench::split;

std::int64_t dimension(const std::string& shape, const std::string& text) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 1)
    throw UsageError(fmt::format("--shapes {}: '{}' is not a positive integer (expected BxHxSxD, e.g. 8x16x1024x64)",
                                 shape, text));
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string shapes = "8x16x1024x64,16x32x512x128,4x16x4096x128", trace_dir;
    int runs = 3;
    bool causal = true;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw UsageError(fmt::format("{}: needs a value", a));
        return argv[++i];
      };
      if (a == "--shapes") shapes = value();
      else if (a == "--runs") runs = static_cast<int>(dimension("--runs", value()));
      else if (a == "--trace") trace_dir = value();
      else if (a == "--no-causal") causal = false;
      else throw UsageError(fmt::format("{}: unknown flag (allowed: --shapes --runs --trace --no-causal)", a));
    }
    if (!trace_dir.empty()) ensure_writable_directory(trace_dir, "--trace");
    for (const std::string& shape : split(shapes, ',')) {
      const auto dims = split(shape, 'x');
      if (dims.size() != 4) throw UsageError(fmt::format("--shapes {}: expected BxHxSxD, e.g. 8x16x1024x64", shape));
      AttentionSpec spec;
      spec.batch = dimension(shape, dims[0]);
      spec.heads = spec.kv_heads = dimension(shape, dims[1]);
      spec.seq_q = spec.seq_k = dimension(shape, dims[2]);
      spec.head_dim = dimension(shape, dims[3]);
      spec.causal = causal;
      spec.dtype = DType::bf16;
      spec.device = Device::cuda;
      const std::vector<std::int64_t> q_shape{spec.batch, spec.heads, spec.seq_q, spec.head_dim};
      const Tensor q = cuda::gpu_testing::to_device(cuda::gpu_testing::random_host(q_shape, spec.dtype, 1));
      const Tensor k = cuda::gpu_testing::to_device(cuda::gpu_testing::random_host(q_shape, spec.dtype, 2));
      const Tensor v = cuda::gpu_testing::to_device(cuda::gpu_testing::random_host(q_shape, spec.dtype, 3));
      Tensor out = Tensor::empty(q_shape, spec.dtype, Device::cuda);
      const cuda::FusedAttentionArgs args = cuda::fused_attention_args(spec, out, q, k, v, nullptr);
      std::vector<cuda::hopper::FlashTileTiming> timings;
      for (int run = 0; run < runs; ++run)
        timings = cuda::hopper::run_flash_timeline_sm90(args, cuda::backend_stream());
      const double tensor_core_cycles = 4.0 * 128 * 128 * static_cast<double>(spec.head_dim) / 4096.0;
      std::printf("%s sm90-tile-counter timeline (run %d of %d):\n%s", shape.c_str(), runs, runs,
                  cuda::hopper::flash_timeline_text(cuda::hopper::summarize_flash_timeline(timings), tensor_core_cycles)
                      .c_str());
      if (!trace_dir.empty()) {
        const std::string path = trace_dir + "/flash_timeline_" + shape + ".json";
        write_file_atomically(path, cuda::hopper::flash_timeline_chrome_trace(timings), "--trace");
        std::printf("  trace: %s\n", path.c_str());
      }
    }
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "flash_timeline: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flash_timeline: %s\n", e.what());
    return 1;
  }
}
