// White-box test of the scratch a thread keeps between submits (core/transfer_scratch.hpp): the
// index runs, validation's and the planner's vectors. A small transfer's stay for reuse, a large
// transfer's are freed when its submit returns.
#include "core/transfer_scratch.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/planner.hpp"
#include "kvio/kvio.h"

namespace kvio_test {
namespace {

// One layer_first host pool of 131072 token slots of 16-byte rows (2 MiB per component).
uint64_t allocatePool() {
  const kvio_pool_spec spec{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, 1, 8192, 16, 1, 16};
  uint64_t pool = 0;
  EXPECT_EQ(kvio_pool_allocate(&spec, &pool), KVIO_STATUS_OK) << kvio_last_error();
  return pool;
}

// Submits on this thread a copy of `pairs` rows at every other slot (each pair its own index
// run: neither side advances by one), waits for it and checks its status. dstShift 1 moves the
// rows to the odd slots (for a copy within one pool).
void copyEveryOtherSlot(uint64_t executor, uint64_t src, uint64_t dst, int64_t pairs,
                        int64_t dstShift = 0) {
  std::vector<int64_t> indices(static_cast<size_t>(pairs));
  std::vector<int64_t> dstIndices(static_cast<size_t>(pairs));
  for (int64_t i = 0; i < pairs; ++i) {
    indices[static_cast<size_t>(i)] = 2 * i;
    dstIndices[static_cast<size_t>(i)] = 2 * i + dstShift;
  }
  const kvio_transfer_desc desc{src, dst, indices.data(), dstIndices.data(), pairs, 0, 0, 1};
  uint64_t transfer = 0;
  ASSERT_EQ(kvio_submit(executor, &desc, &transfer), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
}

TEST(TransferScratch, LargeTransfersRunsAreFreedSmallOnesKept) {
  uint64_t executor = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), KVIO_STATUS_OK);
  const uint64_t src = allocatePool();
  const uint64_t dst = allocatePool();
  const size_t runBytes = sizeof(kvio::IndexRun);

  copyEveryOtherSlot(executor, src, dst, 1000);
  const size_t small = kvio::retainedIndexRunBytes();
  EXPECT_GE(small, 1000 * runBytes) << "a small transfer's runs stay for the next one";
  EXPECT_LE(small, kvio::kRetainedIndexRunBytes);

  // 40000 runs, more than the bound holds.
  ASSERT_GT(40000 * runBytes, kvio::kRetainedIndexRunBytes);
  copyEveryOtherSlot(executor, src, dst, 40000);
  EXPECT_EQ(kvio::retainedIndexRunBytes(), 0u) << "a large transfer's runs are not kept";

  copyEveryOtherSlot(executor, src, dst, 1000);  // grows them again, within the bound
  EXPECT_GE(kvio::retainedIndexRunBytes(), 1000 * runBytes);

  EXPECT_EQ(kvio_pool_close(src), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close(dst), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// 60000 runs: the planner's run offsets (three u64 each) and, within one pool, validation's two
// sorted interval lists (three i64 each) grow past the bound; what a thread keeps afterwards is
// less than any one of them would hold.
TEST(TransferScratch, LargeTransfersValidationAndPlanScratchIsFreed) {
  constexpr int64_t kPairs = 60000;
  constexpr size_t kOneList = kPairs * 3 * sizeof(uint64_t);
  ASSERT_GT(kOneList, kvio::kRetainedScratchBytes);
  uint64_t executor = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), KVIO_STATUS_OK);
  const uint64_t src = allocatePool();
  const uint64_t dst = allocatePool();

  copyEveryOtherSlot(executor, src, dst, 1000);
  EXPECT_GT(kvio::retainedPlanScratchBytes(), 0u) << "a small transfer's run offsets stay";
  EXPECT_GT(kvio::retainedValidationScratchBytes(), 0u) << "and its slot bitmap";

  copyEveryOtherSlot(executor, src, dst, kPairs);
  EXPECT_LT(kvio::retainedPlanScratchBytes(), kOneList) << "a large plan's offsets are not kept";

  copyEveryOtherSlot(executor, src, src, kPairs, 1);  // within one pool: the interval check
  EXPECT_LT(kvio::retainedValidationScratchBytes(), kOneList)
      << "a large transfer's sorted intervals are not kept";

  EXPECT_EQ(kvio_pool_close(src), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close(dst), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// A large pool's duplicate check: one bit per destination slot (16M slots: a 2 MiB bitmap) is
// not kept either. (The overlap check's region lists and the planner's run groups are bounded
// the same way; they pass 1 MiB only for pools of ~40000 regions or transfers of ~130000 runs.)
TEST(TransferScratch, LargePoolsSlotBitmapIsFreed) {
  const kvio_pool_spec spec{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1, 16384, 1024, 1, 1};
  uint64_t src = 0, dst = 0, executor = 0;
  ASSERT_EQ(kvio_pool_allocate(&spec, &src), KVIO_STATUS_OK) << kvio_last_error();
  ASSERT_EQ(kvio_pool_allocate(&spec, &dst), KVIO_STATUS_OK) << kvio_last_error();
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), KVIO_STATUS_OK);
  constexpr size_t kBitmapBytes = (size_t{16384} * 1024 / 64) * sizeof(uint64_t);
  ASSERT_GT(kBitmapBytes, kvio::kRetainedScratchBytes);

  copyEveryOtherSlot(executor, src, dst, 70000);  // enough pairs for the bitmap to be cheaper
  EXPECT_LT(kvio::retainedValidationScratchBytes(), kBitmapBytes)
      << "the slot bitmap of a 16M-slot pool is not kept";

  EXPECT_EQ(kvio_pool_close(src), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close(dst), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

}  // namespace
}  // namespace kvio_test
