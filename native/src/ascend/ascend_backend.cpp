// The 'kernel_ascend' io backend: its registry entry and availability (the cause when CANN or
// an NPU is absent), kvio_ascend_device_count (the other Ascend entry points of the C ABI:
// ascend_api.cpp), and what the backend's files share (ascend_runtime.hpp): the runtime, the
// device checks and the error idiom of ACL calls. The executor is in ascend_executor.cpp, the
// Ascend memory services of the core (MemoryOps) in ascend_memory.cpp. Every ACL call that needs
// a context runs under a DeviceScope (acl_device.hpp): the device's default context current for
// the call, the calling thread's context put back; aclrtSetDevice is called once per device and
// process. Event queries, waits and destruction, and aclrtFreeHost, need no context. All ACL calls
// go through the AclApi table (acl_api.hpp): libascendcl.so, or a test's emulation.
#include <cstdio>
#include <memory>
#include <string>

#include "../core/backends.hpp"
#include "../core/entry.hpp"
#include "../core/error.hpp"
#include "../core/executor.hpp"
#include "acl_api.hpp"
#include "acl_device.hpp"
#include "ascend_copies.hpp"
#include "ascend_runtime.hpp"

namespace kvio {
namespace ascend {

kvio_status aclFailure(const AclApi& api, aclError error, const char* call,
                       const std::string& context) {
  kvio_status status = KVIO_STATUS_BACKEND_ERROR;
  if (error == ACL_ERROR_RT_MEMORY_ALLOCATION || error == ACL_ERROR_BAD_ALLOC ||
      error == ACL_ERROR_RT_DEVICE_OOM) {
    status = KVIO_STATUS_OUT_OF_MEMORY;
  }
  return fail(status, "%s failed: %s: %s", call, describeAclError(api, error).c_str(),
              context.c_str());
}

std::string format(const char* f, long long a, long long b) {
  char text[256];
  std::snprintf(text, sizeof(text), f, a, b);
  return text;
}

// The runtime, or UNAVAILABLE with the cause.
kvio_status runtime(const AclApi** out) {
  std::string cause;
  *out = aclApi(&cause);
  if (*out == nullptr) return fail(KVIO_STATUS_UNAVAILABLE, "%s", cause.c_str());
  return KVIO_STATUS_OK;
}

kvio_status deviceCount(const AclApi& api, uint32_t* count) {
  const aclError e = api.getDeviceCount(count);
  if (e != ACL_SUCCESS) {
    return fail(KVIO_STATUS_UNAVAILABLE,
                "no usable Ascend NPU: aclrtGetDeviceCount failed with %s (runtime: %s)",
                describeAclError(api, e).c_str(), api.origin);
  }
  return KVIO_STATUS_OK;
}

// The runtime and its device count; UNAVAILABLE without the runtime or without an NPU (the
// answer of kvio_backend_available and kvio_ascend_device_count alike).
kvio_status presentDevices(uint32_t* count) {
  const AclApi* api = nullptr;
  KVIO_RETURN_IF_ERROR(runtime(&api));
  KVIO_RETURN_IF_ERROR(deviceCount(*api, count));
  if (*count == 0) {
    return fail(KVIO_STATUS_UNAVAILABLE,
                "no Ascend NPU: aclrtGetDeviceCount reports 0 devices (runtime: %s)", api->origin);
  }
  return KVIO_STATUS_OK;
}

namespace {

kvio_status ascendAvailable() {
  uint32_t count = 0;
  return presentDevices(&count);
}

}  // namespace

// Checks that `device` exists; selects nothing (a DeviceScope does, for the calls that need it).
kvio_status checkDevice(const AclApi& api, int32_t device) {
  uint32_t count = 0;
  KVIO_RETURN_IF_ERROR(deviceCount(api, &count));
  if (count == 0) {  // what presentDevices answers: no NPU here, whichever device was asked for
    return fail(KVIO_STATUS_UNAVAILABLE,
                "no Ascend NPU: aclrtGetDeviceCount reports 0 devices (asked for device %d; "
                "runtime: %s)",
                device, api.origin);
  }
  if (device < 0 || static_cast<uint32_t>(device) >= count) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "Ascend device %d does not exist (%u devices: 0 to %d)", device, count,
                static_cast<int>(count) - 1);
  }
  return KVIO_STATUS_OK;
}

// The failure of a DeviceScope (the device's default context could not be made current).
// A DeviceScope's failure in words: the error, and the runtime's text for it, which the scope
// took (and so cleared) when it failed.
std::string describeScopeError(aclError error) {
  std::string text = std::string(aclErrorName(error)) + " (" + std::to_string(error) + ")";
  const std::string cleared = lastClearedAclError();
  if (!cleared.empty()) text += ": " + cleared;
  return text;
}

kvio_status scopeFailure(const DeviceScope& scope, int32_t device, const char* what) {
  return fail(KVIO_STATUS_BACKEND_ERROR,
              "making Ascend device %d's default context current (aclrtSetDevice once, "
              "aclrtGetCurrentContext, aclrtSetCurrentContext) failed: %s; %s",
              device, describeScopeError(scope.error()).c_str(), what);
}

namespace {

kvio_status createDefault(int32_t, std::unique_ptr<Executor>* out) {
  return createExecutor(0, KVIO_ASCEND_OWN_STREAM, out);
}

const BackendOps kAscendOps{KVIO_BACKEND_KERNEL_ASCEND, ascendAvailable, createDefault, nullptr,
                            createExecutor};

}  // namespace
}  // namespace ascend

const BackendOps& ascendBackendOps() {
  return ascend::kAscendOps;
}

}  // namespace kvio

extern "C" kvio_status kvio_ascend_device_count(int32_t* count_out) {
  return kvio::countDevices(count_out, [](int32_t* out) -> kvio_status {
    uint32_t count = 0;
    KVIO_RETURN_IF_ERROR(kvio::ascend::presentDevices(&count));
    *out = static_cast<int32_t>(count);
    return KVIO_STATUS_OK;
  });
}
