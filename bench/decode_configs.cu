// decode_configs: times the split-KV decode kernel's geometries (decode_kernel.cuh's DecodeGeometry:
// warps per CTA, cp.async stages per warp, KiB of K and V per warp tile, CTAs per SM, persistent
// grid, L2 prefetch hint, 2 splits merged in a cluster) and split counts around plan_decode's choice at the decode shapes of issue 21 (D 128, bf16,
// one query row, not causal), so the production geometry (decode_plan.h's kDecodeGeometry128) and the
// grid rule (kDecodeWaves, CTAs per SM) are chosen by measurement.
//
//   decode_configs [--samples N] [--waves W] [--ctas-per-sm C] [--shapes BxHxHkvxSk,...]
//
// Each (shape, geometry, splits) is timed over N samples (default 30, at least 20): the stream is
// held by a 20 ms spin kernel while N launches are queued, each between two CUDA events, so the
// events time the device alone; the line prints the median, min and max in ms and the K/V read
// rate, B·Hkv·Sk·D·2 (K and V)·2 bytes over the median. The splits: the plan's for the geometry's
// CTAs per SM (or --ctas-per-sm) and --waves (marked *), and ½, ¾, 5/4, 3/2 and 2× that (fewer
// where 128-key multiples merge counts). Each geometry's output is checked against the production
// path's (launch_decode_attention, the library's own launch with flash's plan): max |ΔO| printed,
// and a line marked DIFFERS (exit status 1 at the end) past 1/64 of max |O|. Bad arguments: one
// line on stderr, exit 2. K and V are random values in [−1, 1) made on the device; past 50 MB (the
// H200's L2 is 50 MiB) every launch reads them from HBM.
#include <attnprof/error.h>
#include <attnprof/tensor.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/decode_forward.h"
#include "cuda/decode_launch.cuh"
#include "cuda/event_pairs.h"
#include "cuda/fused_attention.h"

using namespace attnprof;
using namespace attnprof::cuda;

namespace {

constexpr int kD = 128;
using Bf16 = __nv_bfloat16;

// One geometry: its numbers, the launch of its kernel, its shared memory.
struct Config {
  DecodeGeometrySpec spec;
  void (*launch)(const FusedAttentionArgs&, const decode::DecodeParams&, cudaStream_t, int);
  int smem_bytes;
  std::string name;
  // Registers a thread and CTAs an SM the device keeps resident (after a launch set the kernel's
  // shared memory attribute): whether the geometry gets the occupancy it was built for.
  void (*residency)(int* registers, int* ctas_per_sm);
};

template <class G>
void residency_of(int* registers, int* ctas_per_sm) {
  const auto kernel = decode::flash_decode_splitkv_kernel<kD, Bf16, G>;
  cudaFuncAttributes attributes{};
  ATTNPROF_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  *registers = attributes.numRegs;
  using Tr = decode::DecodeTraits<kD, G>;
  ATTNPROF_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(ctas_per_sm, kernel, Tr::kThreads, Tr::kSmemBytes));
}

template <class G>
Config config_of() {
  Config c{{G::kWarps, G::kStages, G::kTileKiB, G::kCtasPerSm, G::kPersistent, G::kL2Prefetch, G::kClusterMerge},
           &decode::launch_decode_kernel<kD, Bf16, G>,
           decode::DecodeTraits<kD, G>::kSmemBytes,
           {},
           &residency_of<G>};
  c.name = "w" + std::to_string(G::kWarps) + " s" + std::to_string(G::kStages) + " t" + std::to_string(G::kTileKiB) +
           "K c" + std::to_string(G::kCtasPerSm) + (G::kPersistent ? " persistent" : "") +
           (G::kL2Prefetch ? " L2::" + std::to_string(G::kL2Prefetch) + "B" : "") +
           (G::kClusterMerge ? " cluster" : "");
  if (std::is_same_v<G, decode::ProductionGeometry<kD>>) c.name += " (production)";
  if (std::is_same_v<G, decode::GeometryOf<kDecodeGeometry128OneCta>>) c.name += " (production, one-wave grids)";
  return c;
}

