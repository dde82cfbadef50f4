#pragma once
// The results a compare run leaves in its directory for `attnprof report`: DIR/compare_<...>.json is
// the glance JSON plus the run's shape, device, ceilings, and per row its spec, trace path and
// one step's timeline (so the report needs no trace reader):
//   {"kind": "attnprof.compare", "version": 1, "device": "cuda", "shape": "8x16x1024x64",
//    "ceilings": {...}, "rows": [{<glance row>, "spec": {...}, "trace_path": "...",
//                                 "timeline": {...} | null, "roofline": {...}}]}
#include <attnprof/result.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "report/ceilings.h"
#include "report/glance.h"

namespace attnprof::report {

// "B=8 H=16 S=1024 D=64, bf16, causal"
std::string shape_text(const AttentionSpec& spec);
nlohmann::json spec_json(const AttentionSpec& spec);
AttentionSpec spec_from_json(const nlohmann::json& json);

// rows and results pair up by variant name; a refused row has no result.
nlohmann::json compare_json(const std::vector<GlanceRow>& rows, const std::vector<RunResult>& results,
                            const Ceilings& ceilings);
// Writes PATH (DIR/<compare_stem>.json) atomically (parameter names the option that chose DIR).
void write_compare_json(const std::string& path, const std::vector<GlanceRow>& rows, const std::vector<RunResult>& results,
                        const Ceilings& ceilings, std::string_view parameter = "out_dir");

}  // namespace attnprof::report
