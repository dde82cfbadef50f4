// key_averages against torch.profiler's own tables (the .txt beside each anchor trace) and
// against hand-worked answers.
#include <attnprof/error.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "../trace/trace_test_util.h"
#include "report/key_averages.h"
#include "torch_table.h"
#include "trace/reader.h"

namespace attnprof::report {
namespace {

using trace::Category;

std::string anchor_table(const std::string& variant) {
  return testing::source_dir() + "/tests/data/pytorch-traces/8_16_1024_64_" + variant + ".txt";
}

void expect_within(double ours, double theirs, double rel, const std::string& what) {
  EXPECT_LE(std::abs(ours - theirs), rel * std::abs(theirs) + 0.0015) << what << ": ours " << ours << " torch " << theirs;
}

class AnchorTable : public ::testing::TestWithParam<std::string> {};

// The name as torch's table prints it: 52 characters and "..." when it has 52 or more.
std::string torch_display_name(const std::string& name) { return name.size() >= 52 ? name.substr(0, 52) + "..." : name; }

bool row_matches(const KeyAverage& o, const testing::TorchRow& r) {
  auto near = [](double ours, double theirs) { return std::abs(ours - theirs) <= 0.01 * std::abs(theirs) + 0.0015; };
  return torch_display_name(o.name) == r.name && o.calls == r.calls && near(o.self_cpu_ns / 1000.0, r.self_cpu_us) &&
         near(o.cpu_total_ns / 1000.0, r.cpu_total_us) && near(o.self_device_ns / 1000.0, r.self_cuda_us) &&
         near(o.device_total_ns / 1000.0, r.cuda_total_us);
}

// Item: torch's table, number for number. Each anchor's .txt is
// key_averages().table(sort_by="cuda_time_total", row_limit=15); ours with the same sort and limit
// has the same rows in the same order: at every position the sort key agrees within 1%, and the
// row there (or, inside a tie of the sort key, one of the tied rows) has torch's name, calls,
// Self CPU, CPU total, Self CUDA and CUDA total within 1%. The totals lines agree too.
TEST_P(AnchorTable, ReproducesTorchsTableRowForRow) {
  testing::TorchTable torch = testing::read_torch_table(anchor_table(GetParam()));
  ASSERT_EQ(torch.rows.size(), 15u);
  trace::Trace t = trace::read_trace_file(testing::anchor_trace(GetParam()));
  KeyAverages k = key_averages(t, "cuda_time_total", 15);
  EXPECT_EQ(k.device_label, "CUDA");
  ASSERT_EQ(k.rows.size(), torch.rows.size());
  expect_within(k.self_cpu_total_ns / 1000.0, torch.self_cpu_total_us, 0.01, "Self CPU time total");
  expect_within(k.self_device_total_ns / 1000.0, torch.self_cuda_total_us, 0.01, "Self CUDA time total");
  std::vector<bool> used(k.rows.size(), false);
  for (std::size_t i = 0; i < torch.rows.size(); ++i) {
    const testing::TorchRow& r = torch.rows[i];
    expect_within(k.rows[i].device_total_ns / 1000.0, r.cuda_total_us, 0.01, "CUDA total at row " + std::to_string(i));
    std::size_t found = k.rows.size();
    if (!used[i] && row_matches(k.rows[i], r)) found = i;
    for (std::size_t j = 0; j < k.rows.size() && found == k.rows.size(); ++j)
      if (!used[j] && row_matches(k.rows[j], r)) found = j;
    ASSERT_LT(found, k.rows.size()) << "torch's row " << i << " (" << r.name << ", " << r.calls << " calls, Self CPU "
                                    << r.self_cpu_us << ", CPU total " << r.cpu_total_us << ", Self CUDA "
                                    << r.self_cuda_us << ", CUDA total " << r.cuda_total_us << ") is not in ours:\n"
                                    << render_text(k);
    if (found != i) expect_within(k.rows[found].device_total_ns / 1000.0, k.rows[i].device_total_ns / 1000.0, 0.01, r.name + " tie");
    used[found] = true;
  }
  // torch's annotation row ("attn_fwd" on the device, no CPU time) is there, and its Self CUDA %
  // column sums above 100%: the double count reproduced.
  double pct = 0;
  for (const auto& r : k.rows) pct += 100.0 * static_cast<double>(r.self_device_ns) / static_cast<double>(k.self_device_total_ns);
  EXPECT_GT(pct, 150.0);
  EXPECT_TRUE(std::any_of(k.rows.begin(), k.rows.end(), [](const KeyAverage& r) {
    return r.annotation_row && r.name == "attn_fwd" && r.cpu_total_ns == 0 && r.self_device_ns > 0;
  }));
}

// DeviceTime::once, our fix of the double count: the same totals as torch's, no annotation row,
// no Self CUDA on host rows, and the Self CUDA column sums to exactly the total; CPU columns and
// CUDA total stay torch's.
TEST_P(AnchorTable, CountOnceKeepsTorchsTotalsWithoutTheDoubleCount) {
  testing::TorchTable torch = testing::read_torch_table(anchor_table(GetParam()));
  trace::Trace t = trace::read_trace_file(testing::anchor_trace(GetParam()));
  KeyAverages k = key_averages(t, "cuda_time_total", -1, DeviceTime::once);
  expect_within(k.self_cpu_total_ns / 1000.0, torch.self_cpu_total_us, 0.01, "Self CPU time total");
  expect_within(k.self_device_total_ns / 1000.0, torch.self_cuda_total_us, 0.01, "Self CUDA time total");
  std::int64_t self_sum = 0;
  for (const auto& r : k.rows) {
    self_sum += r.self_device_ns;
    EXPECT_FALSE(r.annotation_row) << r.name;
    if (!r.device_row) EXPECT_EQ(r.self_device_ns, 0) << r.name;
  }
  EXPECT_EQ(self_sum, k.self_device_total_ns);
  int compared = 0;
  for (const auto& r : torch.rows) {
    if (r.self_cpu_us == 0) continue;  // device and annotation rows
    auto it = std::find_if(k.rows.begin(), k.rows.end(), [&](const KeyAverage& o) {
      return !o.device_row && torch_display_name(o.name) == r.name;
    });
    ASSERT_NE(it, k.rows.end()) << r.name;
    expect_within(it->self_cpu_ns / 1000.0, r.self_cpu_us, 0.01, r.name + " Self CPU");
    expect_within(it->device_total_ns / 1000.0, r.cuda_total_us, 0.01, r.name + " CUDA total");
    ++compared;
  }
  EXPECT_GE(compared, 8);
}

INSTANTIATE_TEST_SUITE_P(PyTorch, AnchorTable, ::testing::Values("naive", "math", "flash"));

trace::Event ev(Category c, std::string name, std::int64_t ts, std::int64_t dur, std::int64_t corr = -1,
                std::string tid = "1") {
  trace::Event e;
  e.category = c;
  e.name = std::move(name);
  e.ts_ns = ts;
  e.dur_ns = dur;
  e.pid = "1";
  e.tid = std::move(tid);
  e.correlation = corr;
  return e;
}

// step [0,1000] { op1 [100,400] { r1 [150,200] }, op2 [500,900] { op3 [600,700] { r2 [610,650] } } }
// k (corr 1) 300 ns, k (corr 2) 200 ns, an unlaunched memcpy 50 ns, a 10 µs gpu_user_annotation.
trace::Trace hand_trace() {
  trace::Trace t;
  t.events = {ev(Category::user_annotation, "ProfilerStep#3", 0, 1000),
              ev(Category::cpu_op, "op1", 100, 300),
              ev(Category::cuda_runtime, "cudaLaunchKernel", 150, 50, 1),
              ev(Category::cpu_op, "op2", 500, 400),
              ev(Category::cpu_op, "op3", 600, 100),
              ev(Category::cuda_runtime, "cudaLaunchKernel", 610, 40, 2),
              ev(Category::kernel, "k", 2000, 300, 1, "7"),
              ev(Category::kernel, "k", 2500, 200, 2, "7"),
              ev(Category::gpu_memcpy, "Memcpy DtoD", 3000, 50, 77, "7"),
              ev(Category::gpu_user_annotation, "attn_fwd", 2000, 10000, -1, "7"),
              ev(Category::trace_span, "PyTorch Profiler (0)", 0, 100000)};
  return t;
}

std::map<std::string, KeyAverage> rows_by_name(const KeyAverages& k) {
  std::map<std::string, KeyAverage> rows;
  for (const auto& r : k.rows) rows[r.name + (r.annotation_row ? "/annotation" : r.device_row ? "/dev" : "")] = r;
  return rows;
}

TEST(KeyAverages, HandWorkedTorchBooking) {
  KeyAverages k = key_averages(hand_trace(), "name", -1);
  auto rows = rows_by_name(k);
  // ProfilerStep*, op1, op2, op3, cudaLaunchKernel, k, Memcpy DtoD, and the annotation's row.
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows["ProfilerStep*"].self_cpu_ns, 1000 - 300 - 400);
  EXPECT_EQ(rows["op1"].self_cpu_ns, 250);
  EXPECT_EQ(rows["op2"].self_cpu_ns, 300);
  EXPECT_EQ(rows["op3"].self_cpu_ns, 60);
  EXPECT_EQ(rows["cudaLaunchKernel"].self_cpu_ns, 90);
  EXPECT_EQ(rows["cudaLaunchKernel"].calls, 2);
  EXPECT_EQ(k.self_cpu_total_ns, 1000);  // the "Trace" span is not CPU work
  // A kernel's time is the Self CUDA of the op around its launch (never the runtime call's), and
  // the CUDA total of that op and its ancestors.
  EXPECT_EQ(rows["op1"].self_device_ns, 300);
  EXPECT_EQ(rows["op1"].device_total_ns, 300);
  EXPECT_EQ(rows["op3"].self_device_ns, 200);
  EXPECT_EQ(rows["op3"].device_total_ns, 200);
  EXPECT_EQ(rows["op2"].self_device_ns, 0);
  EXPECT_EQ(rows["op2"].device_total_ns, 200);
  EXPECT_EQ(rows["ProfilerStep*"].self_device_ns, 0);
  EXPECT_EQ(rows["ProfilerStep*"].device_total_ns, 500);
  EXPECT_EQ(rows["cudaLaunchKernel"].self_device_ns, 0);
  EXPECT_EQ(rows["cudaLaunchKernel"].device_total_ns, 0);
  EXPECT_EQ(rows["k/dev"].calls, 2);
  EXPECT_EQ(rows["k/dev"].self_device_ns, 500);
  EXPECT_EQ(rows["Memcpy DtoD/dev"].self_device_ns, 50);  // launched before the window: no op's
  EXPECT_EQ(rows["attn_fwd/annotation"].calls, 1);
  EXPECT_EQ(rows["attn_fwd/annotation"].self_device_ns, 10000);
  EXPECT_EQ(rows["attn_fwd/annotation"].device_total_ns, 10000);
  EXPECT_EQ(rows["attn_fwd/annotation"].cpu_total_ns, 0);
  EXPECT_EQ(k.self_device_total_ns, 550);  // as torch's total line: the annotation's 10 µs left out
}

TEST(KeyAverages, HandWorkedCountOnce) {
  KeyAverages k = key_averages(hand_trace(), "name", -1, DeviceTime::once);
  auto rows = rows_by_name(k);
  ASSERT_EQ(rows.size(), 7u);  // no annotation row
  for (const char* host : {"ProfilerStep*", "op1", "op2", "op3", "cudaLaunchKernel"}) EXPECT_EQ(rows[host].self_device_ns, 0) << host;
  EXPECT_EQ(rows["op1"].device_total_ns, 300);
  EXPECT_EQ(rows["op3"].device_total_ns, 200);
  EXPECT_EQ(rows["op2"].device_total_ns, 200);
  EXPECT_EQ(rows["ProfilerStep*"].device_total_ns, 500);
  EXPECT_EQ(rows["k/dev"].self_device_ns, 500);
  EXPECT_EQ(rows["Memcpy DtoD/dev"].self_device_ns, 50);
  EXPECT_EQ(k.self_device_total_ns, 550);
  EXPECT_EQ(k.self_cpu_total_ns, 1000);
}

// torch's tree: an event that overruns an open one is not its child (its time stays out of the
// other's children); torch's utility ops (aten::is_leaf ...) are dropped, their time left in
// their parent's Self CPU; a user range and an op of the same name are two rows.
TEST(KeyAverages, TorchTreeRulesOverrunFilteredAndAnnotationKinds) {
  trace::Trace t;
  t.events = {ev(Category::cpu_op, "outer", 0, 1000), ev(Category::cpu_op, "inner", 100, 200),
              ev(Category::cpu_op, "aten::is_leaf", 120, 30), ev(Category::cpu_op, "late", 900, 300),
              ev(Category::user_annotation, "inner", 2000, 50)};
  auto rows = rows_by_name(key_averages(t, "name", -1));
  EXPECT_EQ(rows.count("aten::is_leaf"), 0u);
  EXPECT_EQ(rows["outer"].self_cpu_ns, 1000 - 200);  // "late" overruns it: not its child
  EXPECT_EQ(rows["late"].self_cpu_ns, 300);
  std::int64_t inner_self = 0, inner_calls = 0;
  for (const auto& r : key_averages(t, "name", -1).rows)
    if (r.name == "inner") {
      inner_self += r.self_cpu_ns;
      ++inner_calls;
    }
  EXPECT_EQ(inner_calls, 2);  // two rows: the op and the user range
  EXPECT_EQ(inner_self, 200 + 50);
}

TEST(KeyAverages, SortRowLimitAndBadValues) {
  KeyAverages by_self = key_averages(hand_trace(), "self_cpu_time_total", 2);
  ASSERT_EQ(by_self.rows.size(), 2u);
  EXPECT_EQ(by_self.total_rows, 8u);  // with the annotation's row
  EXPECT_EQ(by_self.rows[0].name, "ProfilerStep*");  // 300, then op2 300 (ties in the order met) ...
  EXPECT_EQ(by_self.rows[1].name, "op2");
  KeyAverages by_device = key_averages(hand_trace(), "self_cuda_time_total", 2);
  EXPECT_TRUE(by_device.rows[0].annotation_row);  // 10 µs
  EXPECT_EQ(by_device.rows[1].name, "k");         // 500 ns; op1's 300 ns next
  EXPECT_EQ(key_averages(hand_trace(), "self_cuda_time_total", 1, DeviceTime::once).rows[0].name, "k");
  KeyAverages by_count = key_averages(hand_trace(), "count", 1);
  EXPECT_EQ(by_count.rows[0].calls, 2);
  try {
    key_averages(hand_trace(), "self_gpu", -1);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("sort_by self_gpu"), std::string::npos);
  }
  EXPECT_THROW(key_averages(hand_trace(), "count", 0), UsageError);
}

