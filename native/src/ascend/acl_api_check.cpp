// Compiled only where CANN is installed (cmake/FindCANN.cmake): checks that kvio's own ACL
// declarations (acl_api.hpp) match CANN's acl/acl.h: every function signature (AclSignatures
// instantiated with CANN's types must be the type of the real function, or of one of its
// overloads), the enum values kvio passes, the batch attribute layout and the error codes.
// Produces no code. A header without ACL_HOST_REG_PINNED skips the aclrtHostRegisterV2 checks;
// aclrtPointerGetAttributes and the capture calls are checked always (they predate
// aclrtMemcpyBatchAsync).
#include <cstddef>

// kvio's header first: CANN defines its runtime error codes and aclrtHostRegisterV2's flags as
// macros, which would rewrite kvio's constants of the same names (k::ACL_HOST_REG_PINNED would
// become k::0x10000000UL). Their values are taken here, before acl/acl.h, and kvio's names are
// not spelled after it.
#include "acl_api.hpp"

namespace {
constexpr int kFeatureNotSupport = kvio::ascend::ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
constexpr int kMemoryAllocation = kvio::ascend::ACL_ERROR_RT_MEMORY_ALLOCATION;
constexpr int kAlreadyRegistered = kvio::ascend::ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
constexpr int kNotRegistered = kvio::ascend::ACL_ERROR_HOST_MEMORY_NOT_REGISTERED;
constexpr int kContextNull = kvio::ascend::ACL_ERROR_RT_CONTEXT_NULL;
constexpr int kStreamContext = kvio::ascend::ACL_ERROR_RT_STREAM_CONTEXT;
constexpr int kCaptureModeNotSupport = kvio::ascend::ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT;
constexpr unsigned long long kHostRegPinned = kvio::ascend::ACL_HOST_REG_PINNED;
constexpr unsigned long long kHostRegMapped = kvio::ascend::ACL_HOST_REG_MAPPED;
}  // namespace

#include <acl/acl.h>

