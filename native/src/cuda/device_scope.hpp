// BasicDeviceScope: a CUDA device made current on the calling thread for a scope, and the
// thread's context put back as it was. Written against a small table of calls (Api, below) so
// that its rules are tested on any machine with a fake runtime (device_scope_test.cpp); the
// CUDA instance is DeviceScope (cuda_check.hpp, cuda_memory.cpp).
//
// The rules, from the runtime's behaviour since CUDA 12.0: cudaSetDevice binds the device's
// primary context to the thread, creating it if needed (hundreds of MiB of device memory), and
// cudaGetDevice answers 0 on a thread that has no context. So:
// - A thread with no current context gets the device's primary context bound for the scope,
//   even when cudaGetDevice already says that device: the driver calls kvio makes through entry
//   points (cuMemcpyBatchAsync) need a current context, which runtime calls would bind lazily.
// - A thread whose current context is on the device is left alone: no call besides the two
//   queries (the common case: an engine thread on its GPU).
// - On leaving, the context the thread had is made current again, whatever it was: another
//   device's primary context, a context the caller created, or none. Restoring with
//   cudaSetDevice(previous) instead would create a context on device 0 for every thread that had
//   none (cudaGetDevice's answer), and would bind a primary context where the caller had its own.
// Without the driver's context calls (Api::currentContext false), the previous device is
// restored with setDevice, as before these rules.
#ifndef KVIO_CUDA_DEVICE_SCOPE_HPP_
#define KVIO_CUDA_DEVICE_SCOPE_HPP_

#include <cstdint>

namespace kvio {
namespace cuda {

/// Api: a class with
///   using Error = ...;  static constexpr Error kSuccess;  using Context = ... (a pointer);
///   bool currentContext(Context* out) const;      // cuCtxGetCurrent; false: not available
///   Error setCurrentContext(Context context) const;  // cuCtxSetCurrent
///   Error getDevice(int* device) const;           // cudaGetDevice
///   Error setDevice(int device) const;            // cudaSetDevice
///   void clearError() const;                      // cudaGetLastError
template <class Api>
class BasicDeviceScope {
 public:
  using Error = typename Api::Error;
  using Context = typename Api::Context;

  BasicDeviceScope(const Api& api, int32_t device) : api_(api) {
    Context current{};
    const bool haveContexts = api_.currentContext(&current);
    int previous = -1;
    error_ = api_.getDevice(&previous);
    if (error_ != Api::kSuccess) {
      api_.clearError();
      return;
    }
    if (haveContexts) {
      if (current != Context{} && previous == device) return;  // on the device already
      error_ = api_.setDevice(device);
      if (error_ != Api::kSuccess) {
        api_.clearError();
        return;
      }
      restoreContext_ = true;
      saved_ = current;
      return;
    }
    if (previous == device) return;
    error_ = api_.setDevice(device);
    if (error_ != Api::kSuccess) {
      api_.clearError();
      return;
    }
    previousDevice_ = previous;
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
  const Api& api_;
  Error error_ = Api::kSuccess;
  bool restoreContext_ = false;
  Context saved_{};
  int previousDevice_ = -1;  // without context calls: the device to select again
};

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_DEVICE_SCOPE_HPP_
