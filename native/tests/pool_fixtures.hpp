// Pool fixtures of the C ABI tests. descOf(): a transfer descriptor between two TestPools.
// wrapBuffer(): caller memory wrapped as a pool of a memory kind. UnchangedPoolsTest: the fixture
// of the rejection and reliability tests, whose two pools no rejected call may change: SetUp
// creates a cpu executor (2 threads), fills the source pool with seeded bytes and the
// destination with the canary and keeps both images (a SeededPair); TearDown closes the executor
// (unless a test closed it and set executor_ to 0) and compares both pools whole, guard zones
// included.
#ifndef KVIO_TESTS_POOL_FIXTURES_HPP_
#define KVIO_TESTS_POOL_FIXTURES_HPP_

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kvio/kvio.h"
#include "oracle.hpp"

namespace kvio_test {

inline kvio_transfer_desc descOf(const TestPool& src, const TestPool& dst,
                                 const std::vector<int64_t>& srcIdx,
                                 const std::vector<int64_t>& dstIdx, int64_t srcLayer,
                                 int64_t dstLayer, int64_t layers) {
  return kvio_transfer_desc{src.pool().handle(),
                            dst.pool().handle(),
                            srcIdx.data(),
                            dstIdx.data(),
                            static_cast<int64_t>(srcIdx.size()),
                            srcLayer,
                            dstLayer,
                            layers};
}

/// The handle of `bytes` of caller memory at `data` wrapped as one pool of geometry `g` and
/// memory kind `kind` on device `device` (0 when the status is not `expected`, which fails).
inline uint64_t wrapBuffer(const Geometry& g, int32_t kind, int32_t device, uint8_t* data,
                           size_t bytes, kvio_status expected = KVIO_STATUS_OK) {
  const kvio_pool_spec spec = g.spec().toC();
  uint64_t pool = 0;
  EXPECT_EQ(
      kvio_pool_wrap_memory(&spec, kind, device, reinterpret_cast<uint64_t>(data), bytes, &pool),
      expected)
      << kvio_last_error();
  return pool;
}

class UnchangedPoolsTest : public ::testing::Test {
 protected:
  /// The pools are the subclass's members (not yet constructed here: only their addresses are
  /// kept); `seed` seeds the source's bytes; the names label a changed pool.
  UnchangedPoolsTest(TestPool* src, TestPool* dst, uint64_t seed, const char* srcName,
                     const char* dstName)
      : srcPool_(src), dstPool_(dst), seed_(seed), srcName_(srcName), dstName_(dstName) {}

  void SetUp() override {
    ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 2, &executor_), KVIO_STATUS_OK);
    std::mt19937_64 rng(seed_);
    pools_.emplace(*srcPool_, *dstPool_, rng);
  }
  void TearDown() override {
    if (executor_ != 0) {
      EXPECT_EQ(kvio_executor_close(executor_), KVIO_STATUS_OK);
    }
    if (pools_) {
      EXPECT_TRUE(pools_->check(dstName_, srcName_));
    }
  }

  /// Submits on the fixture's executor and, when accepted, waits for the transfer and closes it.
  kvio_status submitAndWait(const kvio_transfer_desc& desc) {
    uint64_t transfer = 0;
    const kvio_status status = kvio_submit(executor_, &desc, &transfer);
    if (status == KVIO_STATUS_OK) {
      kvio_transfer_wait(transfer, -1);
      kvio_transfer_close(transfer);
    }
    return status;
  }

  uint64_t executor_ = 0;

 private:
  TestPool* srcPool_;
  TestPool* dstPool_;
  uint64_t seed_;
  const char* srcName_;
  const char* dstName_;
  std::optional<SeededPair> pools_;
};

}  // namespace kvio_test

#endif  // KVIO_TESTS_POOL_FIXTURES_HPP_
