// A host emulation of the ACL runtime functions the kernel_ascend backend calls (the AclApi
// table of native/src/ascend/acl_api.hpp), for tests on machines without CANN or an NPU. It is
// test code only: the library never contains it; tests install it through
// kvio_test_ascend_runtime (or hand its table to the copy logic directly).
//
// What it emulates: "device memory" is host memory tagged as memory of an emulated NPU
// (aclrtMalloc, or a test's buffers tagged with tagDevice); pinned host memory comes from
// aclrtMallocHost or aclrtHostRegisterV2 with ACL_HOST_REG_PINNED. Copies are real memcpys,
// executed when they are enqueued (so in stream order); events complete when recorded. Every call
// validates its arguments like the documented runtime and answers an ACL error code instead of
// copying: null pointers, count > destMax, width > either pitch, height > 5*1024*1024, 2-D copies
// other than host<->device, a copy kind that does not match where the pointers really lie, a range
// (a 2-D copy's whole footprint, each batch entry) that is not inside one allocation (two
// adjacent allocations, such as buffers tagged one by one out of one block, are two), 1-D copies
// of 0 bytes (the runtime refuses a count of 0 too), unknown streams, events and devices. It is
// stricter than the real runtime in one way: host memory must be pinned or registered (the
// references describe pageable memory in a copy as failing unpredictably when it runs, or from
// 8.3 as a hidden synchronisation, not as an argument error; kvio never passes it). Host
// registration follows CANN's runtime: ONE process-wide table of registered host ranges (not one
// per device), registered pointers 4K-aligned; aclrtHostRegister (V1) maps host memory for the
// device and does not pin it: copies accept it and, when they run, count as a device fault (the API
// reference: unpredictable errors at execution); aclrtHostRegisterV2 with ACL_HOST_REG_PINNED pins
// it, pageable memory or aclrtMallocHost memory alike (the API reference allows both; the runtime's
// range check knows only its own table); V2 answers ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED for a
// range overlapping any registration (the runtime's CheckMemoryRangeRegistered), V1 for one
// overlapping a registration (the driver's "busy"); aclrtHostUnregister takes only a registered
// pointer, from any device's context, once. aclrtPointerGetAttributes answers as CANN's runtime
// does (NpuDriver::PtrGetAttributes): DEVICE and the device for NPU memory, HOST for
// aclrtMallocHost memory and for any address in the table of registrations (V1 and mapped ones
// included), UNREGISTERED for other host memory; it needs no context. The table can leave
// aclrtHostRegisterV2 out (a runtime older than CANN 8.5) and aclrtPointerGetAttributes (a runtime
// without it). A switch refuses device-to-device copies whose addresses are not 64-byte aligned
// (acl_rt.h asks that of aclrtMemcpyAsync; what the device does otherwise is unverified). The
// stream can be held (holdStream): copies and events then wait for releaseStream (or a synchronize
// call), and a held copy whose host memory was unregistered meanwhile counts as a device fault.
// Contexts follow ACL's rules: a thread has no current context until aclrtSetDevice (which
// creates the device's default context once, binds it, and is counted per device) or
// aclrtSetCurrentContext binds one; aclrtGetCurrentContext answers ACL_ERROR_RT_CONTEXT_NULL on
// a thread with none, and aclrtSetCurrentContext takes no null (ACL documents no unbinding).
// Stream and event creation, event record, memcpys, memset, aclrtMalloc/Free, aclrtMallocHost
// and aclrtHostRegister/Unregister answer ACL_ERROR_RT_CONTEXT_NULL on a thread with none
// (aclrtFree stricter than documented) and act for the context's device: streams belong to it
// (work on a stream of another device: ACL_ERROR_RT_STREAM_CONTEXT), and a copy accepts device
// memory of its stream's device and registered or aclrtMallocHost host memory only. Event query,
// wait and destruction, stream synchronize and destruction and aclrtFreeHost need no context.
// Graph capture (setCapture): aclmdlRICaptureGetInfo answers a stream's capture status, work
// queued on a stream being captured is recorded (counted), not run, and aclrtMemset, an "unsafe"
// call, fails and invalidates a capture whose mode forbids it on the calling thread
// (aclmdlRICaptureThreadExchangeMode sets the thread's mode).
// aclGetRecentErrMsg answers and clears the calling thread's last error text. It counts calls per
// function and copied bytes, so tests can assert how many calls a transfer costs, and can be told
// to fail a given call, to answer "feature not supported" for batch copies, or to accept a copy
// that fails when it runs (failTask; what that does to the stream's later work and to event
// queries: stopOnFailure).
#ifndef KVIO_TESTS_ACL_HOST_EMULATION_HPP_
#define KVIO_TESTS_ACL_HOST_EMULATION_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ascend/acl_api.hpp"
#include "kvio_test_hooks.h"

