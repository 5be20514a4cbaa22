// The part of the Ascend ACL runtime (CANN's libascendcl.so) that the 'kernel_ascend' io backend
// uses, declared by kvio itself so that the backend builds on every machine: the few types,
// enum values and error codes, the signatures of the functions (as CANN documents them), and
// AclApi, the table of function pointers the backend calls through. acl_loader.cpp fills the
// table from libascendcl.so at run time (dlopen/dlsym); tests install a host emulation of the
// same functions instead (native/tests/acl_host_emulation.hpp, via kvio_test_ascend_runtime).
// cmake/FindCANN.cmake compiles acl_api_check.cpp against the real acl/acl.h where CANN is
// installed: it instantiates AclSignatures with CANN's own types and checks every signature,
// enum value and struct layout against this file.
#ifndef KVIO_ASCEND_ACL_API_HPP_
#define KVIO_ASCEND_ACL_API_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvio {
namespace ascend {

using aclError = int;
using aclrtStream = void*;
using aclrtEvent = void*;
using aclrtContext = void*;

enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST = 0,
  ACL_MEMCPY_HOST_TO_DEVICE = 1,
  ACL_MEMCPY_DEVICE_TO_HOST = 2,
  ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
};

enum aclrtMemMallocPolicy { ACL_MEM_MALLOC_HUGE_FIRST = 0 };

enum aclrtEventRecordedStatus {
  ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
  ACL_EVENT_RECORDED_STATUS_COMPLETE = 1,
};

enum aclrtHostRegisterType { ACL_HOST_REGISTER_MAPPED = 0 };

/// A model runtime instance: what a graph capture (aclmdlRICaptureBegin/End) records into.
using aclmdlRI = void*;

/// Whether a stream is being captured into a graph (aclmdlRICaptureGetInfo, acl_mdl.h): work
/// queued on an ACTIVE stream is recorded, not run; INVALIDATED: a capture that failed and was
/// not ended yet.
enum aclmdlRICaptureStatus {
  ACL_MODEL_RI_CAPTURE_STATUS_NONE = 0,
  ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE = 1,
  ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED = 2,
};

/// A capture's mode (aclmdlRICaptureBegin) and a thread's (aclmdlRICaptureThreadExchangeMode):
/// which threads may make "unsafe" calls (aclrtMemset, aclrtMemcpy, aclrtMemcpy2d, async copies of
/// host memory that is not page-locked) while a stream is captured. GLOBAL: no thread, unless
/// its own mode is RELAXED (or THREAD_LOCAL, on a thread that is not capturing); THREAD_LOCAL: not
/// the capturing thread, unless RELAXED; RELAXED: every thread.
enum aclmdlRICaptureMode {
  ACL_MODEL_RI_CAPTURE_MODE_GLOBAL = 0,
  ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL = 1,
  ACL_MODEL_RI_CAPTURE_MODE_RELAXED = 2,
};

/// aclrtHostRegisterV2's flags (acl_rt.h macros, CANN 8.5.0 and 9.0 references of
/// aclrtHostRegisterV2): MAPPED maps host memory for the device (aclrtHostGetDevicePointer);
/// PINNED registers pageable host memory (malloc, new, mmap) as page-locked memory.
constexpr uint32_t ACL_HOST_REG_MAPPED = 0x2u;
constexpr uint32_t ACL_HOST_REG_PINNED = 0x10000000u;

/// Where memory lies (acl_rt.h). In aclrtPointerGetAttributes' answer: HOST for host memory the
/// runtime knows as page-locked or registered (aclrtMallocHost; in CANN's open-source runtime
/// also ranges in its table of host registrations, V2 pinned or mapped and V1), DEVICE for NPU
/// memory (id: its device), UNREGISTERED for host memory ACL does not know (malloc, new, mmap).
/// Newer headers add MANAGED (3) and HOST_NUMA (4), which kvio never passes.
enum aclrtMemLocationType {
  ACL_MEM_LOCATION_TYPE_HOST = 0,
  ACL_MEM_LOCATION_TYPE_DEVICE = 1,
  ACL_MEM_LOCATION_TYPE_UNREGISTERED = 2,
};

struct aclrtMemLocation {
  uint32_t id;
  aclrtMemLocationType type;
};

/// aclrtPointerGetAttributes' answer: where the pointer lies, and its page size.
struct aclrtPtrAttributes {
  aclrtMemLocation location;
  uint32_t pageSize;
  uint32_t rsv[4];
};

/// One attribute entry of aclrtMemcpyBatchAsync: where destinations and sources lie.
struct aclrtMemcpyBatchAttr {
  aclrtMemLocation dstLoc;
  aclrtMemLocation srcLoc;
  uint8_t rsv[16];
};

