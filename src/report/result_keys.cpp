#include "report/result_keys.h"

#include <attnprof/dtype.h>

#include <cmath>
#include <cstdint>

namespace attnprof::report {

void put_spec_keys(nlohmann::json& row, const AttentionSpec& s) {
  row.update(nlohmann::json{{"device", std::string(device_name(s.device))},
                            {"dtype", std::string(dtype_name(s.dtype))},
                            {"batch", s.batch},
                            {"heads", s.heads},
                            {"kv_heads", s.kv_heads},
                            {"seq", s.seq_q},
                            {"seq_k", s.seq_k},
                            {"head_dim", s.head_dim},
                            {"causal", s.causal},
                            {"causal_align", std::string(causal_align_name(s.causal_align))},
                            {"layout", std::string(layout_name(s.layout))}});
}

nlohmann::json count_json(double count) {
  if (std::isfinite(count) && count == std::floor(count) && std::fabs(count) < 9.0e15)
    return nlohmann::json(static_cast<std::int64_t>(count));
  return nlohmann::json(count);
}

nlohmann::json flops_json(double flops) { return nlohmann::json(static_cast<std::int64_t>(std::llround(flops))); }

}  // namespace attnprof::report
