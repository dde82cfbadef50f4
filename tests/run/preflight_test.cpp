#include "run/preflight.h"

#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>

using namespace attnprof;

TEST(Preflight, MemAvailableFromMeminfo) {
  EXPECT_EQ(parse_mem_available("MemTotal:       16384000 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n"),
            8000000LL * 1024);
  EXPECT_FALSE(parse_mem_available("MemTotal: 1 kB\n"));
  auto real = free_device_bytes(Device::cpu);
  ASSERT_TRUE(real);
  EXPECT_GT(*real, 0);
}

TEST(Preflight, EstimateCountsInputsOutputAndWorkspace) {
  AttentionSpec spec;  // 8, 16, 1024, 64, bf16
  Variant* naive = find_variant("naive");
  ASSERT_NE(naive, nullptr);
  std::int64_t io = 4LL * 8 * 16 * 1024 * 64 * 2;  // q, k, v, out
  EXPECT_EQ(estimate_run_bytes(spec, *naive), io + naive->workspace_estimate(spec));
  // naive keeps the S×S scores: at least one bf16 B·H·S·S buffer.
  EXPECT_GE(naive->workspace_estimate(spec), 8LL * 16 * 1024 * 1024 * 2);
}

TEST(Preflight, LargestFittingSeqIsTheBoundary) {
  AttentionSpec spec;
  Variant* naive = find_variant("naive");
  std::int64_t budget = 1LL << 30;
  std::int64_t s = largest_fitting_seq(spec, *naive, budget);
  ASSERT_GT(s, 0);
  AttentionSpec fits = spec, over = spec;
  fits.seq_q = fits.seq_k = s;
  over.seq_q = over.seq_k = s + 1;
  EXPECT_LE(estimate_run_bytes(fits, *naive), budget);
  EXPECT_GT(estimate_run_bytes(over, *naive), budget);
}

TEST(Preflight, RefusesAShapeBeyondTheMachineNamingTheLargestSeq) {
  AttentionSpec spec;
  spec.batch = 4096;
  spec.heads = 64;
  spec.kv_heads = 64;
  spec.seq_q = spec.seq_k = 65536;  // naive's scores alone: 4096·64·65536²·2 B = 2 EiB
  Variant* naive = find_variant("naive");
  try {
    preflight_memory(spec, *naive);
    FAIL() << "a 2 EiB run passed the preflight";
  } catch (const UsageError& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("largest seq_q that fits"), std::string::npos) << text;
    EXPECT_NE(text.find("free"), std::string::npos) << text;
  }
}

TEST(Preflight, ADecodeShapeBeyondTheMachineNamesTheLargestSeqK) {
  AttentionSpec spec;
  spec.batch = 4096;
  spec.heads = 64;
  spec.kv_heads = 8;
  spec.seq_q = 1;
  spec.seq_k = std::int64_t{1} << 28;  // K and V: 2·4096·8·2^28·64·2 B = 2 PiB
  Variant* flash = find_variant("flash");
  try {
    preflight_memory(spec, *flash);
    FAIL() << "a 2 PiB run passed the preflight";
  } catch (const UsageError& e) {
    std::string text = e.what();
    EXPECT_EQ(text.rfind("seq_k: flash", 0), 0u) << text;
    EXPECT_NE(text.find("the largest seq_k that fits with seq_q 1 and these other sizes is "), std::string::npos) << text;
  }
  // The number it names is the boundary, with seq_q kept at 1.
  const std::int64_t budget = std::int64_t{1} << 30;
  const std::int64_t s = largest_fitting_seq_k(spec, *flash, budget);
  ASSERT_GT(s, 0);
  AttentionSpec fits = spec, over = spec;
  fits.seq_k = s;
  over.seq_k = s + 1;
  EXPECT_LE(estimate_run_bytes(fits, *flash), budget);
  EXPECT_GT(estimate_run_bytes(over, *flash), budget);
}

