#pragma once
// Host side of the split-KV decode forward (kernels in decode_kernel.cuh, the choice in
// decode_plan.h): what `flash` runs on a GPU when few query rows meet many keys.
#include <attnprof/tensor.h>
#include <cuda_runtime_api.h>

#include "cuda/decode_plan.h"
#include "cuda/fused_attention.h"

namespace attnprof::cuda {

namespace decode {

// What the split kernel reads besides FusedAttentionArgs (decode_kernel.cuh).
struct DecodeParams {
  int splits = 1;
  int keys_per_split = 0;  // a multiple of kDecodeSplitAlign
  int keys = 0;            // keys the last query row sees: the splits cover [0, keys)
  int rows = 0;            // packed rows of one kv head
  int row_blocks = 1;
  int group = 1;           // query heads per kv head
  // The workspace merge's (splits > 1, not merged in clusters: DecodePlan::merges_in_clusters):
  float* partial_o = nullptr;    // [B·H·Sq][splits][D]
  float* partial_lse = nullptr;  // [B·H·Sq][splits]
  // one arrival counter per (batch, kv head, row block), 0 before a launch and left 0 after it (the
  // last CTA to arrive resets it).
  int* counters = nullptr;
};

// A launch made ready: the arguments with the causal offset clamped, the parameters, and the
// workspace they point into (released in the backend stream's order when this is destroyed).
struct PreparedDecode {
  FusedAttentionArgs args;
  DecodeParams params;
  Tensor workspace;
};

// Checks and prepares launch_decode_attention's launch (its throws); bench/decode_configs launches
// other geometries with it.
PreparedDecode prepare_decode(const FusedAttentionArgs& args, const DecodePlan& plan, cudaStream_t stream);

// The SM count of the current device, asked once per device.
int sm_count_of_current_device();

}  // namespace decode

// plan_decode on the current device's SM count and the shared memory its CTAs may take, offered to
// the one-CTA geometry on compute capability 9.0 only (its cluster merge is in the sm_90a machine
// code); or no decode when KernelOverrides::flash_schedule names a kernel (--flash-schedule: that
// kernel runs, so one run can time the two paths).
DecodePlan flash_decode_plan(const DecodeShape& shape);

// The split kernel on `stream`, the CUDA backend's (backend_stream()), in the head dim's production
// geometry or, with plan.one_cta_per_sm, kDecodeGeometry128OneCta; with plan.splits > 1 the
// splits' partial outputs are merged by their LSE, in split order (bit-identical run to run), and
// O written in the same kernel, no combine kernel: with plan.merges_in_clusters() by the first
// CTA of each (batch, kv head, row block)'s cluster, from the others' shared memory, else by the
// last CTA of each to finish, from a device tensor of plan.workspace_bytes (through the allocator:
// the run's memory statistics and the trace's memory events count it), released in that stream's
// order after the kernel. The arrival counters are a per-device buffer of 4 bytes per (batch, kv
// head, row block), outside the allocator: made (cudaMallocAsync) and zeroed (one cudaMemsetAsync)
// on the stream the first time a forward needs more counters than it holds (at least 4096: the
// first decode forward of a process, normally a warm-up), kept for the process; every launch
// leaves them zero, so no forward after that allocates or memsets anything for them. Throws
// UsageError for a dtype other than bf16/fp16, Error for a plan that is not plan.fits(args' shape)
// or, for a plan that merges through the workspace, another stream, or, for one that merges in
// clusters, a device other than compute capability 9.0.
void launch_decode_attention(const FusedAttentionArgs& args, const DecodePlan& plan, cudaStream_t stream);

}  // namespace attnprof::cuda
