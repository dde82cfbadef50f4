#pragma once
// compare's later rounds, each measured by a fresh attnprof process: the same command line plus
// --measure-round, whose JSON of samples comes back through a pipe. A fresh process allocates,
// places pages and warms up anew, so the spread of a compare covers what one whole process may
// run slower or faster than another, which no in-process spread can.
#include <attnprof/compare.h>

#include <string>
#include <vector>

namespace attnprof::cli {

// main() keeps its arguments here before it runs a command.
void remember_command_line(int argc, char** argv);

// The measurer compare_variants calls for rounds 2..: runs /proc/self/exe with the remembered
// arguments plus `--measure-round N --round-variants a,b` and reads its samples. `progress`
// prints "round N of M (a fresh process)..." on stderr. A round's process that fails is an Error
// naming the round, its exit status and the last line it wrote on stderr.
RoundMeasurer rounds_in_fresh_processes(int rounds, bool progress);

// What the process measuring a round prints: {"pid": P, "samples": [{"variant", "times_ns",
// "cpu_times_ns"}]}, and how its parent reads it back (Error on anything else).
std::string round_samples_json(const std::vector<std::string>& variants, const std::vector<RoundSamples>& samples);
std::vector<RoundSamples> parse_round_samples(const std::string& json, const std::vector<std::string>& variants,
                                              int round);

}  // namespace attnprof::cli
