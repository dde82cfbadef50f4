// The Hopper building blocks on the GPU (sm_90 only; skips with the reason elsewhere): one wgmma,
// one TMA tile load read back through the swizzle function, and TMA feeding wgmma, each compared
// exactly with a CPU computation in fp64. Inputs are small integers (exact in bf16, and every
// product sum exact in fp32), so any layout or swizzle mistake shows as a wrong element, not noise.
#include <attnprof/dtype.h>
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "cuda/check.h"
#include "cuda/gpu_test_util.h"
#include "cuda/hopper_probes.h"
#include "cuda/hopper/flash_hopper.h"
#include "cuda/hopper/swizzle.h"
#include "cuda/hopper/tma.h"

using namespace attnprof;
using namespace attnprof::cuda::hopper;

#define ATTNPROF_REQUIRE_HOPPER()                                                        \
  do {                                                                                   \
    ATTNPROF_REQUIRE_GPU();                                                              \
    if (auto attnprof_why_ = hopper_unavailable_reason()) GTEST_SKIP() << *attnprof_why_; \
  } while (0)

namespace {

// A cudaMalloc'd buffer holding a copy of `host` (or `count` uninitialised elements).
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    ATTNPROF_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    ATTNPROF_CUDA_CHECK(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data_); }
  T* get() const { return data_; }
  std::vector<T> to_host() const {
    ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> host(count_);
    ATTNPROF_CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_;
};

std::uint16_t bf16_bits(double value) { return float_to_bf16(static_cast<float>(value)).bits; }
double bf16_value(std::uint16_t bits) { return bf16_to_float(bf16{bits}); }

// rows × cols bf16 (row-major) of ((row·cols + col) % modulus) − offset: an arange folded to small
// integers, with a period that does not divide the row length so no two rows are alike.
std::vector<std::uint16_t> arange_bf16(int rows, int cols, int modulus, int offset) {
  std::vector<std::uint16_t> out(static_cast<std::size_t>(rows * cols));
  for (int i = 0; i < rows * cols; ++i) out[static_cast<std::size_t>(i)] = bf16_bits(i % modulus - offset);
  return out;
}

// out[m][n] = c[m][n] + Σ_k a[m][k]·b[n][k] in fp64 (a: M×K, b: N×K, both row-major bf16).
std::vector<double> reference_abt(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b, int m_rows,
                                  int n_rows, int k, const std::vector<float>& c) {
  std::vector<double> out(static_cast<std::size_t>(m_rows * n_rows));
  for (int m = 0; m < m_rows; ++m)
    for (int n = 0; n < n_rows; ++n) {
      double sum = c.empty() ? 0.0 : c[static_cast<std::size_t>(m * n_rows + n)];
      for (int kk = 0; kk < k; ++kk)
        sum += bf16_value(a[static_cast<std::size_t>(m * k + kk)]) * bf16_value(b[static_cast<std::size_t>(n * k + kk)]);
      out[static_cast<std::size_t>(m * n_rows + n)] = sum;
    }
  return out;
}

void expect_exact_64x64(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), 64u * 64u);
  int mismatches = 0;
  for (int i = 0; i < 64 * 64; ++i) {
    if (static_cast<double>(got[static_cast<std::size_t>(i)]) == want[static_cast<std::size_t>(i)]) continue;
    if (++mismatches <= 8)
      ADD_FAILURE() << "element (" << i / 64 << ", " << i % 64 << "): got " << got[static_cast<std::size_t>(i)]
                    << ", want " << want[static_cast<std::size_t>(i)];
  }
  EXPECT_EQ(mismatches, 0) << "of 4096 elements";
}

}  // namespace

// (a) One m64n64k16 wgmma from swizzled shared memory, accumulating onto c loaded through the
// documented fragment layout: out = c + a·bᵀ exactly.
TEST(HopperWgmma, OneM64N64K16MatchesTheCpuProduct) {
  ATTNPROF_REQUIRE_HOPPER();
  const auto a = arange_bf16(64, 16, 23, 11);  // M×K, values −11..11
  const auto b = arange_bf16(64, 16, 19, 9);   // N×K, values −9..9
  std::vector<float> c(64 * 64);
  for (int i = 0; i < 64 * 64; ++i) c[static_cast<std::size_t>(i)] = static_cast<float>(i % 7 - 3);
  DeviceBuffer<std::uint16_t> a_dev(a), b_dev(b);
  DeviceBuffer<float> c_dev(c), out(64 * 64);
  run_wgmma_probe(out.get(), a_dev.get(), b_dev.get(), c_dev.get(), nullptr);
  expect_exact_64x64(out.to_host(), reference_abt(a, b, 64, 64, 16, c));
}