namespace kvio_test {

/// Calls and bytes seen by the emulation since the last reset.
struct AclCallCounts {
  int64_t memcpyAsync = 0;
  int64_t memcpy2dAsync = 0;
  int64_t memcpyBatchAsync = 0;
  int64_t batchedCopies = 0;  // copies inside successful batch calls
  int64_t createEvent = 0;
  int64_t recordEvent = 0;
  int64_t synchronizeStream = 0;
  int64_t pointerGetAttributes = 0;
  int64_t hostRegisterV2 = 0;  // accepted calls
  int64_t hostUnregister = 0;  // accepted calls
  int64_t freeHost = 0;        // accepted calls
  int64_t captureGetInfo = 0;
  int64_t captured = 0;       // copies and event records recorded into a graph capture, not run
  int64_t unsafeRefused = 0;  // unsafe calls (aclrtMemset) a capture's mode forbade
  int64_t rejected = 0;       // calls answered with an error (argument checks or injected)
  int64_t heldWorkRuns = 0;   // held or deferred work that ran (a synchronize, a query, release)
  // Bytes of the copies accepted (queued), counted when queued: a copy that fails when it runs
  // (failTask) or never runs (after a stop) counts too; faults() tells those.
  uint64_t bytesCopied = 0;
  int64_t copyCalls() const { return memcpyAsync + memcpy2dAsync + memcpyBatchAsync; }
};

/// One copy as the emulation executed it (for "which memory did a transfer touch").
struct AclCopyRecord {
  uint64_t dst;
  uint64_t width;
  uint64_t height;
  uint64_t dstPitch;
};

class AclHostEmulation {
 public:
  /// The process-wide emulation (the table's functions are plain C function pointers).
  static AclHostEmulation& instance();

  /// The table of emulated functions; withBatch false leaves aclrtMemcpyBatchAsync out (a
  /// runtime older than CANN 8.3.RC1), withRegisterV2 false aclrtHostRegisterV2 (older than
  /// 8.5), withPointerAttributes false aclrtPointerGetAttributes.
  kvio::ascend::AclApi table(bool withBatch = true, bool withRegisterV2 = true,
                             bool withPointerAttributes = true) const;
  /// Installs the table into libkvio (kvio_test_ascend_runtime) and resets the state.
  void install(bool withBatch = true, bool withRegisterV2 = true,
               bool withPointerAttributes = true);
  /// Back to libascendcl.so.
  void uninstall();

  /// Clears counts, records, injected failures, knobs and captures, and puts the calling thread's
  /// capture mode back to GLOBAL (memory and streams stay).
  void reset();
  AclCallCounts counts() const;
  std::vector<AclCopyRecord> records() const;

  /// Tags [data, data + bytes) as memory of emulated NPU `device`; the returned handle untags it.
  std::shared_ptr<void> tagDevice(void* data, uint64_t bytes, int32_t device = 0);
  /// Tags [data, data + bytes) as page-locked host memory from aclrtMallocHost (what torch_npu's
  /// pinned tensors are); the returned handle untags it (the test owns and frees the memory).
  std::shared_ptr<void> tagPinnedHost(void* data, uint64_t bytes);

  /// Knobs.
  void setDeviceCount(uint32_t count);
  /// What aclrtMemcpyBatchAsync answers (e.g. ACL_ERROR_RT_FEATURE_NOT_SUPPORT); success copies.
  void setBatchResult(kvio::ascend::aclError result);
  /// The `nth` (0-based, counted from now) call of `function` ("aclrtMemcpy2dAsync",
  /// "aclrtMemcpyAsync", "aclrtMemcpyBatchAsync", "aclrtRecordEvent", "aclrtMalloc", ...)
  /// fails with `error` without doing anything.
  void failCall(const std::string& function, int64_t nth, kvio::ascend::aclError error);
  /// The `nth` (0-based, counted from now; each entry of a batch counts, in the caller's order)
  /// copy queued is accepted and fails when it runs, copying nothing: a device fault (faults()
  /// counts it) reporting ACL_ERROR_RT_SYS_DMA as stopOnFailure says.
  void failTask(int64_t nth);
  /// What a copy that fails when it runs does to the rest, as CANN's open-source runtime has it.
  /// false (the default, ACL_CONTINUE_ON_FAILURE): the stream goes on with its next task, events
  /// recorded after the failed copy complete and no event query or wait reports it; the next
  /// aclrtSynchronizeStream reports it, once. true (a stream of the context set to
  /// ACL_STOP_ON_FAILURE, which on A2/A3 is the whole context's mode; here every context's): the
  /// work queued after the failed copy never runs, and every later copy, event record, event
  /// query, event or stream synchronisation answers the error. reset() restores false.
  void stopOnFailure(bool stop);