namespace {

namespace k = kvio::ascend;

struct CannTypes {
  using Error = ::aclError;
  using Stream = ::aclrtStream;
  using Event = ::aclrtEvent;
  using Context = ::aclrtContext;
  using EventRecordedStatus = ::aclrtEventRecordedStatus;
  using MallocPolicy = ::aclrtMemMallocPolicy;
  using HostRegisterType = ::aclrtHostRegisterType;
  using MemcpyKind = ::aclrtMemcpyKind;
  using BatchAttr = ::aclrtMemcpyBatchAttr;
  using PtrAttributes = ::aclrtPtrAttributes;
  using CaptureStatus = ::aclmdlRICaptureStatus;
  using ModelRI = ::aclmdlRI;
  using CaptureMode = ::aclmdlRICaptureMode;
};
using Real = k::AclSignatures<CannTypes>;

// static_cast to kvio's function type picks the one overload of that type (newer CANN headers
// add C++ overloads of some functions, e.g. aclrtHostRegister, where decltype(&f) would not
// compile) and fails to compile when none has it: a function pointer never converts to another
// function type. (Inside sizeof: no "address is never null" warning under -Wall.)
#define KVIO_SAME_SIGNATURE(alias, function) \
  static_assert(sizeof(static_cast<Real::alias>(&::function)) != 0, #function)

// An enum value or constant kvio passes has CANN's value (not for CANN's macros: see above).
#define KVIO_SAME_VALUE(name, what) \
  static_assert(static_cast<int>(k::name) == static_cast<int>(::name), what)

KVIO_SAME_SIGNATURE(Init, aclInit);
KVIO_SAME_SIGNATURE(SetDevice, aclrtSetDevice);
KVIO_SAME_SIGNATURE(GetDeviceCount, aclrtGetDeviceCount);
KVIO_SAME_SIGNATURE(CreateStream, aclrtCreateStream);
KVIO_SAME_SIGNATURE(DestroyStream, aclrtDestroyStream);
KVIO_SAME_SIGNATURE(SynchronizeStream, aclrtSynchronizeStream);
KVIO_SAME_SIGNATURE(CreateEvent, aclrtCreateEvent);
KVIO_SAME_SIGNATURE(RecordEvent, aclrtRecordEvent);
KVIO_SAME_SIGNATURE(QueryEventStatus, aclrtQueryEventStatus);
KVIO_SAME_SIGNATURE(SynchronizeEvent, aclrtSynchronizeEvent);
KVIO_SAME_SIGNATURE(DestroyEvent, aclrtDestroyEvent);
KVIO_SAME_SIGNATURE(Malloc, aclrtMalloc);
KVIO_SAME_SIGNATURE(Free, aclrtFree);
KVIO_SAME_SIGNATURE(MallocHost, aclrtMallocHost);
KVIO_SAME_SIGNATURE(FreeHost, aclrtFreeHost);
KVIO_SAME_SIGNATURE(HostRegister, aclrtHostRegister);
KVIO_SAME_SIGNATURE(HostUnregister, aclrtHostUnregister);
// aclrtHostRegisterV2 and its flags (macros) come together; headers without them (CANN before
// 8.5) skip the check, and kvio then finds no aclrtHostRegisterV2 at run time either.
#ifdef ACL_HOST_REG_PINNED
KVIO_SAME_SIGNATURE(HostRegisterV2, aclrtHostRegisterV2);
static_assert(kHostRegPinned == ACL_HOST_REG_PINNED, "host register flag");
static_assert(kHostRegMapped == ACL_HOST_REG_MAPPED, "host register flag");
#endif
KVIO_SAME_SIGNATURE(Memset, aclrtMemset);
KVIO_SAME_SIGNATURE(MemcpyAsync, aclrtMemcpyAsync);
KVIO_SAME_SIGNATURE(Memcpy2dAsync, aclrtMemcpy2dAsync);
KVIO_SAME_SIGNATURE(MemcpyBatchAsync, aclrtMemcpyBatchAsync);
KVIO_SAME_SIGNATURE(GetRecentErrMsg, aclGetRecentErrMsg);
KVIO_SAME_SIGNATURE(GetCurrentContext, aclrtGetCurrentContext);
KVIO_SAME_SIGNATURE(SetCurrentContext, aclrtSetCurrentContext);
KVIO_SAME_SIGNATURE(GetDevice, aclrtGetDevice);
// In every header that has aclrtMemcpyBatchAsync (8.3.RC1; the API reference documents it from
// 8.2.RC1). Newer headers add a C++ template overload, which the cast does not pick.
KVIO_SAME_SIGNATURE(PointerGetAttributes, aclrtPointerGetAttributes);
// acl_mdl.h's graph capture calls (an experimental feature in the API reference); a header
// without them fails here: -DKVIO_CHECK_ACL_API=OFF (kvio then resolves them at run time only).
KVIO_SAME_SIGNATURE(CaptureGetInfo, aclmdlRICaptureGetInfo);
KVIO_SAME_SIGNATURE(CaptureThreadExchangeMode, aclmdlRICaptureThreadExchangeMode);

KVIO_SAME_VALUE(ACL_MEMCPY_HOST_TO_HOST, "memcpy kind");
KVIO_SAME_VALUE(ACL_MEMCPY_HOST_TO_DEVICE, "memcpy kind");
KVIO_SAME_VALUE(ACL_MEMCPY_DEVICE_TO_HOST, "memcpy kind");
KVIO_SAME_VALUE(ACL_MEMCPY_DEVICE_TO_DEVICE, "memcpy kind");
static_assert(sizeof(k::aclrtMemcpyKind) == sizeof(::aclrtMemcpyKind), "memcpy kind size");
KVIO_SAME_VALUE(ACL_MEM_MALLOC_HUGE_FIRST, "malloc policy");
KVIO_SAME_VALUE(ACL_EVENT_RECORDED_STATUS_COMPLETE, "event status");
KVIO_SAME_VALUE(ACL_HOST_REGISTER_MAPPED, "register type");
KVIO_SAME_VALUE(ACL_MODEL_RI_CAPTURE_STATUS_NONE, "capture status");
KVIO_SAME_VALUE(ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE, "capture status");
KVIO_SAME_VALUE(ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED, "capture status");
static_assert(sizeof(k::aclmdlRICaptureStatus) == sizeof(::aclmdlRICaptureStatus),
              "capture status size");
KVIO_SAME_VALUE(ACL_MODEL_RI_CAPTURE_MODE_GLOBAL, "capture mode");
KVIO_SAME_VALUE(ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL, "capture mode");
KVIO_SAME_VALUE(ACL_MODEL_RI_CAPTURE_MODE_RELAXED, "capture mode");
static_assert(sizeof(k::aclmdlRICaptureMode) == sizeof(::aclmdlRICaptureMode), "capture mode size");
KVIO_SAME_VALUE(ACL_MEM_LOCATION_TYPE_HOST, "location");
KVIO_SAME_VALUE(ACL_MEM_LOCATION_TYPE_DEVICE, "location");
KVIO_SAME_VALUE(ACL_MEM_LOCATION_TYPE_UNREGISTERED, "location");
static_assert(sizeof(k::aclrtPtrAttributes) == sizeof(::aclrtPtrAttributes), "pointer attributes");
static_assert(offsetof(k::aclrtPtrAttributes, pageSize) == offsetof(::aclrtPtrAttributes, pageSize),
              "pointer attributes layout");
static_assert(sizeof(k::aclrtMemLocation) == sizeof(::aclrtMemLocation), "location size");
static_assert(sizeof(k::aclrtMemcpyBatchAttr) == sizeof(::aclrtMemcpyBatchAttr), "batch attr");
static_assert(offsetof(k::aclrtMemcpyBatchAttr, srcLoc) == offsetof(::aclrtMemcpyBatchAttr, srcLoc),
              "batch attr layout");
KVIO_SAME_VALUE(ACL_SUCCESS, "error code");
KVIO_SAME_VALUE(ACL_ERROR_INVALID_PARAM, "error code");
KVIO_SAME_VALUE(ACL_ERROR_REPEAT_INITIALIZE, "error code");
static_assert(kFeatureNotSupport == ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "error code");
static_assert(kMemoryAllocation == ACL_ERROR_RT_MEMORY_ALLOCATION, "error code");
// 507910/507911 are in the CANN 9.0 error code list; an older rt_error_codes.h may not have them,
// so they are compared only where they are macros of the headers (a header that declares them
// as constants instead skips the comparison rather than failing the build).
#ifdef ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED
static_assert(kAlreadyRegistered == ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "error code");
#endif
#ifdef ACL_ERROR_HOST_MEMORY_NOT_REGISTERED
static_assert(kNotRegistered == ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, "error code");
#endif
static_assert(kContextNull == ACL_ERROR_RT_CONTEXT_NULL, "error code");
static_assert(kStreamContext == ACL_ERROR_RT_STREAM_CONTEXT, "error code");
#ifdef ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT  // headers before stream capture lack it
static_assert(kCaptureModeNotSupport == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, "error code");
#endif

}  // namespace