// (b) A TMA load of one 64×64 box of a 128×128 bf16 tensor. The shared-memory image is read back
// through swizzle128_bf16_offset and compared bit for bit with the source. Every source element has
// its own bit pattern (0x0080 + row·128 + col: distinct positive normal bf16), so a misplaced
// element cannot pass. Tile (1,1) is the one asked for; (0,1) and (1,0) catch swapped coordinates.
TEST(HopperTma, TileLoadReadBackThroughTheSwizzleMatchesTheSource) {
  ATTNPROF_REQUIRE_HOPPER();
  constexpr int kRows = 128, kCols = 128;
  std::vector<std::uint16_t> source(kRows * kCols);
  for (int i = 0; i < kRows * kCols; ++i) source[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(0x0080 + i);
  DeviceBuffer<std::uint16_t> source_dev(source);
  const CUtensorMap map = make_bf16_tile_map(source_dev.get(), kRows, kCols, kCols);
  for (auto [tile_row, tile_col] : {std::pair{1, 1}, std::pair{0, 1}, std::pair{1, 0}}) {
    SCOPED_TRACE(testing::Message() << "tile (" << tile_row << ", " << tile_col << ")");
    DeviceBuffer<std::uint16_t> image_dev(kTileBytes / 2);
    ATTNPROF_CUDA_CHECK(cudaMemset(image_dev.get(), 0xFF, kTileBytes));  // NaN patterns: unwritten bytes show
    run_tma_tile_probe(image_dev.get(), map, tile_row, tile_col, nullptr);
    const std::vector<std::uint16_t> image = image_dev.to_host();
    int mismatches = 0;
    for (std::uint32_t r = 0; r < 64; ++r)
      for (std::uint32_t col = 0; col < 64; ++col) {
        const std::uint16_t got = image[swizzle128_bf16_offset(r, col) / 2];
        const std::uint16_t want =
            source[(static_cast<std::size_t>(tile_row) * 64 + r) * kCols + static_cast<std::size_t>(tile_col) * 64 + col];
        if (got != want && ++mismatches <= 8)
          ADD_FAILURE() << "tile element (" << r << ", " << col << "): got 0x" << std::hex << got << ", want 0x" << want
                        << std::dec;
      }
    EXPECT_EQ(mismatches, 0) << "of 4096 elements";
  }
}

// (d) The chain: TMA loads A (rows 0..63 of a 64×64 M×K tensor) and B (rows 64..127 of a 128×64
// N×K tensor) swizzled into shared memory; four k16 wgmma steps read them through descriptors
// advanced 32 B per step; out = A·Bᵀ exactly (the NaN-filled accumulator is dropped by scale-d 0).
TEST(HopperTmaWgmma, LoadedTilesMultiplyLikeTheCpu) {
  ATTNPROF_REQUIRE_HOPPER();
  const auto a = arange_bf16(64, 64, 17, 8);    // M×K, values −8..8
  const auto b = arange_bf16(128, 64, 13, 6);   // N×K, values −6..6; B is its rows 64..127
  DeviceBuffer<std::uint16_t> a_dev(a), b_dev(b);
  const CUtensorMap a_map = make_bf16_tile_map(a_dev.get(), 64, 64, 64);
  const CUtensorMap b_map = make_bf16_tile_map(b_dev.get(), 128, 64, 64);
  DeviceBuffer<float> out(64 * 64);
  run_tma_wgmma_probe(out.get(), a_map, 0, b_map, 1, nullptr);
  const std::vector<std::uint16_t> b_tile(b.begin() + 64 * 64, b.end());
  expect_exact_64x64(out.to_host(), reference_abt(a, b_tile, 64, 64, 64, {}));
}
