// What the files of the 'kernel_ascend' io backend share (ascend_backend.cpp: the registry entry;
// ascend_executor.cpp: the executor; ascend_memory.cpp: the Ascend memory services of the core):
// the ACL runtime, or the cause when it is absent; the check that a device exists; and the error
// idiom of ACL calls: KVIO_ACL_TRY returns a failed call as a kvio_status with the runtime's text
// (aclFailure), KVIO_ACL_SCOPE makes a device's default context current for the rest of the block
// (a DeviceScope, acl_device.hpp) or returns its failure (scopeFailure). Also createExecutor,
// which the registry entry calls. Defined in ascend_backend.cpp (createExecutor:
// ascend_executor.cpp). Internal: not installed.
#ifndef KVIO_ASCEND_ASCEND_RUNTIME_HPP_
#define KVIO_ASCEND_ASCEND_RUNTIME_HPP_

#include <cstdint>
#include <memory>
#include <string>

#include "../core/error.hpp"
#include "../core/executor.hpp"
#include "acl_api.hpp"
#include "acl_device.hpp"

namespace kvio {
namespace ascend {

/// A failed ACL call as a kvio_status (OUT_OF_MEMORY for the runtime's allocation errors, else
/// BACKEND_ERROR), the thread's message "<call> failed: <error>: <context>".
kvio_status aclFailure(const AclApi& api, aclError error, const char* call,
                       const std::string& context);

#define KVIO_ACL_TRY(api, call, context)                           \
  do {                                                             \
    const ::kvio::ascend::aclError kvio_acl_error_ = (call);       \
    if (kvio_acl_error_ != ::kvio::ascend::ACL_SUCCESS) {          \
      return aclFailure((api), kvio_acl_error_, #call, (context)); \
    }                                                              \
  } while (0)

/// `f` (a printf format of at most two long long arguments) formatted, up to 255 characters.
std::string format(const char* f, long long a = 0, long long b = 0);

/// The runtime, or UNAVAILABLE with the cause.
kvio_status runtime(const AclApi** out);

/// The runtime's device count, or UNAVAILABLE with its error.
kvio_status deviceCount(const AclApi& api, uint32_t* count);

/// The runtime and its device count; UNAVAILABLE without the runtime or without an NPU.
kvio_status presentDevices(uint32_t* count);

/// Checks that `device` exists; selects nothing.
kvio_status checkDevice(const AclApi& api, int32_t device);

/// A DeviceScope's failure in words.
std::string describeScopeError(aclError error);

/// The failure of a DeviceScope, as BACKEND_ERROR; `what` says what kvio was doing.
kvio_status scopeFailure(const DeviceScope& scope, int32_t device, const char* what);

#define KVIO_ACL_SCOPE(scope, api, device, what) \
  DeviceScope scope((api), (device));            \
  if (scope.error() != ACL_SUCCESS) return scopeFailure(scope, (device), (what))

/// A 'kernel_ascend' executor on `device`, on `stream` (an aclrtStream; KVIO_ASCEND_OWN_STREAM:
/// its own): the registry's createAscend (ascend_executor.cpp).
kvio_status createExecutor(int32_t device, uint64_t stream, std::unique_ptr<Executor>* out);

}  // namespace ascend
}  // namespace kvio

#endif  // KVIO_ASCEND_ASCEND_RUNTIME_HPP_