// The production geometry first, then the others (bytes in flight per SM: CTAs × warps × (stages
// − 1) × tile; production 2 × 4 × 2 × 8 = 128 KiB).
std::vector<Config> configs() {
  using decode::DecodeGeometry;
  return {
      config_of<decode::ProductionGeometry<kD>>(),
      config_of<DecodeGeometry<2, 6, 8, 2>>(),        // 100 KiB a CTA, 160 KiB in flight, 4 warps an SM
      config_of<DecodeGeometry<2, 4, 8, 3>>(),        // 68 KiB a CTA, 3 CTAs: 144 KiB in flight
      config_of<DecodeGeometry<4, 6, 8, 1>>(),        // 196 KiB, one CTA: 160 KiB in flight
      // 196 KiB, one CTA of 8 warps: 128 KiB (production, one-wave grids)
      config_of<decode::GeometryOf<kDecodeGeometry128OneCta>>(),
      config_of<DecodeGeometry<8, 3, 8, 1>>(),        // the same, 2 splits merged through the workspace, not a cluster
      config_of<DecodeGeometry<4, 3, 16, 1>>(),       // 32-key tiles: 196 KiB, 128 KiB in flight
      config_of<DecodeGeometry<4, 3, 8, 2, true>>(),  // production's, SMs × 2 CTAs looping over the items
      config_of<DecodeGeometry<4, 3, 8, 2, false, 256>>(),  // production's with cp.async's L2::256B prefetch hint
  };
}

struct Shape {
  std::int64_t batch, heads, kv_heads, seq_k;
  std::string label() const {
    return std::to_string(batch) + "x" + std::to_string(heads) + "/" + std::to_string(kv_heads) + "x1x" +
           std::to_string(kD) + " sk " + std::to_string(seq_k);
  }
};

__global__ void fill_uniform(Bf16* data, std::int64_t n, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ static_cast<std::uint32_t>(i >> 32) ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    data[i] = __float2bfloat16(static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// max |a − b| and max |a| into out[0], out[1] (non-negative floats order as their bits); a NaN
// anywhere sets out[2].
__global__ void max_abs_diff(const Bf16* a, const Bf16* b, std::int64_t n, float* out) {
  float diff = 0.0f, top = 0.0f, nan = 0.0f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float x = __bfloat162float(a[i]), y = __bfloat162float(b[i]);
    if (isnan(x) || isnan(y)) nan = 1.0f;
    diff = fmaxf(diff, fabsf(x - y));
    top = fmaxf(top, fabsf(y));
  }
  atomicMax(reinterpret_cast<int*>(out), __float_as_int(diff));
  atomicMax(reinterpret_cast<int*>(out + 1), __float_as_int(top));
  if (nan != 0.0f) out[2] = 1.0f;
}

void fill(Tensor& t, std::uint32_t seed, cudaStream_t stream) {
  fill_uniform<<<1024, 256, 0, stream>>>(static_cast<Bf16*>(t.raw()), t.numel(), seed);
  ATTNPROF_CUDA_CHECK_LAUNCH("fill_uniform");
}

struct Diff {
  float max_abs = 0, max_ref = 0;
  bool nan = false;
};

Diff compare(const Tensor& out, const Tensor& ref, cudaStream_t stream) {
  float* d = nullptr;
  ATTNPROF_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&d), 3 * sizeof(float), stream));
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(d, 0, 3 * sizeof(float), stream));
  max_abs_diff<<<256, 256, 0, stream>>>(static_cast<const Bf16*>(out.raw()), static_cast<const Bf16*>(ref.raw()),
                                       out.numel(), d);
  ATTNPROF_CUDA_CHECK_LAUNCH("max_abs_diff");
  float h[3] = {0, 0, 0};
  ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, stream));
  ATTNPROF_CUDA_CHECK(cudaFreeAsync(d, stream));
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  return Diff{h[0], h[1], h[2] != 0.0f};
}

