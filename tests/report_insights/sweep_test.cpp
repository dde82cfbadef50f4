#include "report/sweep.h"

#include <attnprof/error.h>

#include <fmt/format.h>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "common/child_process.h"
#include "core/atomic_file.h"
#include "run/sweep.h"

namespace attnprof::report {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / fmt::format("attnprof_{}_{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(ParseIntList, ExplicitValuesAndEllipsis) {
  EXPECT_EQ(parse_int_list("512,1024,...,16384", "seq_q"),
            (std::vector<std::int64_t>{512, 1024, 2048, 4096, 8192, 16384}));
  EXPECT_EQ(parse_int_list("64,128", "head_dim"), (std::vector<std::int64_t>{64, 128}));
  EXPECT_EQ(parse_int_list("1000", "seq_q"), (std::vector<std::int64_t>{1000}));
  EXPECT_EQ(parse_int_list("100,300,...,900", "seq_q"), (std::vector<std::int64_t>{100, 300, 900}));  // ratio 3
  EXPECT_EQ(parse_int_list("100,150,...,300", "seq_q"), (std::vector<std::int64_t>{100, 150, 200, 250, 300}));
  EXPECT_EQ(parse_int_list(" 512, 1024 ,..., 4096", "seq_q"), (std::vector<std::int64_t>{512, 1024, 2048, 4096}));
}

TEST(ParseIntList, RejectsBadListsNamingTheFlag) {
  for (const char* bad : {"", "512,,1024", "abc", "512,-1", "0", "1024,512", "512,...", "...,512", "512,1024,...,5000",
                          "12x"}) {
    try {
      parse_int_list(bad, "seq_q");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("seq_q: ", 0), 0u) << e.what();
    }
  }
}

// A continuation never wraps past INT64_MAX, and no list expands beyond kMaxSweepPoints values.
TEST(ParseIntList, StopsAtInt64MaxAndAtThePointCap) {
  EXPECT_EQ(parse_int_list("9223372036854775805,9223372036854775806,...,9223372036854775807", "seq_q"),
            (std::vector<std::int64_t>{9223372036854775805, 9223372036854775806, 9223372036854775807}));
  EXPECT_EQ(parse_int_list("1,2,3,...,10000", "seq_q").size(), 10000u);
  EXPECT_EQ(parse_int_list("1,2,3,...,10000", "seq_q").back(), 10000);
  for (const char* bad : {"2,4,...,9223372036854775807", "1,4611686018427387904,...,9223372036854775807",
                          "1,2,3,...,10001", "2,3,...,100000000000"}) {
    EXPECT_THROW(parse_int_list(bad, "seq_q"), UsageError) << bad;
  }
}

TEST(Memory, SkipReasonOnlyWhenItDoesNotFit) {
  EXPECT_FALSE(memory_skip_reason(1 << 20, 2 << 20));
  EXPECT_FALSE(memory_skip_reason(1LL << 40, std::nullopt));
  auto reason = memory_skip_reason(12LL << 30, 7LL << 30);
  ASSERT_TRUE(reason);
  EXPECT_EQ(*reason, "needs 12.00 GiB (inputs, output and workspace), 7.00 GiB free");
}

TEST(SweepGrid, VariantsFastestThenHeadDimsThenSeqs) {
  AttentionSpec base;
  auto points = sweep_grid(base, {512, 1024}, {64, 128}, {"naive", "flash"});
  ASSERT_EQ(points.size(), 8u);
  EXPECT_EQ(points[0].variant, "naive");
  EXPECT_EQ(points[1].variant, "flash");
  EXPECT_EQ(points[1].spec.head_dim, 64);
  EXPECT_EQ(points[2].spec.head_dim, 128);
  EXPECT_EQ(points[4].spec.seq_q, 1024);
  EXPECT_EQ(points[4].spec.seq_k, 1024);
  EXPECT_EQ(points[7].spec.batch, base.batch);
}

RunResult fake_result(const RunOptions& o) {
  RunResult r;
  r.variant = o.variant;
  r.spec = o.spec;
  r.median_ns = static_cast<double>(o.spec.seq_q) * 1000;  // 1 µs per query row
  r.time = time_stats({0.9 * r.median_ns, r.median_ns, 1.2 * r.median_ns});
  r.cpu_ns = 5e4;
  const double flops = 4.0 * o.spec.batch * o.spec.heads * o.spec.seq_q * o.spec.seq_k * o.spec.head_dim / 2;
  r.tflops = flops / r.median_ns / 1e3;
  r.kernels_per_forward = 1;
  r.peak_extra_bytes = o.spec.seq_q * 100;
  r.rel_err = 2e-3;
  return r;
}

