// An operator new that fails on request, for the out-of-memory tests (allocation_failure_test):
// failing_allocator.cpp replaces the global operator new and delete of the test binary, and
// AllocationBudget arms it around kvio calls so that the Nth allocation of the calling thread
// fails (once, or that one and every one after it). Other threads' allocations never fail, so
// a run is deterministic.
#ifndef KVIO_TESTS_FAILING_ALLOCATOR_HPP_
#define KVIO_TESTS_FAILING_ALLOCATOR_HPP_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kvio/kvio.h"

namespace kvio_test {

/// Arms the failing allocator on this thread for `failAt` more allocations, then one (or, with
/// `persist`, every one) fails; disarm() returns how many were left and how many failed.
void armAllocations(int64_t failAt, bool persist);
void disarmAllocations(int64_t* left, int64_t* failures);

/// Runs kvio calls with the thread's allocations counted down across the calls: the one at
/// `failAt` fails, and with `persist` every one after it too.
class AllocationBudget {
 public:
  AllocationBudget(int64_t failAt, bool persist) : left_(failAt), persist_(persist) {}

  /// Runs `call` armed; its status must be OK, or OUT_OF_MEMORY with a message when an
  /// allocation failed during it.
  template <class Call>
  kvio_status run(const char* what, Call&& call) {
    armAllocations(left_, persist_);
    const kvio_status status = call();
    int64_t failures = 0;
    disarmAllocations(&left_, &failures);
    injected_ += failures;
    if (status != KVIO_STATUS_OK) {
      const std::string message = kvio_last_error();
      EXPECT_EQ(status, KVIO_STATUS_OUT_OF_MEMORY) << what << ": " << message;
      EXPECT_GT(failures, 0) << what << " failed with no allocation failing: " << message;
      EXPECT_FALSE(message.empty()) << what;
    }
    return status;
  }

  /// Whether some allocation failed (false: N was past the run's allocations).
  bool injected() const { return injected_ > 0; }

 private:
  int64_t left_;
  bool persist_;
  int64_t injected_ = 0;
};

}  // namespace kvio_test

#endif  // KVIO_TESTS_FAILING_ALLOCATOR_HPP_
