#pragma once
// Guess first, then look: `--expect gemm,mul,masked_fill,softmax,gemm` against the work one
// forward really launched, aligned in order (a longest common subsequence), naming what the
// guess missed and what it listed that never ran.
#include <attnprof/trace.h>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "report/forward_work.h"

namespace attnprof::report {

// The words a guess may use: the classes themselves and the op names practitioners write.
// Throws UsageError naming expect and the allowed words for an unknown word or an empty list.
std::vector<std::string> parse_expect(std::string_view list);
std::string expect_vocabulary();  // "gemm, matmul, bmm, mul, add, ..."
bool expect_word_matches(const std::string& word, KernelClass observed);

struct ObservedStep {
  KernelClass kind;
  std::string label;   // launching op, else the kernel's short name
  std::string kernel;  // the kernel's short name
  std::string path;    // up to three launching ops, outermost first ("aten::masked_fill › aten::clone › aten::copy_")
};

struct ExpectResult {
  std::vector<std::string> guess;
  std::vector<ObservedStep> observed;  // one forward's work, memsets apart unless guessed
  int memsets_apart = 0;
  // The alignment in order: each row a guessed word, an observed step, or both.
  struct Row {
    int guess = -1;     // index into guess, -1: not guessed
    int observed = -1;  // index into observed, -1: guessed but missing
  };
  std::vector<Row> rows;
  int forward_index = 0;    // which forward was compared (0-based)
  int forwards = 0;         // forwards in the trace
  int same_as_compared = 0; // forwards whose work has the compared sequence of classes

  int matched() const;
  std::vector<int> missing() const;     // guessed words with no observed step
  std::vector<int> not_guessed() const; // observed steps the guess left out
  bool exact() const { return missing().empty() && not_guessed().empty(); }
};

// Compares the guess with the most common work sequence among the trace's forwards.
ExpectResult compare_expect(const std::vector<std::string>& guess, const TraceWork& work);
ExpectResult compare_expect(const std::vector<std::string>& guess, const trace::Trace& trace);

std::string expect_text(const ExpectResult& result);
nlohmann::json expect_json(const ExpectResult& result);

}  // namespace attnprof::report
