#pragma once
// ATTNPROF_HOST_DEVICE marks the small layout functions that both the kernels (nvcc) and the host
// tests (the C++ compiler, no CUDA keywords) must compute identically.
#if defined(__CUDACC__)
#define ATTNPROF_HOST_DEVICE __host__ __device__
#else
#define ATTNPROF_HOST_DEVICE
#endif

// True only in the device pass for sm_90a, where wgmma, TMA and mbarrier transactions exist. The
// sm_80 pass of the same .cu file compiles the Hopper kernels to a trap (the launchers refuse a
// device that is not compute capability 9.0 before launching).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTNPROF_SM90A 1
#else
#define ATTNPROF_SM90A 0
#endif
