// kvio_debug_live_objects, kvio_debug_live_host_registrations, kvio_debug_copy_engine_calls and
// kvio_debug_kernel_launches (see diagnostics.hpp and kvio.h), and the definitions of the
// counters.
#include "diagnostics.hpp"

#include "../engine/copy_engine.hpp"
#include "error.hpp"
#include "guard.hpp"

namespace kvio {

std::atomic<int64_t> liveHostAllocations{0};
std::atomic<int64_t> liveHostRegistrations{0};

namespace {
std::atomic<int64_t> kernelLaunches[2];  // by KernelTables
}  // namespace

void countKernelLaunch(KernelTables where) {
  kernelLaunches[static_cast<int32_t>(where)].fetch_add(1, std::memory_order_relaxed);
}

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

kvio_status kvio_debug_copy_engine_calls(int64_t* counts_out) {
  return guarded([&]() -> kvio_status {
    if (counts_out == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "counts_out is null");
    const engine::EngineCalls calls = engine::callTotals();
    counts_out[0] = static_cast<int64_t>(calls.copy1d);
    counts_out[1] = static_cast<int64_t>(calls.copy2d);
    counts_out[2] = static_cast<int64_t>(calls.batch);
    counts_out[3] = static_cast<int64_t>(calls.batch3d);
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_debug_kernel_launches(int64_t* counts_out) {
  return guarded([&]() -> kvio_status {
    if (counts_out == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "counts_out is null");
    counts_out[0] = kernelLaunches[static_cast<int32_t>(KernelTables::kInParameter)].load();
    counts_out[1] = kernelLaunches[static_cast<int32_t>(KernelTables::kUploaded)].load();
    return KVIO_STATUS_OK;
  });
}

}  // extern "C"
