// Test and diagnostics support of the core (docs/reliability.md): live-object counters behind
// kvio_debug_live_objects() and kvio_debug_live_host_registrations(), and the fault points that
// the test-only kvio_test_inject_fault() arms (native/tests/test_hooks.cpp, linked into test
// builds only). A fault point costs one relaxed atomic load per allocation or per job when
// nothing is armed; nothing here runs per copy.
#ifndef KVIO_CORE_DIAGNOSTICS_HPP_
#define KVIO_CORE_DIAGNOSTICS_HPP_

#include <atomic>
#include <cstdint>

#include "kvio/kvio.h"

namespace kvio {

/// Host allocations kvio made and has not freed yet (pool.cpp counts them).
extern std::atomic<int64_t> liveHostAllocations;

/// Host registrations kvio made with a device runtime and has not ended yet
/// (host_registry.cpp counts them).
extern std::atomic<int64_t> liveHostRegistrations;

/// Open handles per registry (handles.cpp).
void liveHandles(int64_t* pools, int64_t* executors, int64_t* transfers);

/// The fault points of the core; the test hooks (native/tests/test_hooks.cpp, test builds only)
/// arm them with the same numbers as KVIO_TEST_FAULT_* (native/tests/kvio_test_hooks.h).
enum Fault : int32_t { kFaultHostAllocation = 1, kFaultCpuCopy = 2, kFaultCount = 3 };

/// Armed fault counts, indexed by Fault. Nothing in the shipped library arms them.
extern std::atomic<int64_t> armedFaults[kFaultCount];

/// True when fault `fault` is armed; consumes one arming.
inline bool takeFault(int32_t fault) {
  std::atomic<int64_t>& armed = armedFaults[fault];
  int64_t n = armed.load(std::memory_order_relaxed);
  while (n > 0) {
    if (armed.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

}  // namespace kvio

#endif  // KVIO_CORE_DIAGNOSTICS_HPP_