TEST(RunSweep, RecordsRunsRefusalsSkipsAndFailures) {
  AttentionSpec base;
  base.batch = 1;
  auto points = sweep_grid(base, {512, 1024, 2048}, {64}, {"flash", "cudnn"});
  Ceilings ceilings;
  ceilings.matmul_tflops = 10;
  ceilings.copy_gbps = 100;
  SweepHooks hooks;
  int checkpoints = 0;
  std::vector<std::string> progress;
  hooks.run = [](const RunOptions& o) -> RunResult {
    if (o.spec.seq_q == 2048) throw Error("kernel launch failed");
    return fake_result(o);
  };
  hooks.precheck = [](const SweepPoint& p) -> std::optional<SweepRecord> {
    if (p.variant == "cudnn") return record_not_run(p, "refused", "needs device cuda");
    if (p.spec.seq_q == 1024) return record_not_run(p, "skipped", "needs 9.00 GiB (inputs, output and workspace), 1.00 GiB free");
    return std::nullopt;
  };
  hooks.checkpoint = [&](const std::vector<SweepRecord>& records) { EXPECT_EQ(records.size(), static_cast<std::size_t>(++checkpoints)); };
  hooks.progress = [&](std::size_t done, std::size_t total, const SweepRecord& r) {
    progress.push_back(progress_line(done, total, r, false));
  };
  auto records = run_sweep(points, RunOptions{}, ceilings, hooks);
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(checkpoints, 6);
  EXPECT_EQ(records[0].status, "ok");
  EXPECT_DOUBLE_EQ(records[0].device_ms, 0.512);
  // 4·1·16·512²·64/2 = 536,870,912 FLOPs in 0.512 ms = 1.048576 TFLOP/s = 10.49% of 10.
  EXPECT_NEAR(records[0].tflops, 1.048576, 1e-9);
  EXPECT_NEAR(records[0].pct_of_peak, 10.48576, 1e-9);
  EXPECT_DOUBLE_EQ(records[0].flops, 536870912.0);
  // One kernel: only q, k, v and out move: 4 · 512·64·16 · 2 bytes.
  EXPECT_DOUBLE_EQ(records[0].min_bytes, 4.0 * 512 * 64 * 16 * 2);
  EXPECT_EQ(records[1].status, "refused");
  EXPECT_EQ(records[2].status, "skipped");
  EXPECT_EQ(records[4].status, "failed");
  EXPECT_EQ(records[4].reason, "kernel launch failed");
  EXPECT_EQ(progress[0], "[1/6] flash S=512 D=64: 0.5120 ms (0.4608\u20130.6144), 1.05 TFLOP/s");
  EXPECT_EQ(progress[1], "[2/6] cudnn S=512 D=64: refused: needs device cuda");
  std::string bar = progress_line(3, 6, records[2], true, 200);
  EXPECT_EQ(bar.rfind("[##########..........] 3/6 flash S=1024 D=64 skipped: needs 9.00 GiB", 0), 0u) << bar;
}

TEST(RunSweep, UsageErrorFromTheRunnerIsARefusal) {
  SweepHooks hooks;
  hooks.run = [](const RunOptions&) -> RunResult { throw UsageError("seq_q: flash needs seq_k <= 65536"); };
  auto records = run_sweep(sweep_grid(AttentionSpec{}, {512}, {64}, {"flash"}), RunOptions{}, Ceilings{}, hooks);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].status, "refused");
}

// A backward sweep's rows say so and count the backward's FLOPs (2.5× the forward's), read back
// as written; the forward's kernel-chain bytes are not claimed for it.
TEST(SweepFiles, BackwardRowsCarryTheirPassAndFlops) {
  AttentionSpec base;
  base.batch = 1;
  auto points = sweep_grid(base, {512}, {64}, {"flash", "cudnn"});
  for (SweepPoint& p : points) p.pass = Pass::backward;
  const std::vector<SweepRecord> records = {record_from_result(points[0], fake_result({points[0].spec, "flash"}), Ceilings{}),
                                            record_not_run(points[1], "refused", "no backward")};
  EXPECT_DOUBLE_EQ(records[0].flops, 2.5 * points[0].spec.flops());
  EXPECT_DOUBLE_EQ(records[1].flops, 2.5 * points[1].spec.flops());
  EXPECT_EQ(records[0].min_bytes, 0.0);
  const nlohmann::json j = sweep_json(records, Ceilings{});
  EXPECT_EQ(j["rows"][0]["pass"], "backward");
  EXPECT_EQ(j["rows"][1]["pass"], "backward");
  EXPECT_EQ(j["rows"][0]["min_bytes"], 0);  // unknown, as without a trace
  EXPECT_EQ(sweep_records_from_json(j)[0].point.pass, Pass::backward);
  EXPECT_NE(sweep_csv(records).find(",bhsd,backward,ok,"), std::string::npos) << sweep_csv(records);
}

