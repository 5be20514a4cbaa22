// Test and diagnostics support of the core (docs/reliability.md): live-object counters behind
// kvio_debug_live_objects() and kvio_debug_live_host_registrations(), the kernel launch counts
// behind kvio_debug_kernel_launches(), and the fault points that
// the test-only kvio_test_inject_fault() arms (native/tests/test_hooks.cpp, linked into test
// builds only). The shipped library has no fault checks; in the test variant a fault point costs
// one relaxed atomic load per allocation or per job when nothing is armed.
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

/// Where a kernel launch's layer tables and indices went (kvio_debug_kernel_launches).
enum class KernelTables : int32_t { kInParameter = 0, kUploaded = 1 };

/// Counts one issued launch of the 'kernel' backend's copy kernel (cuda/kernel_executor.cpp);
/// one relaxed atomic add.
void countKernelLaunch(KernelTables where);

/// Open handles per registry (handles.cpp).
void liveHandles(int64_t* pools, int64_t* executors, int64_t* transfers);

/// The fault points of the core; the test hooks (native/tests/test_hooks.cpp, test builds only)
/// arm them with the same numbers as KVIO_TEST_FAULT_* (native/tests/kvio_test_hooks.h).
enum Fault : int32_t {
  kFaultHostAllocation = 1,
  kFaultCpuCopy = 2,
  kFaultCpuHold = 3,
  kFaultCpuThread = 4,
  kFaultNoPopulate = 5,
  kFaultPopulateProbe = 6,
  kFaultCount = 7
};

// A fault point is `if (KVIO_FAULT(kFault...)) { fail as the real failure would }`. Only the
// sources listed in KVIO_FAULT_POINT_SOURCES (CMakeLists.txt) may have one: they are compiled
// twice, with KVIO_TESTING=0 for the shipped library (KVIO_FAULT is false: the check compiles
// away, and the library has no armed fault counts) and KVIO_TESTING=1 for the test variant
// (KVIO_FAULT takes one arming). Elsewhere KVIO_FAULT is not defined, so a fault point added to
// another source does not compile.
#if defined(KVIO_TESTING) && KVIO_TESTING
/// Armed fault counts, indexed by Fault (defined and armed in native/tests/test_hooks.cpp).
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
#define KVIO_FAULT(fault) ::kvio::takeFault(fault)
constexpr bool kFaultPoints = true;

/// kFaultCpuHold: the release count now (at a held job's submission), and the wait of each of
/// its tasks until a later release (kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 0)) or 60 s.
int64_t cpuHoldReleases();
void waitForCpuHoldRelease(int64_t releasesAtSubmit);

/// kvio_test_rewrite_after_index_check: a transfer's validation calls this after it checked the
/// index arrays and before it reads them again to split them into runs; an armed rewrite stores
/// its value into the caller's array there, once.
void rewriteAfterIndexCheck();
#elif defined(KVIO_TESTING)
#define KVIO_FAULT(fault) false
/// False: code that only reports an injected fault compiles away too (`if (!kFaultPoints ...)`).
constexpr bool kFaultPoints = false;
#endif

}  // namespace kvio

#endif  // KVIO_CORE_DIAGNOSTICS_HPP_