TEST(KeyAverages, CpuTraceUsesCpuKernelColumns) {
  trace::Trace t;
  t.events = {ev(Category::user_annotation, "attn_fwd", 0, 1000), ev(Category::cpu_op, "aten::bmm", 100, 500),
              ev(Category::cpu_kernel, "gemm_bf16", 150, 400), ev(Category::cpu_kernel, "gemm_bf16", 700, 100)};
  KeyAverages k = key_averages(t, "cpu_time_total", -1);
  EXPECT_EQ(k.device_label, "CPU kernel");
  EXPECT_EQ(k.self_device_total_ns, 500);
  EXPECT_EQ(k.self_cpu_total_ns, 1000);
  std::map<std::string, KeyAverage> rows;
  for (const auto& r : k.rows) rows[r.name] = r;
  EXPECT_TRUE(rows["gemm_bf16"].device_row);
  EXPECT_EQ(rows["gemm_bf16"].self_cpu_ns, 500);
  EXPECT_EQ(rows["gemm_bf16"].self_device_ns, 500);
  EXPECT_EQ(rows["aten::bmm"].self_cpu_ns, 100);
  EXPECT_EQ(rows["aten::bmm"].self_device_ns, 400);  // the CPU kernel it ran, booked as torch books a launch
  EXPECT_EQ(rows["aten::bmm"].device_total_ns, 400);
  EXPECT_EQ(rows["attn_fwd"].self_device_ns, 100);
  EXPECT_EQ(rows["attn_fwd"].device_total_ns, 500);
  std::string text = render_text(k);
  EXPECT_NE(text.find("Self CPU kernel %"), std::string::npos);
  EXPECT_NE(text.find("Self CPU kernel time total: 0.500us"), std::string::npos) << text;
}

