// kvio_debug_live_objects and kvio_test_inject_fault (see diagnostics.hpp and kvio.h); the
// counters' definitions (kvio_debug_live_host_registrations reads one in api.cpp).
#include "diagnostics.hpp"

#include "error.hpp"

namespace kvio {

std::atomic<int64_t> liveHostAllocations{0};
std::atomic<int64_t> liveHostRegistrations{0};
std::atomic<int64_t> armedFaults[KVIO_TEST_FAULT_COUNT];

}  // namespace kvio

using namespace kvio;

extern "C" {

kvio_status kvio_debug_live_objects(int64_t* counts_out) {
  if (counts_out == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "counts_out is null");
  liveHandles(&counts_out[0], &counts_out[1], &counts_out[2]);
  counts_out[3] = liveHostAllocations.load();
  return KVIO_STATUS_OK;
}

kvio_status kvio_test_inject_fault(int32_t fault, int64_t count) {
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
}

}  // extern "C"