TEST(SweepFiles, CsvAndJsonHoldEveryRecord) {
  AttentionSpec base;
  base.batch = 1;
  auto points = sweep_grid(base, {512, 1024}, {64}, {"flash"});
  std::vector<SweepRecord> records = {record_from_result(points[0], fake_result({points[0].spec, "flash"}), Ceilings{}),
                                      record_not_run(points[1], "skipped", "needs 1.0 GiB, \"0\" free")};
  fs::path dir = fresh_dir("sweep_files");
  write_sweep_files(dir.string(), records, Ceilings{});
  std::string csv = read_all(dir / "sweep.csv");
  std::istringstream lines(csv);
  std::string header, first, second, extra;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_FALSE(std::getline(lines, extra));
  EXPECT_EQ(header.rfind("variant,device,batch,heads,kv_heads,seq,seq_k,head_dim,dtype,causal,causal_align,layout,"
                         "pass,status,reason,device_ms,device_ms_min,device_ms_max,device_ms_p10,device_ms_p90,samples,"
                         "cpu_ms,setup_ms,",
                         0),
            0u);
  // device_ms, then its min, max, p10, p90 (0.4608 + 0.2·0.0512, 0.512 + 0.8·0.1024) and count
  EXPECT_EQ(first.rfind("flash,cpu,1,16,16,512,512,64,bf16,true,top-left,bhsd,forward,ok,,0.512,0.4608,0.6144,0.47104,0.59392,3,"
                        "0.05,",
                        0),
            0u)
      << first;
  EXPECT_NE(second.find("skipped,\"needs 1.0 GiB, \"\"0\"\" free\",,"), std::string::npos) << second;
  nlohmann::json j = nlohmann::json::parse(read_all(dir / "sweep.json"));
  EXPECT_EQ(j["kind"], "attnprof.sweep");
  auto back = sweep_records_from_json(j);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].point.spec.seq_q, 512);
  EXPECT_DOUBLE_EQ(back[0].device_ms, 0.512);
  EXPECT_EQ(back[0].time.count, 3);
  EXPECT_NEAR(back[0].time.max, 0.6144, 1e-12);
  EXPECT_EQ(back[1].status, "skipped");
  EXPECT_TRUE(j["rows"][1]["device_ms"].is_null());
  fs::remove_all(dir);
}

// Ctrl-C in the middle of a point: the files hold the points finished before it, whole, and
// the trace being written for the interrupted point leaves nothing behind.
TEST(SweepFiles, InterruptLeavesOnlyCompleteFiles) {
  fs::path dir = fresh_dir("sweep_interrupt");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    install_signal_cleanup();
    SweepHooks hooks;
    hooks.run = [&](const RunOptions& o) -> RunResult {
      if (o.spec.seq_q == 2048) {
        AtomicFile trace((dir / "trace.json").string());
        trace.write(std::string(1 << 20, 'x'));  // half-written, never committed
        std::ofstream(dir / "ready.flag") << "1";
        for (;;) pause();
      }
      return fake_result(o);
    };
    hooks.checkpoint = [&](const std::vector<SweepRecord>& records) {
      write_sweep_files(dir.string(), records, Ceilings{});
    };
    run_sweep(sweep_grid(AttentionSpec{}, {512, 1024, 2048, 4096}, {64}, {"flash"}), RunOptions{}, Ceilings{}, hooks);
    _exit(0);
  }
  testing::ChildGuard child(pid);  // paused at 2048 for ever: killed if an assertion below returns
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(dir / "ready.flag") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(fs::exists(dir / "ready.flag")) << "the sweep did not reach S=2048 within 60 s";
  kill(pid, SIGINT);
  const std::optional<int> status = child.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(status) << "the sweep was still running 60 s after SIGINT";
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 130);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ready.flag", "sweep.csv", "sweep.json"}));
  auto records = sweep_records_from_json(nlohmann::json::parse(read_all(dir / "sweep.json")));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].point.spec.seq_q, 1024);
  std::string csv = read_all(dir / "sweep.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attnprof::report
