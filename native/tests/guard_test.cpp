// Tests of the C ABI's exception firewall (native/src/core/guard.hpp): an exception thrown in an
// entry point's body becomes a status with the reason in the thread's last error, and entry points
// that return a value instead return their fallback.
#include "core/guard.hpp"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>

namespace kvio_test {
namespace {

TEST(Guard, BadAllocBecomesOutOfMemory) {
  const kvio_status status = kvio::guarded([]() -> kvio_status { throw std::bad_alloc(); });
  EXPECT_EQ(status, KVIO_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(std::string(kvio_last_error()), "out of host memory");
}

TEST(Guard, StandardExceptionBecomesInternalWithItsMessage) {
  const kvio_status status =
      kvio::guarded([]() -> kvio_status { throw std::runtime_error("mutex broke"); });
  EXPECT_EQ(status, KVIO_STATUS_INTERNAL);
  EXPECT_EQ(std::string(kvio_last_error()), "internal error: mutex broke");
}

TEST(Guard, AnyOtherExceptionBecomesInternal) {
  const kvio_status status = kvio::guarded([]() -> kvio_status { throw 42; });
  EXPECT_EQ(status, KVIO_STATUS_INTERNAL);
  EXPECT_EQ(std::string(kvio_last_error()), "internal error (unknown exception)");
}

TEST(Guard, StatusAndLastErrorPassThrough) {
  (void)kvio::fail(KVIO_STATUS_CLOSED, "before");
  EXPECT_EQ(kvio::guarded([]() -> kvio_status { return KVIO_STATUS_OK; }), KVIO_STATUS_OK);
  EXPECT_EQ(std::string(kvio_last_error()), "before");
  EXPECT_EQ(kvio::guarded([]() -> kvio_status {
              return kvio::fail(KVIO_STATUS_OUT_OF_RANGE, "index %d", 7);
            }),
            KVIO_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(std::string(kvio_last_error()), "index 7");
}

TEST(Guard, ValueEntryPointsReturnTheirFallback) {
  EXPECT_STREQ(
      kvio::guardedValue<const char*>("fallback", []() -> const char* { throw std::bad_alloc(); }),
      "fallback");
  EXPECT_EQ(std::string(kvio_last_error()), "out of host memory");
  EXPECT_STREQ(kvio::guardedValue<const char*>(nullptr, [] { return "value"; }), "value");
}

}  // namespace
}  // namespace kvio_test
