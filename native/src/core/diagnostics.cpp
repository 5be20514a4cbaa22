// kvio_debug_live_objects, kvio_debug_live_host_registrations and kvio_test_inject_fault (see
// diagnostics.hpp and kvio.h), and the counters' definitions.
#include "diagnostics.hpp"

#include "error.hpp"
#include "guard.hpp"

namespace kvio {

std::atomic<int64_t> liveHostAllocations{0};
std::atomic<int64_t> liveHostRegistrations{0};
std::atomic<int64_t> armedFaults[KVIO_TEST_FAULT_COUNT];

}  // namespace kvio

using namespace kvio;

extern "C" {

kvio_status kvio_debug_live_objects(int64_t* counts_out) {
  return guarded([&]() -> kvio_status {
    if (counts_out == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "counts_out is null");
    liveHandles(&counts_out[0], &counts_out[1], &counts_out[2]);
    counts_out[3] = liveHostAllocations.load();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_debug_live_host_registrations(int64_t* count_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(count_out, "count_out"));
    *count_out = liveHostRegistrations.load();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_test_inject_fault(int32_t fault, int64_t count) {
  return guarded([&]() -> kvio_status {
    if (fault < 1 || fault >= KVIO_TEST_FAULT_COUNT) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "fault %d is not valid; valid: 1 (host_allocation), 2 (cpu_copy)", fault);
    }
    if (count < 0) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "count must be >= 0, got %lld",
                  static_cast<long long>(count));
    }
    armedFaults[fault].store(count);
    return KVIO_STATUS_OK;
  });
}

}  // extern "C"