// Return codes (acl_base.h and rt_error_codes.h).
constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_REPEAT_INITIALIZE = 100002;
constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;
constexpr aclError ACL_ERROR_RT_PARAM_INVALID = 107000;
constexpr aclError ACL_ERROR_RT_INVALID_DEVICEID = 107001;
/// The calling thread has no current context (and the call needs one).
constexpr aclError ACL_ERROR_RT_CONTEXT_NULL = 107002;
/// The stream does not belong to the thread's current context.
constexpr aclError ACL_ERROR_RT_STREAM_CONTEXT = 107003;
constexpr aclError ACL_ERROR_RT_INVALID_HANDLE = 107017;
/// A call a stream capture in progress forbids (rt_error_codes.h: "stream is captured, not
/// support current oper").
constexpr aclError ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT = 107030;
constexpr aclError ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000;
constexpr aclError ACL_ERROR_RT_MEMORY_ALLOCATION = 207001;
constexpr aclError ACL_ERROR_RT_NO_DEVICE = 207004;
constexpr aclError ACL_ERROR_RT_DEVICE_OOM = 207018;
// From the error code list of the CANN 9.0 reference and CANN's open-source runtime
// (rtErrMap_); older rt_error_codes.h may lack them (acl_api_check.cpp does not compare them).
constexpr aclError ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 507910;
constexpr aclError ACL_ERROR_HOST_MEMORY_NOT_REGISTERED = 507911;

/// aclrtMemcpy2dAsync's largest height (5 * 1024 * 1024 rows) and width (5000000 bytes: "width
/// at most 5000000, and at most dpitch and spitch", the API reference).
constexpr uint64_t kMax2dHeight = 5ull * 1024 * 1024;
constexpr uint64_t kMax2dWidth = 5000000;

/// The signatures of the functions kvio calls, over a set of types T (kvio's own, or CANN's in
/// the check against the real headers).
template <class T>
struct AclSignatures {
  using Error = typename T::Error;
  using Stream = typename T::Stream;
  using Event = typename T::Event;
  using Context = typename T::Context;
  using Init = Error (*)(const char* configPath);
  using SetDevice = Error (*)(int32_t deviceId);
  using GetDeviceCount = Error (*)(uint32_t* count);
  using CreateStream = Error (*)(Stream* stream);
  using DestroyStream = Error (*)(Stream stream);
  using SynchronizeStream = Error (*)(Stream stream);
  using CreateEvent = Error (*)(Event* event);
  using RecordEvent = Error (*)(Event event, Stream stream);
  using QueryEventStatus = Error (*)(Event event, typename T::EventRecordedStatus* status);
  using SynchronizeEvent = Error (*)(Event event);
  using DestroyEvent = Error (*)(Event event);
  using Malloc = Error (*)(void** devPtr, size_t size, typename T::MallocPolicy policy);
  using Free = Error (*)(void* devPtr);
  using MallocHost = Error (*)(void** hostPtr, size_t size);
  using FreeHost = Error (*)(void* hostPtr);
  using HostRegister = Error (*)(void* ptr, uint64_t size, typename T::HostRegisterType type,
                                 void** devPtr);
  using HostRegisterV2 = Error (*)(void* ptr, uint64_t size, uint32_t flag);
  using HostUnregister = Error (*)(void* ptr);
  using Memset = Error (*)(void* devPtr, size_t maxCount, int32_t value, size_t count);
  using MemcpyAsync = Error (*)(void* dst, size_t destMax, const void* src, size_t count,
                                typename T::MemcpyKind kind, Stream stream);
  using Memcpy2dAsync = Error (*)(void* dst, size_t dpitch, const void* src, size_t spitch,
                                  size_t width, size_t height, typename T::MemcpyKind kind,
                                  Stream stream);
  using MemcpyBatchAsync = Error (*)(void** dsts, size_t* destMaxs, void** srcs, size_t* sizes,
                                     size_t numBatches, typename T::BatchAttr* attrs,
                                     size_t* attrsIndexes, size_t numAttrs, size_t* failIndex,
                                     Stream stream);
  using GetRecentErrMsg = const char* (*)();
  using GetCurrentContext = Error (*)(Context* context);
  using SetCurrentContext = Error (*)(Context context);
  using GetDevice = Error (*)(int32_t* deviceId);
  using PointerGetAttributes = Error (*)(const void* ptr, typename T::PtrAttributes* attributes);
  using CaptureGetInfo = Error (*)(Stream stream, typename T::CaptureStatus* status,
                                   typename T::ModelRI* modelRI);
  using CaptureThreadExchangeMode = Error (*)(typename T::CaptureMode* mode);
};

struct KvioAclTypes {
  using Error = aclError;
  using Stream = aclrtStream;
  using Event = aclrtEvent;
  using Context = aclrtContext;
  using EventRecordedStatus = aclrtEventRecordedStatus;
  using MallocPolicy = aclrtMemMallocPolicy;
  using HostRegisterType = aclrtHostRegisterType;
  using MemcpyKind = aclrtMemcpyKind;
  using BatchAttr = aclrtMemcpyBatchAttr;
  using PtrAttributes = aclrtPtrAttributes;
  using CaptureStatus = aclmdlRICaptureStatus;
  using ModelRI = aclmdlRI;
  using CaptureMode = aclmdlRICaptureMode;
};