  /// Graph capture of `stream` (nullptr: the default stream), as aclmdlRICaptureBegin (ACTIVE),
  /// a failure inside it (INVALIDATED) and aclmdlRICaptureEnd (NONE) would leave it:
  /// aclmdlRICaptureGetInfo answers it, and copies and event records queued on the stream while
  /// it is not NONE are recorded into the graph (counts().captured), not run; events recorded
  /// there count as complete once the capture ends (what ACL answers for them is unverified).
  /// `mode` is the capture's (aclmdlRICaptureBegin's), begun on the calling thread: while it is
  /// ACTIVE, an unsafe call (aclrtMemset) on a thread whose mode
  /// (aclmdlRICaptureThreadExchangeMode, GLOBAL until changed) it forbids fails and invalidates it
  /// (the API reference's rules: GLOBAL forbids every thread but a RELAXED one, or a THREAD_LOCAL
  /// one that is not capturing; THREAD_LOCAL only the capturing thread unless RELAXED; RELAXED
  /// none).
  void setCapture(
      void* stream, kvio::ascend::aclmdlRICaptureStatus status,
      kvio::ascend::aclmdlRICaptureMode mode = kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_GLOBAL);
  /// The capture status of `stream` now (NONE when none was set).
  kvio::ascend::aclmdlRICaptureStatus captureStatus(void* stream) const;
  /// The calling thread's capture mode.
  kvio::ascend::aclmdlRICaptureMode threadCaptureMode() const;
  /// What aclmdlRICaptureGetInfo answers from now on (e.g. ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  /// success answers the capture status. reset() restores success.
  void setCaptureInfoResult(kvio::ascend::aclError result);

  /// From now on aclrtMemcpyAsync refuses (ACL_ERROR_INVALID_PARAM) a device-to-device copy
  /// whose destination or source is not 64-byte aligned (acl_rt.h: "both addresses 64-byte
  /// aligned"); off by default and after reset.
  void refuseUnalignedDeviceCopies(bool refuse);

  /// Runs `hook` at the start of every aclrtFreeHost from now on, on the calling thread and
  /// without the emulation's lock (nullptr: none; reset clears it): a test holds a thread that
  /// frees pinned memory there.
  void beforeFreeHost(std::function<void()> hook);

  /// From now on copies and event completions wait (transfers stay in flight) until
  /// releaseStream or a synchronize call (aclrtSynchronizeEvent/Stream) runs them.
  void holdStream();
  void releaseStream();
  /// holdStream that kvio's waits release: held work runs at a synchronize call or at every
  /// other status query of an event not yet complete, as a device's work completes some time
  /// after it is queued and only shows when kvio looks. Until releaseStream or reset.
  void deferWork();
  /// Held copies that ran over memory no longer registered or allocated (a real device would
  /// fault); *message describes the last one.
  int64_t faults(std::string* message = nullptr) const;

  /// Objects alive in the emulated runtime: streams, events, device allocations, host
  /// allocations, host registrations.
  struct Live {
    int64_t streams, events, deviceAllocations, hostAllocations, registrations;
  };
  Live live() const;

  /// The last argument-check message of any thread (aclGetRecentErrMsg answers the calling
  /// thread's, and clears it).
  std::string recentError() const;

  /// Host registrations alive that were made in a context of `device` (the table is the
  /// process's: any device's context may end them).
  int64_t registrations(int32_t device) const;
  /// aclrtSetDevice calls for `device` since the last reset.
  int64_t setDeviceCalls(int32_t device) const;
  /// Device `device`'s default context (created without an aclrtSetDevice call if missing).
  void* defaultContext(int32_t device);
  /// A new context of `device` that is not its default one (what aclrtCreateContext makes).
  void* createContext(int32_t device);
  /// The calling thread's current context (nullptr: none), and setting it directly (nullptr:
  /// none; a test's own unbinding, which ACL itself does not offer).
  void* threadContext() const;
  void setThreadContext(void* context);
  /// The device of an emulated context (-1: not a context).
  int32_t contextDevice(void* context) const;
};

}  // namespace kvio_test

#endif  // KVIO_TESTS_ACL_HOST_EMULATION_HPP_
