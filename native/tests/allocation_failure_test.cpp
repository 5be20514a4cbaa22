// Out of host memory at every allocation: the failing allocator (failing_allocator.hpp) makes
// the Nth allocation of the calling thread fail (once, or that one and every one after it),
// for N = 0, 1, 2, ... until a run makes no failing allocation. Each run goes through a whole
// life of kvio objects on the C ABI (pools allocated and wrapped, a cpu executor, a transfer run
// on the calling thread and one run by the workers, their waits and infos, every close); the
// registry of host registrations gets the same in allocation_failure_registry.cpp (it needs the
// core's internal headers, which this file's public C++ API cannot share a file with). At every N:
// no exception leaves kvio (the process would end: std::terminate), every call answers OK or
// OUT_OF_MEMORY with a message, a transfer whose submit failed changed no byte, one that
// succeeded wrote what the oracle says (destinations canary-filled, compared whole), and once
// everything is closed nothing is left open, allocated or registered.
//
// Only the test thread's allocations fail (kvio's worker threads allocate as usual), so each
// run is deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

#include "failing_allocator.hpp"
#include "kvio/kvio.h"
#include "kvio_test_hooks.h"
#include "oracle.hpp"

namespace kvio_test {
namespace {

std::array<int64_t, 4> liveObjects() {
  std::array<int64_t, 4> counts{};
  EXPECT_EQ(kvio_debug_live_objects(counts.data()), KVIO_STATUS_OK);
  return counts;
}

// 4 layers x 256 tokens x 8 heads x 128 B x K and V: 2 MiB, so that an all-layer transfer is
// run by the workers (more than a job the submitting thread runs alone) and one layer's
// 512 KiB on the calling thread.
const Geometry kDevice{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 4, 16, 16, 8, 128};
const Geometry kHost{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 4, 16, 16, 8, 128};

std::vector<int64_t> shuffled(std::mt19937_64& rng, int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

/// One life of kvio objects with allocation `failAt` failing; returns whether any failed.
bool runLife(int64_t failAt, bool persist) {
  SCOPED_TRACE("allocation " + std::to_string(failAt) + (persist ? " and after" : " only"));
  const std::array<int64_t, 4> before = liveObjects();
  bool injected = false;
  {
    std::mt19937_64 rng(static_cast<uint64_t>(failAt) * 2 + persist);
    TestPool device(kDevice), host(kHost);
    SeededPair pools(device, host, rng);
    const std::vector<int64_t> src = shuffled(rng, kDevice.S()), dst = shuffled(rng, kHost.S());
    const uint64_t deviceHandle = device.pool().handle(), hostHandle = host.pool().handle();

    AllocationBudget budget(failAt, persist);
    uint64_t executor = 0;
    if (budget.run("kvio_executor_create", [&] {
          return kvio_executor_create(KVIO_BACKEND_CPU, 2, &executor);
        }) == KVIO_STATUS_OK) {
      // Layer 1 alone (the calling thread copies it), then all layers (the workers do).
      struct Submitted {
        int64_t layer, layers;
        uint64_t transfer;
      };
      std::vector<Submitted> submitted;
      for (const std::pair<int64_t, int64_t>& range :
           {std::pair<int64_t, int64_t>{1, 1}, {0, kDevice.L}}) {
        const int64_t layer = range.first, layers = range.second;  // lambdas capture these
        uint64_t transfer = 0;
        const kvio_status status = budget.run("kvio_submit_args", [&] {
          return kvio_submit_args(executor, deviceHandle, hostHandle, src.data(), dst.data(),
                                  static_cast<int64_t>(src.size()), layer, layer, layers,
                                  &transfer);
        });
        if (status == KVIO_STATUS_OK) {
          submitted.push_back({layer, layers, transfer});
        } else {
          EXPECT_EQ(transfer, 0u) << "a failed submit returned a transfer";
        }
      }
      for (const Submitted& s : submitted) {
        EXPECT_EQ(
            budget.run("kvio_transfer_wait", [&] { return kvio_transfer_wait(s.transfer, -1); }),
            KVIO_STATUS_OK);
        kvio_transfer_info info{};
        budget.run("kvio_transfer_get_info",
                   [&] { return kvio_transfer_get_info(s.transfer, &info); });
        EXPECT_EQ(
            budget.run("kvio_transfer_close", [&] { return kvio_transfer_close(s.transfer); }),
            KVIO_STATUS_OK);
        pools.expect(src, dst, s.layer, s.layer, s.layers);
      }
      EXPECT_EQ(budget.run("kvio_executor_close", [&] { return kvio_executor_close(executor); }),
                KVIO_STATUS_OK);
    }

    // A pool kvio allocates, and one over caller memory, opened and closed.
    const kvio_pool_spec spec = kHost.spec().toC();
    uint64_t allocated = 0, wrapped = 0;
    if (budget.run("kvio_pool_allocate", [&] { return kvio_pool_allocate(&spec, &allocated); }) ==
        KVIO_STATUS_OK) {
      EXPECT_EQ(budget.run("kvio_pool_close", [&] { return kvio_pool_close(allocated); }),
                KVIO_STATUS_OK);
    }
    std::vector<uint8_t> memory(static_cast<size_t>(kHost.regionBytes()));
    if (budget.run("kvio_pool_wrap", [&] {
          return kvio_pool_wrap(&spec, reinterpret_cast<uint64_t>(memory.data()), memory.size(),
                                &wrapped);
        }) == KVIO_STATUS_OK) {
      EXPECT_EQ(budget.run("kvio_pool_close", [&] { return kvio_pool_close(wrapped); }),
                KVIO_STATUS_OK);
    }

    EXPECT_TRUE(pools.check());
    injected = budget.injected();
  }  // the test's own pools closed
  EXPECT_EQ(liveObjects(), before) << "open pools, executors, transfers, host allocations";
  return injected;
}

TEST(AllocationFailure, EveryAllocationOfAPoolsExecutorsAndTransfersLife) {
  for (const bool persist : {false, true}) {
    int64_t n = 0;
    for (; n < 5000 && runLife(n, persist); ++n) {
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_LT(n, 5000) << "the life never ran without a failing allocation";
    EXPECT_GT(n, 10) << "fewer allocations than expected: is operator new replaced?";
  }
}

// kvio_pool_close_wait on a closed pool whose transfer still runs (held by the test hook) with
// allocations failing from the Nth on: it must answer TIMEOUT every time, never OK and never an
// error (callers take anything but TIMEOUT as "released", and free the memory under the copy).
// Closing a handle that is no open pool's (never opened, closed already, another type's)
// allocates nothing before the handle is found bad: with every allocation failing it is still
// INVALID_ARGUMENT or CLOSED, never OUT_OF_MEMORY (kvio.h: close does not fail for memory; the
// message, made after, may lose its text).
TEST(AllocationFailure, ClosingABadPoolHandleIsNeverOutOfMemory) {
  const kvio_pool_spec spec =
      Geometry{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 1, 2, 4, 1, 64}
          .spec()
          .toC();
  uint64_t closed = 0, executor = 0;
  ASSERT_EQ(kvio_pool_allocate(&spec, &closed), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_close(closed), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), KVIO_STATUS_OK);
  const struct {
    uint64_t handle;
    kvio_status status;
  } cases[] = {{0x1234, KVIO_STATUS_INVALID_ARGUMENT},
               {executor, KVIO_STATUS_INVALID_ARGUMENT},
               {closed, KVIO_STATUS_CLOSED}};
  for (const auto& c : cases) {
    for (const bool wait : {false, true}) {
      armAllocations(0, true);
      const kvio_status status =
          wait ? kvio_pool_close_wait(c.handle, 0) : kvio_pool_close(c.handle);
      int64_t left = 0, failures = 0;
      disarmAllocations(&left, &failures);
      if (wait && c.status == KVIO_STATUS_CLOSED) {
        EXPECT_EQ(status, KVIO_STATUS_OK)
            << "a closed pool's memory released: " << kvio_last_error();
      } else {
        EXPECT_EQ(status, c.status) << std::hex << c.handle << ": " << kvio_last_error();
      }
    }
  }
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

TEST(AllocationFailure, WaitingForAClosedPoolInUseNeverSaysReleasedForLackOfMemory) {
  // 16 MiB: over the 8 MiB the hold applies to, so the workers copy it (held before they start).
  const kvio_pool_spec spec =
      Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 4, 64, 16, 8, 256}
          .spec()
          .toC();
  uint64_t src = 0, dst = 0, executor = 0, transfer = 0;
  ASSERT_EQ(kvio_pool_allocate(&spec, &src), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_allocate(&spec, &dst), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), KVIO_STATUS_OK);
  std::vector<int64_t> slots(static_cast<size_t>(spec.num_pages * spec.page_size));
  for (size_t i = 0; i < slots.size(); ++i) slots[i] = static_cast<int64_t>(i);
  ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 1), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_submit_args(executor, src, dst, slots.data(), slots.data(),
                             static_cast<int64_t>(slots.size()), 0, 0, spec.num_layers, &transfer),
            KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_close(dst), KVIO_STATUS_OK);
  for (int64_t n = 0; n < 40; ++n) {
    int64_t left = 0, failures = 0;
    armAllocations(n, true);
    const kvio_status status = kvio_pool_close_wait(dst, 0);
    disarmAllocations(&left, &failures);
    EXPECT_EQ(status, KVIO_STATUS_TIMEOUT)
        << "allocation " << n << " and after failing: " << kvio_last_error();
  }
  EXPECT_EQ(kvio_transfer_is_done(transfer), 0) << "held";
  ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 0), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(dst, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_is_done(transfer), 1);
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close(src), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

}  // namespace
}  // namespace kvio_test
