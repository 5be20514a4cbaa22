/* kvio's test hooks: entry points that only the test variant of libkvio exports (target
 * kvio_testing, built from the same core objects plus native/tests/test_hooks.cpp into
 * <build>/testing/libkvio.so). The shipped libkvio.so exports none of them. The C++ tests that
 * use them link kvio_testing (or the white-box static core); the Java tests load the test
 * variant through io.kvio.KvioTestNative (java/src/test). */
#ifndef KVIO_TEST_HOOKS_H_
#define KVIO_TEST_HOOKS_H_

#include "kvio/kvio.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TEST ONLY: fault injection, to check how failures surface. Arms fault `fault` for its next
 * `count` occurrences in this process (0 disarms):
 *   KVIO_TEST_FAULT_HOST_ALLOCATION: kvio_pool_allocate fails as if mmap failed (OUT_OF_MEMORY);
 *   KVIO_TEST_FAULT_CPU_COPY: the cpu backend's next transfers fail without copying; their
 *   handles complete with BACKEND_ERROR naming the failed copy;
 *   KVIO_TEST_FAULT_CPU_HOLD: the cpu backend's next transfers of over 8 MiB or submitted
 *   with KVIO_SUBMIT_QUEUE_ONLY (which only its workers copy) stop before their first copy
 *   until the fault is set again with count 0, which releases every held transfer (or for at
 *   most 60 s): a transfer that is certainly still running, for lifetime tests; later
 *   transfers on that executor wait behind it;
 *   KVIO_TEST_FAULT_CPU_THREAD: the next cpu executors created with 2 or more threads fail to
 *   start their second worker thread, as if std::thread had thrown std::system_error (EAGAIN):
 *   kvio_executor_create returns OUT_OF_MEMORY naming the thread, with no executor left;
 *   KVIO_TEST_FAULT_NO_POPULATE: the next regions kvio_pool_prefault backs are treated as on a
 *   kernel without madvise(MADV_POPULATE_WRITE): kvio's own memory is touched page by page,
 *   caller memory refused (UNSUPPORTED);
 *   KVIO_TEST_FAULT_POPULATE_PROBE: the next regions kvio_pool_prefault backs find the kernel
 *   could not be asked whether it has MADV_POPULATE_WRITE (its probe failed with ENOMEM):
 *   kvio's own memory is touched page by page, caller memory refused (OUT_OF_MEMORY).
 * Costs one atomic load per allocation, transfer or executor creation when unarmed; test builds
 * only. */
enum {
  KVIO_TEST_FAULT_HOST_ALLOCATION = 1,
  KVIO_TEST_FAULT_CPU_COPY = 2,
  KVIO_TEST_FAULT_CPU_HOLD = 3,
  KVIO_TEST_FAULT_CPU_THREAD = 4,
  KVIO_TEST_FAULT_NO_POPULATE = 5,
  KVIO_TEST_FAULT_POPULATE_PROBE = 6
};
#define KVIO_TEST_FAULT_COUNT 7
KVIO_API kvio_status kvio_test_inject_fault(int32_t fault, int64_t count);
/* TEST ONLY: how many tasks of cpu transfers held by KVIO_TEST_FAULT_CPU_HOLD are waiting for
 * the release now (a worker parked there holds no kvio lock). */
KVIO_API kvio_status kvio_test_cpu_held_tasks(int64_t* count_out);

/* TEST ONLY: lowers the most handles of one type open at once (normally 2^24), so that tests
 * reach that limit without opening millions of handles. `type` indexes kvio_debug_live_objects'
 * counts: KVIO_TEST_HANDLES_POOL, _EXECUTOR, _TRANSFER; `limit` < 0 restores 2^24. Handles open
 * already stay open; opening one past the limit fails as at 2^24 (OUT_OF_MEMORY). */
enum { KVIO_TEST_HANDLES_POOL = 0, KVIO_TEST_HANDLES_EXECUTOR = 1, KVIO_TEST_HANDLES_TRANSFER = 2 };
KVIO_API kvio_status kvio_test_handle_limit(int32_t type, int64_t limit);

/* TEST ONLY: the next transfer whose index arrays are checked (kvio_submit, kvio_check_transfer,
 * kvio_plan; on any thread) stores `value` into `*target` after it checked them and before it
 * reads them again to split them into runs: what a caller changing its arrays during its own
 * submit (a data race of its own) could do at the worst moment. Once; a null target disarms.
 * Test builds only. */
KVIO_API kvio_status kvio_test_rewrite_after_index_check(int64_t* target, int64_t value);

/* TEST ONLY: replaces the ACL runtime of the kernel_ascend backend by `table`, a
 * kvio::ascend::AclApi (native/src/ascend/acl_api.hpp) of table_bytes bytes whose functions
 * emulate ACL (native/tests/acl_host_emulation.cpp); NULL goes back to libascendcl.so. The table
 * is copied. Call it while no Ascend executor or pool exists; test builds only. */
KVIO_API kvio_status kvio_test_ascend_runtime(const void* table, uint64_t table_bytes);

/* TEST ONLY: the OS kernel release (uname's "release", e.g. "5.10.0-60.18.0.50.oe2203.aarch64")
 * the kernel_ascend backend sees from now on when it decides whether aclrtHostRegisterV2 may pin
 * pageable memory (docs/ascend.md); NULL goes back to uname's. Test builds only. */
KVIO_API kvio_status kvio_test_ascend_kernel_release(const char* release);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KVIO_TEST_HOOKS_H_ */
