#pragma once
// A kernel's launch attributes, set once per (device, kernel) instead of on every launch: two
// cudaFuncSetAttribute calls cost microseconds of a forward's CPU time under CUPTI.
//
// Keyed by the kernel's address, not by a flag of the function that launches it: a program that
// instantiates a kernel template the library also launches (the tests' probes, bench/decode_configs)
// holds its own copy of that kernel, and the dynamic linker merges an inline function's static
// flag across the two, so whichever copy launched first would leave the other without its attributes
// (cudaErrorInvalidValue at launch).
namespace attnprof::cuda {

// Where the unified L1/shared array goes: the driver's choice, or all of it to shared memory (a
// kernel that reads global memory through L2 only, or whose CTAs need it resident together).
enum class Carveout { driver_default, max_shared };

// Sets the kernel's dynamic shared memory limit to dynamic_smem_bytes (needed past 48 KiB) and, with
// Carveout::max_shared, its preferred carveout, once per (current device, kernel). Throws
// attnprof::Error naming the failed call.
void configure_kernel_once(const void* kernel, int dynamic_smem_bytes, Carveout carveout = Carveout::driver_default);

}  // namespace attnprof::cuda
