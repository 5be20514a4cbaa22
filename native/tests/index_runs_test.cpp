// Index runs: how the planner splits index pairs into runs (core/planner.hpp, splitRuns),
// against a naive oracle; and the check of runs against the pools (core/validate.hpp,
// checkRunsInPools), which makes a transfer whose index arrays changed between their check and
// planning (a caller's data race) fail instead of addressing rows outside a pool: runs inside,
// at the edges, past the end, from before the start, and long enough to overflow start + length.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/planner.hpp"
#include "core/transfer_scratch.hpp"
#include "core/validate.hpp"

namespace kvio_test {
namespace {

using kvio::IndexRun;

// The page of slot t, rounded down (negative slots included).
int64_t pageOf(int64_t t, int64_t pageSize) {
  return t >= 0 ? t / pageSize : -((-t + pageSize - 1) / pageSize);
}

// The runs by definition: pair i + 1 continues pair i's run when both indices are one further
// and, on each side whose pages are not seamless, on the same page.
std::vector<IndexRun> oracleRuns(const std::vector<int64_t>& s, const std::vector<int64_t>& d,
                                 int64_t srcPage, bool srcSeamless, int64_t dstPage,
                                 bool dstSeamless) {
  std::vector<IndexRun> runs;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool continues = i > 0 && s[i] == s[i - 1] + 1 && d[i] == d[i - 1] + 1 &&
                           (srcSeamless || pageOf(s[i], srcPage) == pageOf(s[i - 1], srcPage)) &&
                           (dstSeamless || pageOf(d[i], dstPage) == pageOf(d[i - 1], dstPage));
    if (continues) {
      ++runs.back().length;
    } else {
      runs.push_back(IndexRun{s[i], d[i], 1, static_cast<int64_t>(i)});
    }
  }
  return runs;
}

// A layout with only what splitRuns reads: its page size and whether its pages are seamless
// (the next page starts where the last slot of this one ends).
kvio::AffineLayout pagedLayout(int64_t pageSize, bool seamless) {
  kvio::AffineLayout layout;
  layout.pageSize = pageSize;
  layout.strideS = 16;
  layout.strideP = seamless ? pageSize * 16 : pageSize * 16 * 3;
  return layout;
}

TEST(IndexRuns, SplitRunsMatchesTheOracle) {
  std::mt19937_64 rng(41);
  for (int iteration = 0; iteration < 3000; ++iteration) {
    const int64_t srcPage = 1 + static_cast<int64_t>(rng() % 9);
    const int64_t dstPage = 1 + static_cast<int64_t>(rng() % 9);
    const bool srcSeamless = rng() % 3 == 0;
    const bool dstSeamless = rng() % 3 == 0;
    // Stretches of consecutive slots (crossing page ends on either side) and jumps, some to
    // negative slots (splitRuns runs before the range check of its runs).
    std::vector<int64_t> s, d;
    int64_t a = static_cast<int64_t>(rng() % 40) - 8;
    int64_t b = static_cast<int64_t>(rng() % 40) - 8;
    const size_t n = 1 + rng() % 60;
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 5 == 0) {
        a = static_cast<int64_t>(rng() % 40) - 8;
      } else if (rng() % 7 == 0) {
        b = static_cast<int64_t>(rng() % 40) - 8;
      }
      s.push_back(a++);
      d.push_back(b++);
    }
    const kvio::AffineLayout src = pagedLayout(srcPage, srcSeamless);
    const kvio::AffineLayout dst = pagedLayout(dstPage, dstSeamless);
    ASSERT_EQ(src.pageSeamless(), srcSeamless);
    kvio::PlanRequest request;
    request.src = &src;
    request.dst = &dst;
    request.srcIndices = s.data();
    request.dstIndices = d.data();
    request.count = static_cast<int64_t>(n);
    std::vector<IndexRun> runs;
    kvio::splitRuns(request, &runs);
    const std::vector<IndexRun> expected =
        oracleRuns(s, d, srcPage, srcSeamless, dstPage, dstSeamless);
    ASSERT_EQ(runs.size(), expected.size()) << "iteration " << iteration;
    for (size_t r = 0; r < runs.size(); ++r) {
      EXPECT_EQ(runs[r].src, expected[r].src) << "iteration " << iteration << " run " << r;
      EXPECT_EQ(runs[r].dst, expected[r].dst) << "iteration " << iteration << " run " << r;
      EXPECT_EQ(runs[r].length, expected[r].length) << "iteration " << iteration << " run " << r;
      EXPECT_EQ(runs[r].position, expected[r].position) << "iteration " << iteration;
    }
    if (::testing::Test::HasFailure()) return;
  }
}

// The runs' storage is reserved before the first run is written (one run per pair up to the
// storage a thread keeps, the counted runs beyond), not grown run by run: grown, a transfer of
// many scattered pairs reallocated its runs into fresh pages about twenty times per submit.
TEST(IndexRuns, SplitRunsReservesItsStorageOnce) {
  const kvio::AffineLayout layout = pagedLayout(1 << 20, true);
  kvio::PlanRequest request;
  request.src = &layout;
  request.dst = &layout;
  const auto splitCapacity = [&](const std::vector<int64_t>& s, const std::vector<int64_t>& d,
                                 size_t* runCount) {
    request.srcIndices = s.data();
    request.dstIndices = d.data();
    request.count = static_cast<int64_t>(s.size());
    std::vector<IndexRun> runs;
    kvio::splitRuns(request, &runs);
    *runCount = runs.size();
    return runs.capacity();
  };
  const size_t kept = kvio::kRetainedIndexRunBytes / sizeof(IndexRun);
  for (const size_t n : {size_t{1000}, kept, kept + 7232}) {
    // Scattered: every pair its own run (grown one at a time, the capacity would be a power of
    // two above n).
    std::vector<int64_t> s(n), d(n);
    for (size_t i = 0; i < n; ++i) {
      s[i] = static_cast<int64_t>(2 * i);
      d[i] = static_cast<int64_t>(3 * (n - i));
    }
    size_t runCount = 0;
    EXPECT_EQ(splitCapacity(s, d, &runCount), n) << n << " scattered pairs";
    EXPECT_EQ(runCount, n);
    // Consecutive in three stretches: one run per pair reserved up to the kept storage, the
    // three runs counted beyond it.
    for (size_t i = 0; i < n; ++i) {
      s[i] = static_cast<int64_t>(i + (i >= n / 3 ? 5 : 0) + (i >= 2 * n / 3 ? 5 : 0));
      d[i] = static_cast<int64_t>(i);
    }
    EXPECT_EQ(splitCapacity(s, d, &runCount), n <= kept ? n : 3) << n << " consecutive pairs";
    EXPECT_EQ(runCount, 3u);
  }
}

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