// The estimates saturate where int64 wrapped: math keeps 9·S² + 6·S² bytes (past INT64_MAX at
// S = 8e8 in bf16), naive and inplace 2·4·S² + S² in fp32 (past it at S = 1.05e9).
TEST(Preflight, EstimatesSaturateInsteadOfWrapping) {
  AttentionSpec spec;
  spec.batch = spec.heads = spec.kv_heads = 1;
  spec.head_dim = 1;
  spec.seq_q = spec.seq_k = 800000000;
  EXPECT_EQ(estimate_run_bytes(spec, *find_variant("math")), INT64_MAX);
  EXPECT_THROW(preflight_memory(spec, *find_variant("math")), UsageError);
  spec.dtype = DType::fp32;
  spec.seq_q = spec.seq_k = 1050000000;
  for (const char* name : {"naive", "inplace", "math"}) {
    Variant* variant = find_variant(name);
    ASSERT_NE(variant, nullptr);
    EXPECT_EQ(estimate_run_bytes(spec, *variant), INT64_MAX) << name;
    EXPECT_THROW(preflight_memory(spec, *variant), UsageError) << name;
  }
}

TEST(Preflight, CgroupPathsFromProcSelfCgroup) {
  CgroupPaths v1 = parse_proc_cgroup("12:pids:/a\n4:cpu,memory:/job/7\n0::/\n");
  EXPECT_EQ(v1.v1_memory, "/job/7");
  EXPECT_EQ(v1.v2, "/");
  CgroupPaths v2 = parse_proc_cgroup("0::/user.slice/session-3.scope\n");
  EXPECT_EQ(v2.v2, "/user.slice/session-3.scope");
  EXPECT_TRUE(v2.v1_memory.empty());
}

TEST(Preflight, CgroupStatField) {
  const std::string stat = "anon 4096\nfile 700\nactive_file 200\ninactive_file 500\ntotal_inactive_file 900\n";
  EXPECT_EQ(parse_cgroup_stat(stat, "inactive_file"), 500);
  EXPECT_EQ(parse_cgroup_stat(stat, "total_inactive_file"), 900);
  EXPECT_EQ(parse_cgroup_stat(stat, "file"), 700);
  EXPECT_FALSE(parse_cgroup_stat(stat, "shmem"));
  EXPECT_FALSE(parse_cgroup_stat("inactive_file x\n", "inactive_file"));
}

// The headroom is the least (limit - usage) over the cgroup and its ancestors: 1000 - 100 at the
// parent binds before 5000 - 2000 at the leaf; "max" is no limit. The inactive page cache in
// memory.stat is not usage: 2000 - 1500 at the leaf leaves 4500.
TEST(Preflight, CgroupHeadroomTakesTheTightestAncestor) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("attnprof-cgroup-" + std::to_string(::getpid()));
  fs::create_directories(root / "parent" / "leaf");
  auto put = [](const fs::path& path, const char* text) { std::ofstream(path) << text; };
  put(root / "memory.max", "max\n");
  put(root / "parent" / "memory.max", "1000\n");
  put(root / "parent" / "memory.current", "100\n");
  put(root / "parent" / "leaf" / "memory.max", "5000\n");
  put(root / "parent" / "leaf" / "memory.current", "2000\n");
  EXPECT_EQ(cgroup_headroom(root, "/parent/leaf", "memory.max", "memory.current", "inactive_file"), 900);
  put(root / "parent" / "memory.max", "max\n");
  EXPECT_EQ(cgroup_headroom(root, "/parent/leaf", "memory.max", "memory.current", "inactive_file"), 3000);
  put(root / "parent" / "leaf" / "memory.stat", "anon 500\nactive_file 100\ninactive_file 1500\n");
  EXPECT_EQ(cgroup_headroom(root, "/parent/leaf", "memory.max", "memory.current", "inactive_file"), 4500);
  // More inactive cache than usage (the two are read at different moments): no usage, not less.
  put(root / "parent" / "leaf" / "memory.stat", "inactive_file 9000\n");
  EXPECT_EQ(cgroup_headroom(root, "/parent/leaf", "memory.max", "memory.current", "inactive_file"), 5000);
  EXPECT_FALSE(cgroup_headroom(root, "/parent/leaf", "memory.limit_in_bytes", "memory.usage_in_bytes",
                               "total_inactive_file"));
  fs::remove_all(root);
}
