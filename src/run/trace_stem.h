#pragma once
// The file stem of a run's trace (STEM.json.gz) and table (STEM.txt): one name per configuration,
// so runs that differ in anything never write over each other's files.
#include <attnprof/run.h>

#include <string>

namespace attnprof {

// "<B>_<H>_<S>_<D>_<variant>_<device>" (the blog's trace names, with the device), then, in this
// order and only where the run differs from the default, one token each:
//   fp32 | fp16                   the dtype (default bf16)
//   nocausal | causal-bottom-right  the mask (default causal, top-left)
//   bshd                          the layout (default bhsd)
//   kv<N>                         key/value heads (default: = heads)
//   sk<N>                         key/value sequence length (default: = S)
//   t<N>                          --threads (default 0: all cores)
//   seed<N>                       the input seed (default 0)
//   sched<wait>-<warmup>-<active>  the profiler schedule (default 1-1-3)
//   <flash schedule>              --flash-schedule (sm80, sm90-cta-per-tile, sm90-tile-counter)
//   engine<N>                     --cudnn-engine
//   isa-<ISA>                     --cpu-isa
// A variant name's bytes outside [A-Za-z0-9_.-] are written as %XX (and '%' as %25). No token
// spells a device name, so the stem read from its end gives back the configuration: two
// configurations never share a stem.
std::string trace_stem(const RunOptions& options);

}  // namespace attnprof
