#pragma once
// The file stem of a run's trace (STEM.json.gz) and table (STEM.txt), and of compare's and
// sweep's results: one name per configuration, so runs that differ in anything never write over
// each other's files.
#include <attnprof/run.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnprof {

// "<B>_<H>_<S>_<D>_<variant>_<device>" (the blog's trace names, with the device), then, in this
// order and only where the run differs from the default, one token each:
//   backward | train              the pass (default forward)
//   fp32 | fp16                   the dtype (default bf16)
//   nocausal | causal-bottom-right  the mask (default causal, top-left)
//   bshd                          the layout (default bhsd)
//   kv<N>                         key/value heads (default: = heads)
//   sk<N>                         key/value sequence length (default: = S)
//   t<N>                          --threads (default 0: all cores)
//   seed<N>                       the input seed (default 0)
//   sched<wait>-<warmup>-<active>  the profiler schedule (default 1-1-10)
//   mt<S>                         --min-time S (default 0.2 s)
//   <flash schedule>              --flash-schedule (sm80, sm90-cta-per-tile, sm90-tile-counter)
//   engine<N>                     --cudnn-engine
//   isa-<ISA>                     --cpu-isa
// A variant name's bytes outside [A-Za-z0-9_.-] are written as %XX (and '%' as %25). No token
// spells a device name, so the stem read from its end gives back the configuration: two
// configurations never share a stem.
std::string trace_stem(const RunOptions& options);

// The stem of compare's results file (STEM.json in --out): "compare_<B>_<H>_<S>_<D>_<device>",
// trace_stem's tokens, then r<N> for --rounds other than compare_rounds(device) and v<variants joined by
// '+'> for an explicit --variants list (`variants` empty: every variant, no token). A list token
// over 64 characters is written as its letter, '=' and a 64-bit hash of the list.
std::string compare_stem(const RunOptions& options, const std::vector<std::string>& variants);
// The stem of sweep's results (STEM.csv and STEM.json in --out): "sweep_<B>_<H>_<device>",
// trace_stem's tokens of options (sched<...> for --forwards other than 10), noprofile for
// --no-profile, s<seqs joined by '+'>, k<key lengths> for an explicit --seq-k, d<head dims>, and
// v<variants> for an explicit --variants.
std::string sweep_stem(const RunOptions& options, const std::vector<std::int64_t>& seqs,
                       const std::vector<std::int64_t>& head_dims, const std::vector<std::string>& variants,
                       const std::vector<std::int64_t>& seq_ks = {});

}  // namespace attnprof
