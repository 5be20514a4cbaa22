// The test hooks (kvio_test_hooks.h): fault injection, the index rewrite during validation,
// lowered handle limits, the ACL runtime emulation entry and the faked OS kernel release.
// Linked with the core's objects into the test variant of libkvio (kvio_testing) and the
// white-box tests' static core only; the shipped libkvio.so has neither.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "ascend/acl_api.hpp"
#include "ascend/host_pinning.hpp"
#include "core/diagnostics.hpp"
#include "core/guard.hpp"
#include "core/handles.hpp"
#include "kvio_test_hooks.h"

namespace kvio {
static_assert(int{KVIO_TEST_FAULT_HOST_ALLOCATION} == int{kFaultHostAllocation} &&
                  int{KVIO_TEST_FAULT_CPU_COPY} == int{kFaultCpuCopy} &&
                  int{KVIO_TEST_FAULT_CPU_HOLD} == int{kFaultCpuHold} &&
                  int{KVIO_TEST_FAULT_CPU_THREAD} == int{kFaultCpuThread} &&
                  int{KVIO_TEST_FAULT_NO_POPULATE} == int{kFaultNoPopulate} &&
                  int{KVIO_TEST_FAULT_POPULATE_PROBE} == int{kFaultPopulateProbe} &&
                  KVIO_TEST_FAULT_COUNT == int{kFaultCount},
              "kvio_test_hooks.h and diagnostics.hpp number the faults alike");

// What the fault points of the test variant check (KVIO_FAULT, diagnostics.hpp); the shipped
// library has neither the points nor this (ctest ReleaseLibrary.HasNoFaultChecks).
std::atomic<int64_t> armedFaults[kFaultCount];

namespace {
std::mutex holdMutex;
std::condition_variable holdReleased;
int64_t holdReleases = 0;  // guarded by holdMutex
int64_t holdWaiters = 0;   // guarded by holdMutex: tasks waiting in waitForCpuHoldRelease

// The armed index rewrite: one atomic load per validated transfer when unarmed.
std::atomic<int64_t*> rewriteTarget{nullptr};
std::atomic<int64_t> rewriteValue{0};
}  // namespace

void rewriteAfterIndexCheck() {
  if (rewriteTarget.load(std::memory_order_relaxed) == nullptr) return;
  int64_t* const target = rewriteTarget.exchange(nullptr);  // once, on one thread
  if (target != nullptr) __atomic_store_n(target, rewriteValue.load(), __ATOMIC_RELAXED);
}

int64_t cpuHoldReleases() {
  std::lock_guard<std::mutex> lock(holdMutex);
  return holdReleases;
}

void waitForCpuHoldRelease(int64_t releasesAtSubmit) {
  std::unique_lock<std::mutex> lock(holdMutex);
  ++holdWaiters;
  holdReleased.wait_for(lock, std::chrono::seconds(60),
                        [&] { return holdReleases != releasesAtSubmit; });
  --holdWaiters;
}
}  // namespace kvio

using namespace kvio;

extern "C" {

kvio_status kvio_test_cpu_held_tasks(int64_t* count_out) {
  return guarded([&]() -> kvio_status {
    if (count_out == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "count_out is null");
    std::lock_guard<std::mutex> lock(holdMutex);
    *count_out = holdWaiters;
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_test_inject_fault(int32_t fault, int64_t count) {
  return guarded([&]() -> kvio_status {
    if (fault < 1 || fault >= kFaultCount) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "fault %d is not valid; valid: 1 (host_allocation), 2 (cpu_copy), 3 (cpu_hold), "
                  "4 (cpu_thread), 5 (no_populate), 6 (populate_probe)",
                  fault);
    }
    if (count < 0) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "count must be >= 0, got %lld",
                  static_cast<long long>(count));
    }
    armedFaults[fault].store(count);
    if (fault == kFaultCpuHold && count == 0) {  // releases the held transfers
      {
        std::lock_guard<std::mutex> lock(holdMutex);
        ++holdReleases;
      }
      holdReleased.notify_all();
    }
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_test_rewrite_after_index_check(int64_t* target, int64_t value) {
  return guarded([&]() -> kvio_status {
    rewriteValue.store(value);
    rewriteTarget.store(target);  // after the value: a validation that takes it sees the value
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_test_handle_limit(int32_t type, int64_t limit) {
  return guarded([&]() -> kvio_status {
    switch (type) {
      case KVIO_TEST_HANDLES_POOL: pools().setOpenLimit(limit); return KVIO_STATUS_OK;
      case KVIO_TEST_HANDLES_EXECUTOR: executors().setOpenLimit(limit); return KVIO_STATUS_OK;
      case KVIO_TEST_HANDLES_TRANSFER: transfers().setOpenLimit(limit); return KVIO_STATUS_OK;
      default:
        return fail(KVIO_STATUS_INVALID_ARGUMENT,
                    "type %d is not a handle type; valid: 0 (pool), 1 (executor), 2 (transfer)",
                    type);
    }
  });
}

kvio_status kvio_test_ascend_runtime(const void* table, uint64_t table_bytes) {
  return guarded([&]() -> kvio_status {
    using namespace kvio::ascend;
    if (table == nullptr) {
      installAclForTesting(nullptr);
      return KVIO_STATUS_OK;
    }
    const auto* api = static_cast<const AclApi*>(table);
    if (table_bytes != sizeof(AclApi) || api->version != kAclApiVersion ||
        api->size != sizeof(AclApi)) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "table is not a kvio::ascend::AclApi of version %u (%zu bytes); got %llu "
                  "bytes, version %u",
                  kAclApiVersion, sizeof(AclApi), static_cast<unsigned long long>(table_bytes),
                  table_bytes >= sizeof(uint32_t) ? api->version : 0u);
    }
    installAclForTesting(api);
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_test_ascend_kernel_release(const char* release) {
  return guarded([&]() -> kvio_status {
    kvio::ascend::setKernelReleaseForTesting(release);
    return KVIO_STATUS_OK;
  });
}

}  // extern "C"
