// Which ACL context a kvio call runs in, on any thread: ascend::DeviceScope, the vendor-neutral
// BasicDeviceScope (core/device_scope.hpp) over AclDeviceApi. The ACL rules it relies on:
// - aclrtSetDevice adds one to the device's reference count at every call (resources are freed
//   only when aclrtResetDevice brings it back to 0), implicitly creates the device's default
//   context and makes it the calling thread's current context, replacing one set with
//   aclrtSetCurrentContext (aclrtSetDevice and aclrtResetDevice, e.g.
//   https://www.hiascend.com/document/detail/en/canncommercial/800/apiref/appdevgapi/aclcppdevg_03_0039.html
//   and .../aclcppdevg_03_0040.html). So kvio calls aclrtSetDevice once per device and process,
//   only to obtain the default context (aclrtGetCurrentContext right after, inside a save and
//   restore of the caller's context), and caches it.
// - aclrtSetCurrentContext binds a context to the calling thread; switching to a context of
//   another device switches the device too (aclrtSetCurrentContext,
//   https://www.hiascend.com/document/detail/zh/canncommercial/800/apiref/appdevgapi/aclcppdevg_03_0061.html).
//   The documentation offers no way to unbind (no aclrtSetCurrentContext(NULL)), so a thread
//   that had no context keeps the device's default context after a kvio call (setCurrentContext
//   of null does nothing here). That context is the one aclrtSetDevice would have bound anyway.
// - aclrtGetCurrentContext answers the thread's context
//   (https://www.hiascend.com/document/detail/zh/canncommercial/800/apiref/appdevgapi/aclcppdevg_03_0062.html);
//   the page does not say what it answers on a thread with none. CANN's runtime sources
//   (rtCtxGetCurrent in hicann/runtime's lightweight runtime) answer ACL_ERROR_RT_CONTEXT_NULL,
//   which currentContext() turns into success with null; success with null works the same.
// - Calls that need a current context run under a DeviceScope: aclrtHostRegister and
//   aclrtHostUnregister (hicann/runtime's ApiImpl::HostUnregister returns RT_ERROR_CONTEXT_NULL
//   without one, and both act for the current context's device only: hence one host registry
//   per device, ascend_memory.cpp), and, by the same runtime design though not checked call by
//   call, stream and event creation, event record, memcpy and memset, aclrtMalloc, aclrtFree
//   and aclrtMallocHost. Event query, wait and destruction and aclrtFreeHost run without.
// - aclGetRecentErrMsg returns and clears the calling thread's last error text
//   (https://hiascend.com/document/detail/zh/CANNCommunityEdition/80RC3alpha001/apiref/appdevgapi/aclcppdevg_03_0027.html):
//   clearError() reads it, so no failure kvio could not report is blamed on a later call.
// Without aclrtGetCurrentContext/aclrtSetCurrentContext (contextCalls false), the fallback
// selects the device with aclrtSetDevice where aclrtGetDevice answers another device or none,
// and selects the previous device again afterwards (close to kvio's old behaviour).
#ifndef KVIO_ASCEND_ACL_DEVICE_HPP_
#define KVIO_ASCEND_ACL_DEVICE_HPP_

#include <cstdint>
#include <string>

#include "../core/device_scope.hpp"
#include "acl_api.hpp"

namespace kvio {
namespace ascend {

/// Reads and so clears the thread's recent ACL error text (for failures nobody can be told of,
/// and for a failed DeviceScope, whose caller reports it with lastClearedAclError()).
void clearAclError(const AclApi& api);
/// The first text clearAclError took on this thread since the last resetClearedAclError (which
/// every DeviceScope calls when it starts; empty: none).
std::string lastClearedAclError();
void resetClearedAclError();

/// The calls BasicDeviceScope makes, through one ACL table.
class AclDeviceApi {
 public:
  using Error = aclError;
  static constexpr Error kSuccess = ACL_SUCCESS;
  using Context = aclrtContext;

  explicit AclDeviceApi(const AclApi& api) : api_(api) {}
  bool contextCalls() const;
  Error currentContext(Context* out) const;
  /// The device's default context, obtained once per device and table (aclrtSetDevice, then
  /// aclrtGetCurrentContext, the caller's context put back) and cached for the process.
  Error primaryContext(int device, Context* out) const;
  Error setCurrentContext(Context context) const;
  Error getDevice(int* device) const;
  Error setDevice(int device) const;
  void clearError() const;

 private:
  const AclApi& api_;
};

/// Device `device`'s default context current on this thread for the scope, the thread's
/// context put back after it (a thread without one keeps the default context: see above).
class DeviceScope {
 public:
  DeviceScope(const AclApi& api, int32_t device) : deviceApi_(api), scope_(deviceApi_, device) {}
  aclError error() const { return scope_.error(); }

 private:
  // First: the text a failure of this scope clears is this scope's (lastClearedAclError).
  struct FreshText {
    FreshText() { resetClearedAclError(); }
  } fresh_;
  AclDeviceApi deviceApi_;
  BasicDeviceScope<AclDeviceApi> scope_;
};

/// The calling thread's capture mode relaxed while it lives (aclmdlRICaptureThreadExchangeMode),
/// the thread's own put back after: for kvio's "unsafe" calls (aclrtMemset: zeroing a new pool),
/// which touch no captured stream but which ACL forbids on every thread while a stream is
/// captured in GLOBAL mode (and on the capturing thread in THREAD_LOCAL mode): they would fail and
/// invalidate the caller's capture (the API reference of aclmdlRICaptureThreadExchangeMode). HCCL
/// does the same around its own. Nothing happens without the call; a failed exchange leaves the
/// mode as it was (its text read).
class RelaxedCapture {
 public:
  explicit RelaxedCapture(const AclApi& api);
  ~RelaxedCapture();
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  const AclApi& api_;
  aclmdlRICaptureMode mode_ = ACL_MODEL_RI_CAPTURE_MODE_RELAXED;  // then the thread's own
  bool exchanged_ = false;
};

}  // namespace ascend
}  // namespace kvio

#endif  // KVIO_ASCEND_ACL_DEVICE_HPP_