struct Timing {
  double median = 0, min = 0, max = 0;
};

template <class Launch>
Timing time_launches(const Launch& launch, int samples, cudaStream_t stream) {
  for (int i = 0; i < 3; ++i) launch();  // warm-up
  EventPairs events(static_cast<std::size_t>(samples));
  spin<<<1, 1, 0, stream>>>(40'000'000);  // ~20 ms at the H200's 1.98 GHz: the launches below queue behind it
  ATTNPROF_CUDA_CHECK_LAUNCH("spin");
  for (int i = 0; i < samples; ++i) {
    events.record_begin(static_cast<std::size_t>(i), stream);
    launch();
    events.record_end(static_cast<std::size_t>(i), stream);
  }
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) ms.push_back(events.elapsed_ms(static_cast<std::size_t>(i)));
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  return Timing{n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]), ms.front(), ms.back()};
}

[[noreturn]] void usage(const std::string& what) {
  std::fprintf(stderr,
               "decode_configs: %s (allowed: --samples N (N >= 20), --waves W (W >= 1), --ctas-per-sm C (C >= 1), "
               "--shapes BxHxHkvxSk[,...] with H a multiple of Hkv)\n",
               what.c_str());
  std::exit(2);
}

std::int64_t positive(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 1) usage(what + " '" + text + "' is not a positive integer");
  return v;
}

