#pragma once
// A test-only probe of the sm_90a flash kernel (src/cuda/hopper/flash_*.cuh), built into the GPU
// test binary, not the library.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace attnprof::cuda::hopper {

// The kernel's two GEMMs alone, on one consumer warpgroup, to localise a failure of the whole kernel:
// on the cta_per_tile kernel of head dim D = flash_sm90_kernel_head_dim(head_dim) and key tile N =
// its kBlockN (flash_sm90_block_n(D)), q, k, v are device bf16 [128 × head_dim] row-major (one head;
// q rows 64.. and k, v rows N.. unused), p_matrix is bf16 bits [64 × N]; writes s_out =
// q[0:64]·k[0:N]ᵀ (64 × N fp32) and o_out = p_matrix·v[0:N] (64 × D fp32, zero past head_dim), both
// row-major, loading through the kernel's TMA maps and reading through its descriptors. head_dim a
// multiple of 8 from 8 to 256; launches one CTA on `stream` and does not synchronise.
void run_flash_gemm_probe(float* s_out, float* o_out, const void* q, const void* k, const void* v,
                          const std::uint16_t* p_matrix, int head_dim, cudaStream_t stream);

}  // namespace attnprof::cuda::hopper
