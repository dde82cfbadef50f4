#include "report/expect.h"

#include <attnprof/error.h>

#include <gtest/gtest.h>

#include "report_insights/scenarios.h"

namespace attnprof::report {
namespace {

using testing::TraceBuilder;

trace::Trace naive_gpu(bool out_of_place) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) testing::gpu_naive_forward(b, 100000 * i, {out_of_place, true});
  return b.trace;
}

const std::vector<std::string> kBlogGuess = {"gemm", "mul", "masked_fill", "softmax", "gemm"};

TEST(Expect, ParsesTheBlogGuess) {
  EXPECT_EQ(parse_expect("gemm,mul,masked_fill,softmax,gemm"), kBlogGuess);
  EXPECT_EQ(parse_expect(" GEMM , aten::mul,masked_fill , softmax,gemm"), kBlogGuess);
}

TEST(Expect, RejectsUnknownWordsAndEmptyEntries) {
  try {
    parse_expect("gemm,frobnicate");
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("expect: unknown kernel 'frobnicate'; allowed: gemm, matmul"), std::string::npos) << what;
  }
  EXPECT_THROW(parse_expect("gemm,,softmax"), UsageError);
  EXPECT_THROW(parse_expect(""), UsageError);
}

TEST(Expect, TheBlogsGuessForNaiveMissesTheCopy) {
  ExpectResult r = compare_expect(kBlogGuess, naive_gpu(true));
  EXPECT_EQ(r.forwards, 3);
  EXPECT_EQ(r.same_as_compared, 3);
  EXPECT_EQ(r.memsets_apart, 1);
  ASSERT_EQ(r.observed.size(), 6u);
  EXPECT_EQ(r.matched(), 5);
  EXPECT_TRUE(r.missing().empty());
  ASSERT_EQ(r.not_guessed().size(), 1u);
  const ObservedStep& copy = r.observed[r.not_guessed()[0]];
  EXPECT_EQ(copy.kind, KernelClass::memcpy);
  EXPECT_EQ(copy.path, "aten::masked_fill \u203a aten::clone \u203a aten::copy_");
  // The copy is listed where it ran: after mul, before the masked fill.
  ASSERT_EQ(r.rows.size(), 6u);
  EXPECT_EQ(r.rows[2].guess, -1);
  EXPECT_EQ(r.rows[3].guess, 2);
  EXPECT_FALSE(r.exact());
  std::string text = expect_text(r);
  EXPECT_NE(text.find("5 of 5 guessed steps observed; not guessed: memcpy (aten::masked_fill \u203a aten::clone \u203a "
                      "aten::copy_)."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("+  (not guessed)  memcpy"), std::string::npos) << text;
}

TEST(Expect, TheBlogsGuessIsExactForInPlace) {
  ExpectResult r = compare_expect(kBlogGuess, naive_gpu(false));
  EXPECT_TRUE(r.exact());
  EXPECT_EQ(r.matched(), 5);
  EXPECT_NE(expect_text(r).find("The guess was right."), std::string::npos);
}

TEST(Expect, NamesGuessedStepsThatNeverRan) {
  TraceBuilder b;
  testing::gpu_flash_forward(b, 0);
  ExpectResult r = compare_expect(kBlogGuess, b.trace);
  EXPECT_EQ(r.matched(), 0);
  EXPECT_EQ(r.missing().size(), 5u);
  EXPECT_EQ(r.not_guessed().size(), 1u);
  ExpectResult fused = compare_expect(parse_expect("flash"), b.trace);
  EXPECT_TRUE(fused.exact());
  ExpectResult extra = compare_expect(parse_expect("flash,gemm"), b.trace);
  EXPECT_EQ(extra.missing(), std::vector<int>{1});
  EXPECT_NE(expect_text(extra).find("missing: gemm"), std::string::npos);
}

TEST(Expect, MemsetsCountOnlyWhenGuessed) {
  TraceBuilder b;
  testing::gpu_cudnn_forward(b, 0);
  EXPECT_TRUE(compare_expect(parse_expect("attention"), b.trace).exact());
  ExpectResult with = compare_expect(parse_expect("memset,attention"), b.trace);
  EXPECT_TRUE(with.exact());
  EXPECT_EQ(with.memsets_apart, 0);
}

TEST(Expect, CpuNaiveTraceToo) {
  TraceBuilder b;
  testing::cpu_naive_forward(b, 0, true);
  ExpectResult r = compare_expect(kBlogGuess, b.trace);
  EXPECT_EQ(r.matched(), 5);
  ASSERT_EQ(r.not_guessed().size(), 1u);
  EXPECT_EQ(r.observed[r.not_guessed()[0]].kind, KernelClass::copy);
  EXPECT_TRUE(compare_expect(parse_expect("gemm,mul,copy,masked_fill,softmax,gemm"), b.trace).exact());
}

TEST(Expect, JsonNamesMatchesAndMismatches) {
  nlohmann::json j = expect_json(compare_expect(kBlogGuess, naive_gpu(true)));
  EXPECT_EQ(j["matched"], 5);
  EXPECT_EQ(j["exact"], false);
  EXPECT_TRUE(j["missing"].empty());
  ASSERT_EQ(j["not_guessed"].size(), 1u);
  EXPECT_EQ(j["not_guessed"][0]["observed"], "memcpy");
  ASSERT_EQ(j["rows"].size(), 6u);
  EXPECT_EQ(j["rows"][2]["status"], "not_guessed");
  EXPECT_EQ(j["rows"][3]["status"], "match");
  EXPECT_EQ(j["rows"][3]["guess"], "masked_fill");
  EXPECT_EQ(j["rows"][3]["observed"], "mask");
  EXPECT_EQ(j["rows"][3]["label"], "aten::masked_fill_");
}

TEST(Expect, PicksTheMostCommonSequence) {
  TraceBuilder b;
  testing::cpu_naive_forward(b, 0, true);        // with the copy
  testing::cpu_naive_forward(b, 100000, false);  // without
  testing::cpu_naive_forward(b, 200000, false);
  ExpectResult r = compare_expect(kBlogGuess, b.trace);
  EXPECT_EQ(r.forward_index, 1);
  EXPECT_EQ(r.same_as_compared, 2);
  EXPECT_TRUE(r.exact());
}

}  // namespace
}  // namespace attnprof::report