std::vector<Shape> parse_shapes(const std::string& list) {
  std::vector<Shape> shapes;
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string one = list.substr(at, comma - at);
    std::vector<std::int64_t> v;
    std::size_t p = 0;
    while (p <= one.size()) {
      const std::size_t x = std::min(one.find('x', p), one.size());
      v.push_back(positive(one.substr(p, x - p), "shape " + one + ": field"));
      p = x + 1;
    }
    if (v.size() != 4) usage("shape '" + one + "' has " + std::to_string(v.size()) + " fields, not 4 (BxHxHkvxSk)");
    if (v[1] % v[2] != 0) usage("shape '" + one + "': H " + std::to_string(v[1]) + " is not a multiple of Hkv");
    shapes.push_back({v[0], v[1], v[2], v[3]});
    at = comma + 1;
  }
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 30;
  std::int64_t waves = kDecodeWaves, ctas_per_sm = 0;  // 0: each geometry's own
  // Issue 21's decode shapes: Llama's 32 query heads on 8 kv heads, one query row.
  std::vector<Shape> shapes = {{8, 32, 8, 4096}, {8, 32, 8, 32768}, {8, 32, 8, 131072}, {64, 32, 8, 8192}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage("option '" + arg + "' needs a value or is unknown");
    const std::string value = argv[++i];
    if (arg == "--samples") {
      samples = static_cast<int>(std::min<std::int64_t>(positive(value, "--samples"), 100000));
      if (samples < 20) usage("--samples " + value + " is below 20");
    } else if (arg == "--waves") {
      waves = positive(value, "--waves");
    } else if (arg == "--ctas-per-sm") {
      ctas_per_sm = positive(value, "--ctas-per-sm");
    } else if (arg == "--shapes") {
      shapes = parse_shapes(value);
    } else {
      usage("unknown option '" + arg + "'");
    }
  }
  if (auto why = device_unavailable_reason()) {
    std::fprintf(stderr, "decode_configs: needs a CUDA device: %s\n", why->c_str());
    return 2;
  }
  try {
    cuda_backend();
    const cudaStream_t stream = backend_stream();
    const int sms = decode::sm_count_of_current_device();
    const std::vector<Config> all = configs();
    std::printf("decode_configs: %d SMs, %d samples a line, split rule: %lld waves of SMs x %s CTAs per SM\n", sms,
                samples, static_cast<long long>(waves),
                ctas_per_sm ? std::to_string(ctas_per_sm).c_str() : "the geometry's");
    std::printf("geometry: wW = W warps a CTA, sS = S cp.async stages a warp, tT = T KiB of K and V a warp tile, "
                "cC = built for C CTAs an SM, persistent = SMs x C CTAs looping over the work, L2::256B = cp.async's "
                "L2 prefetch hint, cluster = 2 splits merged in a thread block cluster; splits * = plan_decode's choice for that rule; the first line of a shape is the "
                "library's own forward (launch_decode_attention, flash's plan), the reference for max |dO|\n");
    std::printf("%-26s | %-28s | %-18s | %-9s | %-30s | %-9s | %s\n", "shape (BxH/HkvxSqxD)", "geometry (smem a CTA)",
                "splits (keys each)", "grid", "median ms [min - max]", "K/V TB/s", "max |dO| vs production");
    bool any_differs = false;
    for (const Shape& sh : shapes) {
      AttentionSpec spec;
      spec.batch = sh.batch;
      spec.heads = sh.heads;
      spec.kv_heads = sh.kv_heads;
      spec.seq_q = 1;
      spec.seq_k = sh.seq_k;
      spec.head_dim = kD;
      spec.causal = false;
      spec.layout = Layout::bhsd;
      spec.dtype = DType::bf16;
      spec.device = Device::cuda;
      Tensor q = Tensor::empty({sh.batch, sh.heads, 1, kD}, DType::bf16, Device::cuda);
      Tensor k = Tensor::empty({sh.batch, sh.kv_heads, sh.seq_k, kD}, DType::bf16, Device::cuda);
      Tensor v = Tensor::empty({sh.batch, sh.kv_heads, sh.seq_k, kD}, DType::bf16, Device::cuda);
      Tensor ref = Tensor::empty({sh.batch, sh.heads, 1, kD}, DType::bf16, Device::cuda);
      Tensor out = Tensor::empty({sh.batch, sh.heads, 1, kD}, DType::bf16, Device::cuda);
      fill(q, 1, stream);
      fill(k, 2, stream);
      fill(v, 3, stream);
      const double kv_bytes = 2.0 * sh.batch * sh.kv_heads * static_cast<double>(sh.seq_k) * kD * 2;
      const FusedAttentionArgs ref_args = fused_attention_args(spec, ref, q, k, v, nullptr);
      const DecodeShape shape = DecodeShape::of(ref_args);
      const DecodePlan production = flash_decode_plan(shape);
      if (!production.runs()) throw Error(sh.label() + ": flash would not run the decode kernel (no plan)");
      launch_decode_attention(ref_args, production, stream);
      const Timing lib = time_launches([&] { launch_decode_attention(ref_args, production, stream); }, samples, stream);
      std::printf("%-26s | %-28s | %4d* (%6lld keys) | %-9s | %.4f [%.4f - %.4f]        | %9.3f | reference\n",
                  sh.label().c_str(), "launch_decode_attention", production.splits,
                  static_cast<long long>(production.keys_per_split), "", lib.median, lib.min, lib.max,
                  kv_bytes / (lib.median * 1e-3) / 1e12);
      const FusedAttentionArgs args = fused_attention_args(spec, out, q, k, v, nullptr);
      struct Best {
        double ms = 1e30;
        std::string what;
      } best;
      for (const Config& c : all) {
        if (&sh == &shapes.front()) {  // once a geometry, after its first launch below
          // The workspace every geometry may need (a one-CTA plan of 2 splits has none).
          c.launch(args, decode::prepare_decode(args, decode_plan_with_splits(shape, production.splits), stream).params,
                   stream, sms);
          int registers = 0, resident = 0;
          c.residency(&registers, &resident);
          std::printf("%-26s | %-28s | %d registers, %d CTAs an SM resident%s\n", "", c.name.c_str(), registers, resident,
                      resident == c.spec.ctas_per_sm ? "" : " (NOT the CTAs an SM it is built for)");
        }
        const DecodeGridRule rule{waves, ctas_per_sm ? ctas_per_sm : c.spec.ctas_per_sm};
        const DecodePlan planned = plan_decode(shape, sms, rule);
        std::vector<int> tried;
        for (const int num : {2, 3, 4, 5, 6, 8}) {  // quarters of the plan's count: ½ .. 2×
          const DecodePlan plan = decode_plan_with_splits(shape, std::max(planned.splits * num / 4, 1));
          if (!plan.runs() || std::find(tried.begin(), tried.end(), plan.splits) != tried.end()) continue;
          tried.push_back(plan.splits);
          const decode::PreparedDecode prepared = decode::prepare_decode(args, plan, stream);
          const auto launch = [&] { c.launch(prepared.args, prepared.params, stream, sms); };
          ATTNPROF_CUDA_CHECK(cudaMemsetAsync(out.raw(), 0xff, static_cast<std::size_t>(out.numel()) * 2, stream));  // NaN
          launch();
          const Diff d = compare(out, ref, stream);
          const bool differs = d.nan || !(d.max_abs <= d.max_ref / 64.0f);
          any_differs = any_differs || differs;
          const Timing t = time_launches(launch, samples, stream);
          const dim3 grid = c.spec.persistent ? dim3(static_cast<unsigned>(std::min<std::int64_t>(
                                                    sh.batch * sh.kv_heads * plan.row_blocks * plan.splits,
                                                    std::int64_t{sms} * c.spec.ctas_per_sm)))
                                              : dim3(static_cast<unsigned>(sh.batch * sh.kv_heads * plan.row_blocks),
                                                     static_cast<unsigned>(plan.splits));
          const std::string geometry = c.name + " (" + std::to_string(c.smem_bytes / 1024) + " KiB)";
          const std::string grid_text = std::to_string(grid.x) + "x" + std::to_string(grid.y);
          std::printf("%-26s | %-28s | %4d%s (%6lld keys) | %-9s | %.4f [%.4f - %.4f]        | %9.3f | %.3g%s\n",
                      sh.label().c_str(), geometry.c_str(), plan.splits, plan.splits == planned.splits ? "*" : " ",
                      static_cast<long long>(plan.keys_per_split), grid_text.c_str(), t.median, t.min, t.max,
                      kv_bytes / (t.median * 1e-3) / 1e12, d.max_abs,
                      differs ? (d.nan ? "  DIFFERS: NaN in the output (unwritten or broken merge)"
                                       : "  DIFFERS: past 1/64 of max |O|")
                              : "");
          if (!differs && t.median < best.ms)
            best = {t.median, c.name + ", " + std::to_string(plan.splits) + " splits" +
                                  (plan.splits == planned.splits ? " (the plan's)" : " (not the plan's)") +
                                  " = a decode_plan.h DecodeGeometrySpec{" + std::to_string(c.spec.warps) + ", " +
                                  std::to_string(c.spec.stages) + ", " + std::to_string(c.spec.tile_kib) + ", " +
                                  std::to_string(c.spec.ctas_per_sm) + ", " + (c.spec.persistent ? "true" : "false") +
                                  ", " + std::to_string(c.spec.l2_prefetch) + ", " +
                                  (c.spec.cluster_merge ? "true" : "false") + "}"};
        }
      }
      std::printf("%-26s | fastest: %s, %.4f ms = %.3f TB/s (production path %.4f ms: %.2fx)\n\n", sh.label().c_str(),
                  best.what.c_str(), best.ms, kv_bytes / (best.ms * 1e-3) / 1e12, lib.median, lib.median / best.ms);
    }
    if (any_differs) {
      std::fprintf(stderr, "decode_configs: some geometry's output DIFFERS from the production path's (lines above)\n");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decode_configs: %s\n", e.what());
    return 2;
  }
}