TEST(KeyAverages, TextLayoutLikeTorch) {
  trace::Trace t = hand_trace();
  t.events.push_back(ev(Category::cpu_op, std::string(80, 'x'), 5000, 10, -1, "2"));
  std::string text = render_text(key_averages(t, "cpu_time_total", -1));
  EXPECT_NE(text.find("Self CPU time total: 1.010us\nSelf CUDA time total: 0.550us\n"), std::string::npos) << text;
  EXPECT_NE(text.find(std::string(52, 'x') + "...  "), std::string::npos);  // 55 columns, as torch
  EXPECT_EQ(text.find(std::string(53, 'x')), std::string::npos);
  // Header cells right-aligned in 12 columns with 2-space gaps.
  EXPECT_NE(text.find("    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg     Self CUDA   Self CUDA %"),
            std::string::npos)
      << text;
}

TEST(KeyAverages, JsonRowsParse) {
  KeyAverages k = key_averages(hand_trace(), "name", -1, DeviceTime::once);
  auto rows = nlohmann::json::parse(render_json_rows(k));
  ASSERT_EQ(rows.size(), 7u);
  double pct = 0;
  for (const auto& r : rows) pct += r["self_device_pct"].get<double>();
  EXPECT_NEAR(pct, 100.0, 0.01);
  EXPECT_EQ(rows[0]["name"], "Memcpy DtoD");
}

}  // namespace
}  // namespace attnprof::report
