// Out of host memory in a kernel_ascend submit, through the public API and the ACL host
// emulation: the failing allocator (failing_allocator.hpp) makes the Nth allocation of the test
// thread fail, for N = 0, 1, 2, ... until a submit makes no failing allocation. The emulation's
// stream is held, so copies queued by a submit stay queued; the pools are closed right after
// the submit and the stream released afterwards. A submit that queued copies and then ran out
// of memory (the executor's bookkeeping, the issuer's arrays, the emulation's own records, a
// failed call's message) must have run them before it reports OUT_OF_MEMORY: otherwise the
// core completes the transfer, drops its pools, and closing them frees (aclrtFree,
// aclrtFreeHost) memory the queued copies still read and write, which the emulation counts as
// a device fault when the stream runs them. Such a failure after copies were queued is the
// transfer's (the submit answers OK, and the transfer OUT_OF_MEMORY once they ran); a submit that
// answers OUT_OF_MEMORY queued no copy (docs/reliability.md: a refused submit wrote nothing). No
// copy faults, and nothing is left alive in the emulated runtime. The emulation
// allocates on the calling thread too, so its allocations are among the N; the test thread is
// the only one whose allocations fail, so every run is deterministic.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "acl_emulation_test.hpp"
#include "failing_allocator.hpp"
#include "kvio/kvio.h"
#include "oracle.hpp"

namespace kvio_test {
namespace {

// A dim exchange of 6 pages over 4 layers, K and V: the device pool per component in the Ascend
// layer_first layout, the host pool page_first: 2-D copies, and with `batch` 1-D batches too
// (page_head host rows of one head).
const Geometry kDevice{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 4, 12, 4, 2, 64};
const Geometry kHost{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 4, 12, 4, 2, 64};
const Geometry kHostHeads{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_HEAD, Form::Allocated, 4, 12, 4, 2, 64};

class AscendAllocationFailureTest : public AclEmulationTest {
 protected:
  AscendAllocationFailureTest() : AclEmulationTest(true) {}

  uint64_t allocate(const Geometry& g, int32_t kind) {
    const kvio_pool_spec spec = g.spec().toC();
    uint64_t pool = 0;
    EXPECT_EQ(kvio_pool_allocate_memory(&spec, kind, 0, &pool), KVIO_STATUS_OK)
        << kvio_last_error();
    return pool;
  }

  // Submits host -> device (load) or device -> host with allocation `failAt` failing; returns
  // whether an allocation failed.
  bool run(const Geometry& host, bool load, int64_t failAt) {
    SCOPED_TRACE(std::string(load ? "load" : "backup") + ", allocation " + std::to_string(failAt));
    uint64_t executor = 0;
    EXPECT_EQ(kvio_executor_create_ascend(0, KVIO_ASCEND_OWN_STREAM, &executor), KVIO_STATUS_OK)
        << kvio_last_error();
    const uint64_t hostPool = allocate(host, KVIO_MEMORY_ASCEND_HOST_PINNED);
    const uint64_t devicePool = allocate(kDevice, KVIO_MEMORY_ASCEND_DEVICE);
    const std::vector<int64_t> src = expandPages({1, 2, 3, 7, 8, 9}, kDevice.ps);
    const std::vector<int64_t> dst = expandPages({4, 5, 6, 0, 10, 11}, kDevice.ps);
    acl().holdStream();
    const int64_t copiesBefore = acl().counts().copyCalls();
    uint64_t transfer = 0;
    AllocationBudget budget(failAt, false);
    const kvio_status status = budget.run("kvio_submit_args", [&] {
      return load ? kvio_submit_args(executor, hostPool, devicePool, src.data(), dst.data(),
                                     static_cast<int64_t>(src.size()), 0, 0, kDevice.L, &transfer)
                  : kvio_submit_args(executor, devicePool, hostPool, src.data(), dst.data(),
                                     static_cast<int64_t>(src.size()), 0, 0, kDevice.L, &transfer);
    });
    if (status == KVIO_STATUS_OK) {
      EXPECT_NE(transfer, 0u);
    } else {
      EXPECT_EQ(status, KVIO_STATUS_OUT_OF_MEMORY) << kvio_last_error();
      EXPECT_EQ(transfer, 0u);
      EXPECT_EQ(acl().counts().copyCalls(), copiesBefore) << "a refused submit queued copies";
    }
    // Closing the pools frees their memory at once unless a transfer in flight holds them.
    EXPECT_EQ(kvio_pool_close(hostPool), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_pool_close(devicePool), KVIO_STATUS_OK);
    acl().releaseStream();
    if (transfer != 0) {
      const kvio_status outcome = kvio_transfer_wait(transfer, -1);
      if (outcome != KVIO_STATUS_OK) {
        EXPECT_EQ(outcome, KVIO_STATUS_OUT_OF_MEMORY) << kvio_last_error();
        EXPECT_TRUE(budget.injected()) << "failed without a failing allocation";
      }
      kvio_transfer_close(transfer);
    }
    std::string fault;
    EXPECT_EQ(acl().faults(&fault), 0) << fault;
    EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
    const AclHostEmulation::Live live = acl().live();
    EXPECT_EQ(live.deviceAllocations, 0);
    EXPECT_EQ(live.hostAllocations, 0);
    EXPECT_EQ(live.streams, 0);
    EXPECT_EQ(live.events, 0);
    acl().reset();
    return budget.injected();
  }

  void everyAllocation(const Geometry& host, bool load) {
    int64_t failAt = 0;
    for (; failAt < 2000 && !HasFailure(); ++failAt) {
      if (!run(host, load, failAt)) break;
    }
    EXPECT_LT(failAt, 2000) << "no submit ran without a failing allocation";
    EXPECT_GT(failAt, 3) << "too few allocations to have failed one with copies queued";
  }
};

TEST_F(AscendAllocationFailureTest, TwoDimensionalCopiesAreNotLeftQueuedUnderFreedPools) {
  everyAllocation(kHost, true);
  everyAllocation(kHost, false);
}

TEST_F(AscendAllocationFailureTest, BatchedCopiesAreNotLeftQueuedUnderFreedPools) {
  everyAllocation(kHostHeads, true);
  everyAllocation(kHostHeads, false);
}

}  // namespace
}  // namespace kvio_test
