// Tests of the handle registry (native/src/core/handles.hpp) at its limits, on registries of
// their own with a few slots: a full registry refuses the next handle with OUT_OF_MEMORY naming
// the handle type, the limit and what to close, registers nothing, and releases the refused
// object; a slot freed at the limit is reused at once; the open limit can be lowered and restored.
// reliability_test.cpp checks the same refusal through the C ABI's entry points.
#include "core/handles.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "rejection_assertions.hpp"

namespace kvio_test {
namespace {

using kvio::Registry;

TEST(Registry, FullTableRefusesNamingTypeLimitAndWhatToClose) {
  Registry<int> registry(kvio::kTransferHandle, 4);
  uint64_t handles[4] = {};
  for (uint64_t& h : handles) ASSERT_EQ(registry.add(std::make_shared<int>(1), &h), KVIO_STATUS_OK);
  auto refused = std::make_shared<int>(5);
  std::weak_ptr<int> watch = refused;
  uint64_t handle = 77;
  EXPECT_REJECTED(registry.add(std::move(refused), &handle), KVIO_STATUS_OUT_OF_MEMORY,
                  "too many open transfer handles: 4 are open and at most 4 may be",
                  "not a lack of host memory", "kvio_transfer_close");
  EXPECT_EQ(handle, 77u);         // not written
  EXPECT_TRUE(watch.expired());   // the refused object is not kept
  EXPECT_EQ(registry.size(), 4);  // nothing half-registered
  for (uint64_t h : handles) {
    std::shared_ptr<int> object;
    EXPECT_EQ(registry.get(h, "transfer", &object), KVIO_STATUS_OK);
  }
}

TEST(Registry, EachTypeSaysWhatToClose) {
  Registry<int> pools(kvio::kPoolHandle, 1);
  Registry<int> executors(kvio::kExecutorHandle, 1);
  uint64_t handle = 0;
  ASSERT_EQ(pools.add(std::make_shared<int>(0), &handle), KVIO_STATUS_OK);
  ASSERT_EQ(executors.add(std::make_shared<int>(0), &handle), KVIO_STATUS_OK);
  EXPECT_REJECTED(pools.add(std::make_shared<int>(0), &handle), KVIO_STATUS_OUT_OF_MEMORY,
                  "too many open pool handles: 1 is open and at most 1 may be", "kvio_pool_close");
  EXPECT_REJECTED(executors.add(std::make_shared<int>(0), &handle), KVIO_STATUS_OUT_OF_MEMORY,
                  "too many open executor handles", "kvio_executor_close");
}

TEST(Registry, SlotFreedAtTheLimitIsReusedAndItsOldHandleStaysClosed) {
  // Below the limit a freed slot waits behind 1024 others; at the limit it is all there is.
  Registry<int> registry(kvio::kPoolHandle, 3);
  uint64_t handles[3] = {};
  for (uint64_t& h : handles) ASSERT_EQ(registry.add(std::make_shared<int>(1), &h), KVIO_STATUS_OK);
  std::shared_ptr<int> removed;
  ASSERT_EQ(registry.remove(handles[1], "pool", &removed), KVIO_STATUS_OK);
  uint64_t again = 0;
  ASSERT_EQ(registry.add(std::make_shared<int>(2), &again), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_NE(again, handles[1]);
  std::shared_ptr<int> object;
  EXPECT_EQ(registry.get(handles[1], "pool", &object), KVIO_STATUS_CLOSED);
  ASSERT_EQ(registry.get(again, "pool", &object), KVIO_STATUS_OK);
  EXPECT_EQ(*object, 2);
  EXPECT_EQ(registry.size(), 3);
}

TEST(Registry, OpenLimitLowersAndRestores) {
  Registry<int> registry(kvio::kExecutorHandle);
  registry.setOpenLimit(2);
  uint64_t a = 0, b = 0, c = 0;
  ASSERT_EQ(registry.add(std::make_shared<int>(0), &a), KVIO_STATUS_OK);
  ASSERT_EQ(registry.add(std::make_shared<int>(0), &b), KVIO_STATUS_OK);
  EXPECT_REJECTED(registry.add(std::make_shared<int>(0), &c), KVIO_STATUS_OUT_OF_MEMORY,
                  "2 are open and at most 2 may be");
  registry.setOpenLimit(1);  // below what is open: those stay open
  EXPECT_EQ(registry.size(), 2);
  EXPECT_REJECTED(registry.add(std::make_shared<int>(0), &c), KVIO_STATUS_OUT_OF_MEMORY,
                  "2 are open and at most 1 may be");
  registry.setOpenLimit(-1);  // back to 2^24
  EXPECT_EQ(registry.add(std::make_shared<int>(0), &c), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(registry.size(), 3);
}

}  // namespace
}  // namespace kvio_test
