// The one error idiom of the CUDA backend: every CUDA runtime call goes through
// KVIO_CUDA_TRY(call, "context format", args...) (KVIO_CUDA_TRY_RESULT(error, "cudaCall", ...)
// for an answer already in hand), which on failure returns a kvio_status and
// sets the thread's message to "<call> failed: <error name> (<error string>): <context>", e.g.
//   cudaHostRegister(...) failed: cudaErrorHostMemoryAlreadyRegistered (...): registering
//   2097152 bytes at 0x7f..., chunk 3 of 8
// The status follows the error: out of memory, no driver/device (UNAVAILABLE), else
// BACKEND_ERROR.
#ifndef KVIO_CUDA_CUDA_CHECK_HPP_
#define KVIO_CUDA_CUDA_CHECK_HPP_

#include <cuda.h>
#include <cuda_runtime.h>

#include <optional>
#include <string>

#include "../core/device_scope.hpp"
#include "../core/error.hpp"

namespace kvio {
namespace cuda {

kvio_status cudaFailure(cudaError_t error, const char* call, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

/// The status a CUDA error maps to.
kvio_status statusOf(cudaError_t error);

/// "cudaErrorX (message)".
std::string describe(cudaError_t error);
/// A driver error as "CUDA_ERROR_X (text) [CUresult n]", from the driver where it can name it.
std::string describeDriver(CUresult result);

/// The calls BasicDeviceScope makes (device_scope.hpp): the driver's context calls (resolved
/// once through the runtime; kvio links no driver library), the runtime's device calls as the
/// fallback. Context is a CUcontext; driver failures come back as the nearest cudaError_t.
struct CudaDeviceApi {
  using Error = cudaError_t;
  static constexpr cudaError_t kSuccess = cudaSuccess;
  using Context = void*;
  bool contextCalls() const;
  Error currentContext(Context* out) const;
  Error primaryContext(int device, Context* out) const;
  Error setCurrentContext(Context context) const;
  Error getDevice(int* device) const;
  Error setDevice(int device) const;
  void clearError() const { cudaGetLastError(); }
};
const CudaDeviceApi& cudaDeviceApi();

/// Whether the byte at `address` (`what` in the message, e.g. "src_indices[0]") is memory kvio's
/// kernels and copies on `device` can reach: device memory of `device` or managed memory
/// (cudaPointerGetAttributes), not of a context the caller created (checkOwningContext).
/// INVALID_ARGUMENT otherwise, saying which and `advice` (what to do when it is not device
/// memory at all). Call it under DeviceScope(device).
kvio_status checkDeviceAddress(int32_t device, const std::string& what, uint64_t address,
                               const char* advice);

/// checkDeviceAddress for every byte of [address, address + bytes), `what` naming the span in
/// messages (e.g. "device region 0 (4096 bytes at 0x...)"): its first byte (`advice` as above),
/// the first byte past each allocation that ends inside it (followed with cuPointerGetAttribute's
/// RANGE_START_ADDR / RANGE_SIZE: a span may run through allocations that lie back to back, not
/// a gap between them), and its last byte (`pastEnd`: what to do when that fails). The driver's
/// range of memory mapped with cuMemMap is the whole address reservation, so a gap inside one
/// reservation is seen only where a checked byte falls in it. Call it under DeviceScope(device).
kvio_status checkDeviceSpan(int32_t device, const std::string& what, uint64_t address,
                            uint64_t bytes, const char* advice, const char* pastEnd);

/// Whether `stream` (a handle the caller created; `name` is the executor's backend) belongs to
/// `device`'s primary context, where kvio's events, staging and kernels live: INVALID_ARGUMENT,
/// saying so, for a stream of a context the caller created. A green context's stream is taken
/// (the driver reports the primary context for it), as is every stream when the driver cannot
/// tell (before CUDA 12.5). Call it under DeviceScope(device).
kvio_status checkStreamContext(cudaStream_t stream, int32_t device, const char* name);

/// The calling thread's stream-capture mode relaxed while it lives, the thread's own put back
/// after (DeviceScope holds one). kvio's own calls (event queries and synchronisations, event
/// creation, allocations and frees, host registrations) touch no captured stream, but CUDA
/// forbids such calls ("potentially unsafe") on every thread while a stream is captured in global
/// mode (the default of cudaStreamBeginCapture and of torch.cuda.graph), and on the capturing
/// thread in thread-local mode: they would fail and invalidate the caller's capture. PyTorch's
/// allocator and its NCCL watchdog do the same. Work on a captured stream is still captured: a
/// submit to one is refused before (refuseCapture).
class RelaxedCapture {
 public:
  RelaxedCapture() {
    if (cudaThreadExchangeStreamCaptureMode(&mode_) != cudaSuccess) {
      cudaGetLastError();
      exchanged_ = false;
    }
  }
  ~RelaxedCapture() {
    if (exchanged_ && cudaThreadExchangeStreamCaptureMode(&mode_) != cudaSuccess) {
      cudaGetLastError();
    }
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;  // then the thread's own
  bool exchanged_ = true;
};

/// What every kvio call that works on a device holds while it lives: `device`'s primary context
/// made current on this thread, then the context the thread had put back, or none
/// (device_scope.hpp; -1: any device kvio uses), and the thread's capture mode relaxed
/// (RelaxedCapture), so that kvio's allocations, frees, registrations, waits and queries work
/// while the caller captures a stream and leave that capture valid.
class DeviceScope : public BasicDeviceScope<CudaDeviceApi> {
 public:
  explicit DeviceScope(int32_t device) : BasicDeviceScope(cudaDeviceApi(), device) {
    // Once the device's context is current, and only then: the exchange is a runtime call,
    // which may initialise the runtime on a thread with no context (device 0's primary context
    // made current). Put back before the thread's context is.
    if (error() == cudaSuccess) relaxed_.emplace();
  }

 private:
  std::optional<RelaxedCapture> relaxed_;
};

/// The message of a DeviceScope on `device` (-1: any) that failed with `error`, on this thread
/// just now: "cuDevicePrimaryCtxRetain failed: CUDA_ERROR_... (...) [CUresult N]: making CUDA
/// device 0's primary context current", naming the call that failed and the driver's own error
/// (each CudaDeviceApi call records its failure for it).
std::string deviceScopeMessage(cudaError_t error, int32_t device);
/// deviceScopeMessage as a failed status (the status for `error`, as cudaFailure's).
kvio_status deviceScopeFailure(cudaError_t error, int32_t device);

}  // namespace cuda
}  // namespace kvio

#define KVIO_CUDA_TRY(call, ...)                                              \
  do {                                                                        \
    const cudaError_t kvio_cuda_error_ = (call);                              \
    if (kvio_cuda_error_ != cudaSuccess) {                                    \
      return ::kvio::cuda::cudaFailure(kvio_cuda_error_, #call, __VA_ARGS__); \
    }                                                                         \
  } while (0)

/// KVIO_CUDA_TRY for an error already in hand (a call whose answer was looked at first):
/// `callName` is the CUDA call that returned it, for the message ("cudaHostRegister").
#define KVIO_CUDA_TRY_RESULT(error, callName, ...)                               \
  do {                                                                           \
    const cudaError_t kvio_cuda_error_ = (error);                                \
    if (kvio_cuda_error_ != cudaSuccess) {                                       \
      return ::kvio::cuda::cudaFailure(kvio_cuda_error_, callName, __VA_ARGS__); \
    }                                                                            \
  } while (0)

/// KVIO_CUDA_TRY for a DeviceScope on `device`: returns its failure (deviceScopeFailure).
#define KVIO_CUDA_TRY_SCOPE(scope, device)                                                    \
  do {                                                                                        \
    if ((scope).error() != cudaSuccess) {                                                     \
      return ::kvio::cuda::deviceScopeFailure((scope).error(), static_cast<int32_t>(device)); \
    }                                                                                         \
  } while (0)

#endif  // KVIO_CUDA_CUDA_CHECK_HPP_
