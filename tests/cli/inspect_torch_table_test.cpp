// `attnprof inspect` on PyTorch's anchor traces prints torch's own key_averages table: both the
// printed table and torch's .txt are read by the same independent parser (tests/report/torch_table.h)
// and every row torch printed is in ours, at its place (or inside a tie of the sort key), with the
// same name and calls and Self CPU, CPU total, Self CUDA, CUDA total within 1%.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"
#include "report/torch_table.h"

using attnprof::testing::CliResult;
using attnprof::testing::run_cli;

namespace {

bool near(double ours, double theirs) { return std::abs(ours - theirs) <= 0.01 * std::abs(theirs) + 0.0015; }

// The key_averages table inspect printed (everything up to its "Self CUDA time total:" line; the
// step summary follows it), cut into a file of the run's work dir and read into `table` by the same
// parser as torch's .txt; a fatal failure, with inspect's output, when the table has no end line.
void read_printed_table(const CliResult& r, attnprof::testing::TorchTable* table) {
  const std::size_t total = r.out.find("Self CUDA time total:");
  ASSERT_NE(total, std::string::npos) << r.out;
  const std::size_t end = r.out.find('\n', total);
  ASSERT_NE(end, std::string::npos) << r.out;
  const std::string printed = r.work_dir + "/table.txt";
  std::ofstream(printed) << r.out.substr(0, end + 1);
  *table = attnprof::testing::read_torch_table(printed);
}

bool same_row(const attnprof::testing::TorchRow& a, const attnprof::testing::TorchRow& b) {
  return a.name == b.name && a.calls == b.calls && near(a.self_cpu_us, b.self_cpu_us) &&
         near(a.cpu_total_us, b.cpu_total_us) && near(a.self_cuda_us, b.self_cuda_us) &&
         near(a.cuda_total_us, b.cuda_total_us);
}

class InspectTorchTable : public ::testing::TestWithParam<std::string> {};

TEST_P(InspectTorchTable, PrintsTorchsRowsNumberForNumber) {
  const std::string base = std::string(ATTNPROF_SOURCE_DIR) + "/tests/data/pytorch-traces/8_16_1024_64_" + GetParam();
  CliResult r = run_cli({"inspect", base + ".json.gz", "--row-limit", "15", "--no-insights"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  attnprof::testing::TorchTable ours;
  ASSERT_NO_FATAL_FAILURE(read_printed_table(r, &ours));
  attnprof::testing::TorchTable torch = attnprof::testing::read_torch_table(base + ".txt");
  ASSERT_EQ(torch.rows.size(), 15u);
  ASSERT_EQ(ours.rows.size(), torch.rows.size()) << r.out;
  EXPECT_TRUE(near(ours.self_cpu_total_us, torch.self_cpu_total_us));
  EXPECT_TRUE(near(ours.self_cuda_total_us, torch.self_cuda_total_us));
  std::vector<bool> used(ours.rows.size(), false);
  for (std::size_t i = 0; i < torch.rows.size(); ++i) {
    EXPECT_TRUE(near(ours.rows[i].cuda_total_us, torch.rows[i].cuda_total_us)) << "row " << i << "\n" << r.out;
    std::size_t found = ours.rows.size();
    if (same_row(ours.rows[i], torch.rows[i])) found = i;
    for (std::size_t j = 0; j < ours.rows.size() && found == ours.rows.size(); ++j)
      if (!used[j] && same_row(ours.rows[j], torch.rows[i])) found = j;
    ASSERT_LT(found, ours.rows.size()) << "torch's row " << i << " (" << torch.rows[i].name << ") is not in\n" << r.out;
    used[found] = true;
  }
  std::filesystem::remove_all(r.work_dir);
}

INSTANTIATE_TEST_SUITE_P(PyTorch, InspectTorchTable, ::testing::Values("naive", "math", "flash"));

// The recorded model traces (tests/data/model-traces, torch's table printed with row_limit=-1 and
// 90-character names): every row whose name neither table shortens is in ours, with the
// same calls, Self CPU and CPU total. The training traces nest ops in ops of the same name
// (aten::layer_norm in aten::layer_norm, aten::scaled_dot_product_attention in itself, …), which
// torch folds into one call (profiler_util.py, EventList._remove_dup_nodes): the cuDNN GPT's
// aten::scaled_dot_product_attention is 8 calls and 1.330 ms, not 16 and 2.637 ms.
class InspectModelTable : public ::testing::TestWithParam<std::string> {};

TEST_P(InspectModelTable, PrintsTorchsCallsAndCpuTimes) {
  const std::string base = std::string(ATTNPROF_SOURCE_DIR) + "/tests/data/model-traces/" + GetParam();
  CliResult r = run_cli({"inspect", base + ".json.gz", "--row-limit", "-1", "--no-insights"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  attnprof::testing::TorchTable ours;
  ASSERT_NO_FATAL_FAILURE(read_printed_table(r, &ours));
  attnprof::testing::TorchTable torch = attnprof::testing::read_torch_table(base + ".txt");
  ASSERT_GT(torch.rows.size(), 40u);
  EXPECT_TRUE(near(ours.self_cpu_total_us, torch.self_cpu_total_us));
  std::vector<bool> used(ours.rows.size(), false);
  std::size_t compared = 0;
  for (const auto& theirs : torch.rows) {
    // Our table has torch's default 55 columns of name: a name of 52 characters or more is cut.
    if (theirs.name.size() >= 52 || theirs.name.find("...") != std::string::npos) continue;
    // Kineto's `overhead` events (CUDA's "Lazy Function Loading") are rows of torch's table and
    // not yet of ours.
    if (theirs.name == "Lazy Function Loading") continue;
    ++compared;
    bool found = false;
    for (std::size_t j = 0; j < ours.rows.size() && !found; ++j) {
      const auto& row = ours.rows[j];
      if (used[j] || row.name != theirs.name || row.calls != theirs.calls || !near(row.self_cpu_us, theirs.self_cpu_us) ||
          !near(row.cpu_total_us, theirs.cpu_total_us))
        continue;
      used[j] = found = true;
    }
    EXPECT_TRUE(found) << GetParam() << ": torch's " << theirs.name << " (" << theirs.calls << " calls, "
                       << theirs.cpu_total_us << " us CPU total) is not in ours";
  }
  EXPECT_GT(compared, 40u);
  std::filesystem::remove_all(r.work_dir);
}

INSTANTIATE_TEST_SUITE_P(Models, InspectModelTable,
                         ::testing::Values("gpt_train_sdpa_cudnn", "gpt_train_naive", "gpt_train_flex_compiled",
                                           "gpt_decode_kvcache_gqa"));

}  // namespace
