// BasicDeviceScope: a device's own context (CUDA: its primary context; ACL: its default
// context) made current on the calling thread for a scope, and the thread's context put back as
// it was. Vendor-neutral: written against a small table of calls (Api, below) so that its rules
// are tested on any machine with a fake runtime (device_scope_test.cpp). The instances are
// cuda::DeviceScope (cuda/cuda_check.hpp, cuda/cuda_memory.cpp) and ascend::DeviceScope
// (ascend/acl_device.hpp; KVIO_ACL_SCOPE in ascend/ascend_runtime.hpp).
//
// kvio's streams, events and allocations belong to each device's own context, and any thread
// may call kvio: an engine thread on its device, a worker that never touched the runtime, a
// thread on another device or in a context of its own. The rules:
// - The device's context is made current with the runtime's "set current context" call
//   (cuCtxSetCurrent, aclrtSetCurrentContext), never with the "set device" call: cudaSetDevice
//   also records the thread's runtime device, so that after the scope the thread's own
//   unqualified calls (cudaMalloc, a framework's "current device") would go to kvio's device,
//   and restoring with cudaSetDevice(previous) creates a context on device 0 (hundreds of MiB)
//   for every thread that had none, since cudaGetDevice answers 0 there; aclrtSetDevice adds
//   one to the device's reference count at every call and replaces the thread's context, so
//   the Ascend Api calls it once per device and process (to obtain the default context).
// - A thread whose current context is the device's context is left alone: one query (the
//   common case, an engine thread on its device).
// - Otherwise (no context, another device's, a context the caller created on this device or
//   another) the device's context is current for the scope, and on leaving the thread's context
//   is made current again, none included: the driver's calls kvio makes through entry points
//   (cuMemcpyBatchAsync) need a current context, which runtime calls would only bind lazily.
//   Where the runtime cannot unbind a context (ACL documents no aclrtSetCurrentContext(NULL)),
//   the Api's setCurrentContext(null) leaves the device's context bound: a thread that had no
//   context ends with kvio's device's (documented in docs/ascend.md).
// - device -1: any device kvio uses (for calls on memory registered for every device, such as
//   cudaHostUnregister): the context of the lowest-numbered device kvio has used, whatever the
//   thread's (a context the caller made is not one kvio registered anything in), so that the
//   runtime creates none on device 0; a thread already in that context is left alone.
// Without the context calls (Api::contextCalls false), the device is selected with setDevice
// and the previous one selected again, as before these rules.
#ifndef KVIO_CORE_DEVICE_SCOPE_HPP_
#define KVIO_CORE_DEVICE_SCOPE_HPP_

#include <cstdint>

namespace kvio {

/// Api: a class with
///   using Error = ...;  static constexpr Error kSuccess;  using Context = ... (a pointer);
///   bool contextCalls() const;                          // the context calls exist
///   Error currentContext(Context* out) const;           // cuCtxGetCurrent; none: null
///   Error primaryContext(int device, Context* out) const;  // obtained once, then cached;
///                                     // device -1: the first one cached (an error if none)
///   Error setCurrentContext(Context context) const;     // cuCtxSetCurrent (null: unbind,
///                                                       // or nothing where none can be)
///   Error getDevice(int* device) const;                 // cudaGetDevice (fallback only)
///   Error setDevice(int device) const;                  // cudaSetDevice (fallback only)
///   void clearError() const;     // cudaGetLastError, aclGetRecentErrMsg: nothing left over
template <class Api>
class BasicDeviceScope {
 public:
  using Error = typename Api::Error;
  using Context = typename Api::Context;

  BasicDeviceScope(const Api& api, int32_t device) : api_(api) {
    if (api_.contextCalls()) {
      enterContext(device);
    } else {
      enterDevice(device);
    }
  }

  ~BasicDeviceScope() {
    // A failed restore has nobody to report to, and must not surface as the next call's error.
    if (restoreContext_) {
      if (api_.setCurrentContext(saved_) != Api::kSuccess) api_.clearError();
    } else if (previousDevice_ >= 0) {
      if (api_.setDevice(previousDevice_) != Api::kSuccess) api_.clearError();
    }
  }

  BasicDeviceScope(const BasicDeviceScope&) = delete;
  BasicDeviceScope& operator=(const BasicDeviceScope&) = delete;

  /// The failure of selecting the device (kSuccess when it is current for the scope).
  Error error() const { return error_; }

 private:
  void enterContext(int32_t device) {
    Context current{};
    error_ = api_.currentContext(&current);
    if (error_ != Api::kSuccess) return failed();
    Context primary{};
    error_ = api_.primaryContext(device, &primary);
    if (error_ != Api::kSuccess) return failed();
    if (current == primary) return;
    error_ = api_.setCurrentContext(primary);
    if (error_ != Api::kSuccess) return failed();
    saved_ = current;
    restoreContext_ = true;
  }

  void enterDevice(int32_t device) {
    int previous = -1;
    error_ = api_.getDevice(&previous);
    if (error_ != Api::kSuccess) return failed();
    if (device < 0 || previous == device) return;
    error_ = api_.setDevice(device);
    if (error_ != Api::kSuccess) return failed();
    previousDevice_ = previous;
  }

  void failed() { api_.clearError(); }

  const Api& api_;
  Error error_ = Api::kSuccess;
  bool restoreContext_ = false;
  Context saved_{};
  int previousDevice_ = -1;  // without context calls: the device to select again
};

}  // namespace kvio

#endif  // KVIO_CORE_DEVICE_SCOPE_HPP_
