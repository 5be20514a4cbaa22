// A CPU fake of the CUDA runtime and of the driver calls kvio resolves through it, for running
// kvio's CUDA backend (its .cpp code, with the copy and staged kernels replayed on the host) and
// the GPU test programs on a machine without a GPU. Test code only: the test build links it in
// place of cudart (native/tests/CMakeLists.txt, the `fake_cuda` ctest label).
//
// What it enforces, as the CUDA documentation states the rules (a call breaking one fails the
// way the real one does, or, where the real failure is a fault on the device, the context dies):
// - contexts: a primary context per device, made current by cudaSetDevice, retained by
//   cuDevicePrimaryCtxRetain; contexts the caller creates (cuCtxCreate, push/pop); a runtime call
//   (not cudaGetDevice) on a thread with no current context makes device 0's primary context
//   current, a driver call does not (cuMemcpyBatchAsync: CUDA_ERROR_INVALID_CONTEXT); device
//   memory belongs to the context that allocated it, a stream to the one current when it was
//   created (cuStreamGetCtx), and memory of a created context has no device address in another
//   (CU_POINTER_ATTRIBUTE_DEVICE_POINTER: CUDA_ERROR_INVALID_VALUE);
// - streams run their work in order on a thread of their own; the legacy default stream (0,
//   cudaStreamLegacy) waits for the blocking streams of its context and they for it, non-blocking
//   streams do not; cudaStreamPerThread is per thread; a kernel launch to a stream of another
//   context than the current one (another device's, or the primary one's while a created context
//   is current) fails (cudaErrorInvalidResourceHandle), a copy does not;
//   cudaEventRecord of an event and a stream of different contexts fails;
// - copies: every device-side range lies inside one allocation, a 2-D copy's whole footprint
//   too, pitches at least the width and at most cudaDevAttrMaxPitch; cuMemcpyBatchAsync refuses
//   the legacy stream, a capture and bad attribute lists; a copy to or from pageable host memory
//   returns only when the stream reached it and the copy is done; cudaFree, cudaFreeHost and
//   cudaHostUnregister wait for all work first (they synchronize);
// - a kernel whose layer tables, indices, status words or rows lie outside memory its device can
//   reach (cudaErrorIllegalAddress), or whose word accesses are not aligned to the word
//   (cudaErrorMisalignedAddress: 8-byte tables and indices, the tiled routine's rows), ends the
//   context: every later call there that works in a context (allocations, copies, launches,
//   streams, events, registrations) answers with that error (sticky), as on a GPU;
// - stream capture: work on a capturing stream is recorded as graph nodes, not run; "potentially
//   unsafe" calls (allocation, event and stream queries and synchronisation) made where the
//   thread's capture mode prohibits them fail with cudaErrorStreamCaptureUnsupported and
//   invalidate the capture, as do a query or synchronisation of the capturing stream and of an
//   event recorded into the capture; the legacy stream touched while a blocking stream of its
//   context captures fails with cudaErrorStreamCaptureImplicit; a stream-ordered allocation on a
//   capturing stream is a node (and allocates at once);
// - a call's error is the thread's last error until cudaGetLastError reads it.
// What it does not model: memory of the device is host memory (the host could read it without
// a fault), copies and kernels run at host speed and a kernel's threads run one after another
// (no race between them shows), peer access rules, portable versus device-bound registrations,
// managed memory, events' timing, cudaStreamDestroy returning before the stream's work is done, a
// copy from pageable memory returning once staged (here it returns when done).
// KVIO_FAKE_CUDA_DEVICES sets the number of devices (default 2).
#ifndef KVIO_TESTS_FAKE_CUDA_FAKE_CUDA_HPP_
#define KVIO_TESTS_FAKE_CUDA_FAKE_CUDA_HPP_

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvio_fake_cuda {

/// Answers, for one kernel launch on `device`, whether ranges lie in memory a kernel there can
/// reach: device memory of that device (of its primary context or of no context), or mapped
/// pinned host memory. Valid only inside the `check` function given to launch().
class Reachability {
 public:
  virtual ~Reachability() = default;
  /// Empty when `bytes` at `address` (`what`, for the message) are reachable, else why not.
  virtual std::string check(const char* what, uint64_t address, uint64_t bytes) const = 0;
};

/// What a kernel's check found: nothing, or the fault the device would raise (an address its
/// device cannot reach: cudaErrorIllegalAddress; an access not aligned to its size:
/// cudaErrorMisalignedAddress) and where.
struct Fault {
  cudaError_t error = cudaSuccess;
  std::string what;
};

/// Queues a kernel on `stream` as a launch does: the stream must be of the current context (else
/// cudaErrorInvalidResourceHandle, the thread's last error too). On the stream's thread, when its
/// turn comes, `check` looks at every range the kernel will touch; a fault it returns ends the
/// context (that error from then on, as on a GPU) and the kernel does nothing; else `run` does
/// the kernel's work. Recorded as one graph node, not run, while the stream is capturing.
cudaError_t launch(cudaStream_t stream, const char* kernel,
                   std::function<Fault(const Reachability&)> check, std::function<void()> run);

/// Test hooks for kvio's failure paths (tests that link the fake directly): the `nth` (0-based,
/// counted from now) call of `call` answers `error` without doing anything (the thread's last
/// error too). Calls that can be made to fail: cudaMalloc, cudaFree, cudaHostAlloc, cudaFreeHost,
/// cudaHostRegister, cudaHostUnregister, cudaStreamCreateWithFlags, cudaStreamSynchronize,
/// cudaStreamDestroy, cudaEventCreateWithFlags, cudaEventRecord, cudaMemcpyAsync,
/// cudaMemcpy2DAsync, cudaMemsetAsync, and the driver's cuCtxSetCurrent (answering the CUresult of
/// `error`'s number).
void failCall(const std::string& call, int64_t nth, cudaError_t error);
/// Disarms every failCall.
void clearFailures();
/// Allocations and host registrations alive (cudaMalloc, cudaMallocAsync, cudaHostAlloc,
/// cudaHostRegister).
int64_t liveAllocations();
/// The streams copies were queued on (each copy call: cudaMemcpyAsync, cudaMemcpy2DAsync,
/// cudaMemcpy3DBatchAsync, cuMemcpyBatchAsync) since the last call, each once, in the order of
/// their first copy, as the handles the calls were given; the record starts empty again.
std::vector<cudaStream_t> takeCopyStreams();
/// Each copy queued from now on one of `streams` waits `microseconds` on its stream's thread
/// before it copies (0 or no streams: no wait), so that a test can tell whether other work
/// waits for those copies.
void delayCopies(int64_t microseconds, std::vector<cudaStream_t> streams);

}  // namespace kvio_fake_cuda

#endif  // KVIO_TESTS_FAKE_CUDA_FAKE_CUDA_HPP_
