#pragma once
// What the insight tests share: finding an insight by code, and the checkout's test data.
#include <cstdlib>
#include <string>
#include <vector>

#include "report/insights.h"

namespace attnprof::report {

// The insight of this code, or nullptr when it did not fire.
inline const Insight* find(const std::vector<Insight>& insights, const std::string& code) {
  for (const Insight& i : insights)
    if (i.code == code) return &i;
  return nullptr;
}

// The source tree: $ATTNPROF_SOURCE_DIR, else the one this test was built from.
inline std::string source_dir() {
  const char* dir = std::getenv("ATTNPROF_SOURCE_DIR");
  return dir ? dir : ATTNPROF_TEST_SOURCE_DIR;
}

// tests/data/model-traces/STEM.json.gz (scripts/record_model_traces.py recorded them on the H200).
inline std::string model(const std::string& stem) { return source_dir() + "/tests/data/model-traces/" + stem + ".json.gz"; }

}  // namespace attnprof::report
