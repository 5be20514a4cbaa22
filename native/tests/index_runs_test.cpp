// The check of index runs against the pools (core/validate.hpp, checkRunsInPools), which makes a
// transfer whose index arrays changed between their check and planning (a caller's data race)
// fail instead of addressing rows outside a pool: runs inside, at the edges, past the end, from
// before the start, and long enough to overflow start + length.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/validate.hpp"

namespace kvio_test {
namespace {

using kvio::IndexRun;

kvio_status check(std::vector<IndexRun> runs, int64_t srcTokens = 64, int64_t dstTokens = 32) {
  return kvio::checkRunsInPools(runs, srcTokens, dstTokens);
}

TEST(IndexRuns, RunsInsideBothPoolsPass) {
  EXPECT_EQ(check({}), KVIO_STATUS_OK);
  EXPECT_EQ(check({{0, 0, 32, 0}, {63, 31, 1, 32}, {40, 5, 10, 33}}), KVIO_STATUS_OK);
}

TEST(IndexRuns, ARunPastEitherPoolIsOutOfRangeAndSaysWhy) {
  EXPECT_EQ(check({{0, 0, 4, 0}, {60, 8, 5, 4}}), KVIO_STATUS_OUT_OF_RANGE);
  std::string message = kvio::lastError();
  EXPECT_NE(message.find("src_indices[4] = 60 starts 5 consecutive slots"), std::string::npos)
      << message;
  EXPECT_NE(message.find("changed during the submit"), std::string::npos) << message;
  EXPECT_EQ(check({{0, 28, 5, 7}}), KVIO_STATUS_OUT_OF_RANGE);
  message = kvio::lastError();
  EXPECT_NE(message.find("dst_indices[7] = 28"), std::string::npos) << message;
  EXPECT_EQ(check({{0, 32, 1, 0}}), KVIO_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(check({{-1, 0, 1, 0}}), KVIO_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(check({{0, -5, 1, 0}}), KVIO_STATUS_OUT_OF_RANGE);
}

TEST(IndexRuns, LengthsThatWouldOverflowAreOutOfRange) {
  const int64_t huge = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(check({{10, 0, huge, 0}}), KVIO_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(check({{0, 10, huge - 5, 0}}), KVIO_STATUS_OUT_OF_RANGE);
}

}  // namespace
}  // namespace kvio_test