using Acl = AclSignatures<KvioAclTypes>;

/// Bumped whenever AclApi changes, so that a table built against another layout is refused.
constexpr uint32_t kAclApiVersion = 6;

/// Whether kvio uses aclrtMemcpyBatchAsync (KVIO_ASCEND_BATCH=1 in the environment; otherwise
/// runs of 1-D copies go one aclrtMemcpyAsync each). Opt-in: CANN's API reference marks the call
/// an experimental feature that may change and is not for commercial products (its V2 already
/// differs), kvio resolves it by name with a fixed signature, and no NPU has run kvio's use of it.
inline bool ascendBatchCopiesWanted(const char* environment) {
  return environment != nullptr && environment[0] == '1' && environment[1] == '\0';
}

/// The ACL functions the backend calls. Every entry is required except memcpyBatchAsync
/// (documented from CANN 8.3.RC1), hostRegisterV2 (without it caller memory cannot be wrapped
/// as Ascend pinned memory), hostRegister (V1: kvio does not call it; it maps host memory for
/// the device's NIC and does not page-lock it for copies; kept for the emulation and the
/// header check), getRecentErrMsg, the context calls getCurrentContext, setCurrentContext
/// and getDevice (without the first two, kvio selects devices with aclrtSetDevice at every
/// call, as before it had them: acl_device.hpp), and pointerGetAttributes (without it, kvio
/// cannot tell caller memory that is pinned already, e.g. from aclrtMallocHost, from pageable
/// memory, and pins every wrapped region with hostRegisterV2), and captureGetInfo (without it,
/// kvio cannot refuse a submit to a stream being captured into a graph: a runtime without graph
/// capture has none to refuse), and captureThreadExchangeMode (likewise: without it, no capture
/// forbids kvio's aclrtMemset).
struct AclApi {
  uint32_t version = kAclApiVersion;
  uint32_t size = sizeof(AclApi);
  /// Where the functions come from, for messages ("libascendcl.so (/usr/local/...)").
  const char* origin = "";
  Acl::Init init = nullptr;  // aclInit
  Acl::SetDevice setDevice = nullptr;
  Acl::GetDeviceCount getDeviceCount = nullptr;
  Acl::CreateStream createStream = nullptr;
  Acl::DestroyStream destroyStream = nullptr;
  Acl::SynchronizeStream synchronizeStream = nullptr;
  Acl::CreateEvent createEvent = nullptr;
  Acl::RecordEvent recordEvent = nullptr;
  Acl::QueryEventStatus queryEventStatus = nullptr;
  Acl::SynchronizeEvent synchronizeEvent = nullptr;
  Acl::DestroyEvent destroyEvent = nullptr;
  Acl::Malloc malloc = nullptr;
  Acl::Free free = nullptr;
  Acl::MallocHost mallocHost = nullptr;
  Acl::FreeHost freeHost = nullptr;
  Acl::HostRegister hostRegister = nullptr;  // optional, not called (aclrtHostRegister)
  Acl::HostUnregister hostUnregister = nullptr;
  Acl::Memset memset = nullptr;
  Acl::MemcpyAsync memcpyAsync = nullptr;
  Acl::Memcpy2dAsync memcpy2dAsync = nullptr;
  Acl::MemcpyBatchAsync memcpyBatchAsync = nullptr;          // optional
  Acl::GetRecentErrMsg getRecentErrMsg = nullptr;            // optional (aclGetRecentErrMsg)
  Acl::GetCurrentContext getCurrentContext = nullptr;        // optional (aclrtGetCurrentContext)
  Acl::SetCurrentContext setCurrentContext = nullptr;        // optional (aclrtSetCurrentContext)
  Acl::GetDevice getDevice = nullptr;                        // optional (aclrtGetDevice)
  Acl::HostRegisterV2 hostRegisterV2 = nullptr;              // optional (aclrtHostRegisterV2)
  Acl::PointerGetAttributes pointerGetAttributes = nullptr;  // optional
  Acl::CaptureGetInfo captureGetInfo = nullptr;              // optional (aclmdlRICaptureGetInfo)
  Acl::CaptureThreadExchangeMode captureThreadExchangeMode = nullptr;  // optional
};

/// The ACL runtime to use: the table installed for tests, else libascendcl.so loaded (once)
/// and initialised (aclInit). nullptr when absent; *cause then says why (copied under the
/// loader's lock: another thread's failing aclInit may change the loader's text meanwhile).
const AclApi* aclApi(std::string* cause);

/// Tests only (kvio_test_ascend_runtime): calls go to `api` from now on (nullptr: back to
/// libascendcl.so). The table is copied; no Ascend executor or pool may be alive.
void installAclForTesting(const AclApi* api);

/// "ACL_ERROR_RT_PARAM_INVALID (107000)" and the runtime's recent message, if any.
const char* aclErrorName(aclError error);

}  // namespace ascend
}  // namespace kvio

#endif  // KVIO_ASCEND_ACL_API_HPP_
