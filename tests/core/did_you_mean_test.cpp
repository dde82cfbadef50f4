#include "core/did_you_mean.h"

#include <gtest/gtest.h>

namespace attnprof {
namespace {

TEST(EditDistance, HandWorkedPairs) {
  EXPECT_EQ(edit_distance("flsh", "flash"), 1u);       // one insertion
  EXPECT_EQ(edit_distance("comapre", "compare"), 1u);  // one swap of neighbours
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);   // k→s, e→i, +g
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
}

TEST(DidYouMean, NamesTheNearestCloseCandidate) {
  const std::vector<std::string> variants{"naive", "inplace", "math", "fused", "efficient", "flash", "cudnn"};
  EXPECT_EQ(did_you_mean("flsh", variants), " (did you mean 'flash'?)");
  EXPECT_EQ(did_you_mean("inplac", variants), " (did you mean 'inplace'?)");
  EXPECT_EQ(did_you_mean("naiev", variants), " (did you mean 'naive'?)");
  EXPECT_EQ(did_you_mean("transformer", variants), "");  // nothing within 2 edits
  EXPECT_EQ(did_you_mean("x", variants), "");            // every candidate is more edits than it has letters
  EXPECT_EQ(did_you_mean("flash", variants), "");        // a known name needs no suggestion
}

}  // namespace
}  // namespace attnprof
