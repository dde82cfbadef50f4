#pragma once
// The roofline: analytic FLOPs and the least bytes a variant's sequence of kernels must move,
// placed under the measured ceilings.
#include <attnprof/attention.h>

#include <nlohmann/json.hpp>

#include <string>

#include "report/ceilings.h"

namespace attnprof::report {

// AttentionSpec::flops(): 4·B·H·Sq·Sk·D, halved when causal top-left (the anchors' convention),
// the visible (i, j) pairs exactly when causal bottom-right.
double attention_flops(const AttentionSpec& spec);
// q and k, v read once, out written once: what any implementation must move.
double attention_io_bytes(const AttentionSpec& spec);
// One B·H·Sq·Sk score matrix in the spec's dtype.
double score_matrix_bytes(const AttentionSpec& spec);
// The least bytes a forward of `kernels` kernels and `memcpys` copies moves: a single kernel
// moves only q, k, v and out; a chain also writes the scores once (first GEMM), reads them
// once (last GEMM), and each kernel or copy in between reads and writes them once.
double minimal_bytes(const AttentionSpec& spec, double kernels, double memcpys);

struct RooflinePoint {
  std::string variant;
  AttentionSpec spec;
  double flops = 0;
  double bytes = 0;
  double intensity = 0;     // FLOP per byte
  double tflops = 0;        // attained
  double roof_tflops = 0;   // min(matmul ceiling of the dtype, bandwidth × intensity); 0 without ceilings
  bool memory_bound = false;  // intensity left of the ridge
  double pct_of_roof = 0;
};

RooflinePoint roofline_point(const std::string& variant, const AttentionSpec& spec, double kernels, double memcpys,
                             double tflops, const Ceilings& ceilings);
nlohmann::json roofline_json(const RooflinePoint& point);

}  // namespace attnprof::report
