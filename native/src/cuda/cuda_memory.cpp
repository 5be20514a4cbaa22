// CUDA memory services of the core (MemoryOps, pool.hpp): pinned host allocation
// (cudaHostAlloc), registration of caller host memory (through kvio's registry of host
// registrations, host_registry.hpp: cudaHostRegister of whole pages in chunks of at most 1 GiB,
// shared by pools sharing a page, ended when no pool uses it; the caller's own registration is
// used only where cuPointerGetAttribute proves it covers the region), device allocation
// (cudaMalloc), checks of wrapped device memory (cudaPointerGetAttributes), and the device
// addresses of host memory (cudaHostGetDevicePointer; never assumed equal to the host address).
// Also the error idiom of cuda_check.hpp.
#include <cuda.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "../core/backends.hpp"
#include "../core/host_registry.hpp"
#include "../core/pool.hpp"
#include "cuda_check.hpp"

namespace kvio {
namespace cuda {

kvio_status statusOf(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation: return KVIO_STATUS_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorInvalidDevice: return KVIO_STATUS_UNAVAILABLE;
    default: return KVIO_STATUS_BACKEND_ERROR;
  }
}

std::string describe(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

kvio_status cudaFailure(cudaError_t error, const char* call, const char* format, ...) {
  char context[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(context, sizeof(context), format, args);
  va_end(args);
  cudaGetLastError();  // clear a non-sticky error so it does not resurface elsewhere
  return fail(statusOf(error), "%s failed: %s: %s", call, describe(error).c_str(), context);
}

namespace {

// The driver's context calls DeviceScope uses, resolved once through the runtime; `found` false
// when any is missing (DeviceScope then selects devices with cudaSetDevice, the fallback).
struct ContextCalls {
  bool found = false;
  CUresult (*getCurrent)(CUcontext* context) = nullptr;
  CUresult (*setCurrent)(CUcontext context) = nullptr;
  CUresult (*deviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*retainPrimary)(CUcontext* context, CUdevice device) = nullptr;
  // For messages only (null where the driver lacks them).
  CUresult (*errorName)(CUresult error, const char** name) = nullptr;
  CUresult (*errorString)(CUresult error, const char** text) = nullptr;
};

// A driver call reached through the runtime (kvio links no driver library) at the ABI of CUDA
// `version` (12000: 12.0); false when the driver has none.
template <class F>
bool resolve(const char* symbol, F* out, int version = 12000) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(symbol, &entry, version, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess || entry == nullptr) {
    cudaGetLastError();
    return false;
  }
  *out = reinterpret_cast<F>(entry);
  return true;
}

const ContextCalls& driverContextCalls() {
  static const ContextCalls calls = [] {
    ContextCalls c;
    c.found = resolve("cuCtxGetCurrent", &c.getCurrent) &&
              resolve("cuCtxSetCurrent", &c.setCurrent) && resolve("cuDeviceGet", &c.deviceGet) &&
              resolve("cuDevicePrimaryCtxRetain", &c.retainPrimary);
    if (!resolve("cuGetErrorName", &c.errorName)) c.errorName = nullptr;
    if (!resolve("cuGetErrorString", &c.errorString)) c.errorString = nullptr;
    return c;
  }();
  return calls;
}

// The runtime's error for a driver error of the context calls (for the status it maps to).
cudaError_t runtimeError(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_DEVICE_UNAVAILABLE: return cudaErrorDevicesUnavailable;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED: return cudaErrorCudartUnloading;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return cudaErrorContextIsDestroyed;
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return cudaErrorSystemDriverMismatch;
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return cudaErrorCompatNotSupportedOnDevice;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
  }
}

// What failed in this thread's latest failed DeviceScope, for its message (deviceScopeFailure):
// every failure of a CudaDeviceApi call records it before answering.
struct ScopeFailure {
  const char* call = nullptr;     // the CUDA call that failed
  const char* refusal = nullptr;  // else why kvio made none
  bool driver = false;            // `result` holds the driver's own error
  CUresult result = CUDA_SUCCESS;
};
thread_local ScopeFailure scopeFailure;

// A failed driver call of the scope: recorded, answered as the runtime's error.
cudaError_t driverFailure(const char* call, CUresult result) {
  scopeFailure = ScopeFailure{call, nullptr, true, result};
  return runtimeError(result);
}

// Primary contexts kvio retained, by device ordinal: retained once, kept for the process (as
// cudaSetDevice keeps them), read without a lock once set.
constexpr int kCachedDevices = 256;
std::atomic<CUcontext> primaries[kCachedDevices];
std::mutex retaining;

}  // namespace

bool CudaDeviceApi::contextCalls() const {
  return driverContextCalls().found;
}

cudaError_t CudaDeviceApi::currentContext(Context* out) const {
  CUcontext context = nullptr;
  const CUresult result = driverContextCalls().getCurrent(&context);
  *out = context;
  return result == CUDA_SUCCESS ? cudaSuccess : driverFailure("cuCtxGetCurrent", result);
}

cudaError_t CudaDeviceApi::primaryContext(int device, Context* out) const {
  if (device < 0) {  // any: the first kvio retained
    for (const std::atomic<CUcontext>& p : primaries) {
      CUcontext context = p.load(std::memory_order_acquire);
      if (context != nullptr) {
        *out = context;
        return cudaSuccess;
      }
    }
    scopeFailure = ScopeFailure{nullptr, "no CUDA device has been used by kvio yet"};
    return cudaErrorInvalidDevice;
  }
  if (device >= kCachedDevices) {
    scopeFailure = ScopeFailure{nullptr, "kvio works with CUDA devices 0 to 255 only"};
    return cudaErrorInvalidDevice;
  }
  std::atomic<CUcontext>& slot = primaries[device];
  CUcontext context = slot.load(std::memory_order_acquire);
  if (context == nullptr) {
    std::lock_guard<std::mutex> lock(retaining);
    context = slot.load(std::memory_order_acquire);
    if (context == nullptr) {
      const ContextCalls& calls = driverContextCalls();
      CUdevice handle = 0;
      CUresult result = calls.deviceGet(&handle, device);
      if (result != CUDA_SUCCESS) return driverFailure("cuDeviceGet", result);
      result = calls.retainPrimary(&context, handle);
      if (result != CUDA_SUCCESS) return driverFailure("cuDevicePrimaryCtxRetain", result);
      slot.store(context, std::memory_order_release);
    }
  }
  *out = context;
  return cudaSuccess;
}

cudaError_t CudaDeviceApi::setCurrentContext(Context context) const {
  const CUresult result = driverContextCalls().setCurrent(static_cast<CUcontext>(context));
  return result == CUDA_SUCCESS ? cudaSuccess : driverFailure("cuCtxSetCurrent", result);
}

cudaError_t CudaDeviceApi::getDevice(int* device) const {
  const cudaError_t error = cudaGetDevice(device);
  if (error != cudaSuccess) scopeFailure = ScopeFailure{"cudaGetDevice"};  // the fallback
  return error;
}

cudaError_t CudaDeviceApi::setDevice(int device) const {
  const cudaError_t error = cudaSetDevice(device);
  if (error != cudaSuccess) scopeFailure = ScopeFailure{"cudaSetDevice"};
  return error;
}

std::string deviceScopeMessage(cudaError_t error, int32_t device) {
  const ScopeFailure& f = scopeFailure;
  const std::string cause = f.driver ? describeDriver(f.result) : describe(error);
  const std::string what =
      device >= 0 ? "making CUDA device " + std::to_string(device) + "'s primary context current"
                  : std::string("making a CUDA device's primary context current");
  if (f.call != nullptr) return std::string(f.call) + " failed: " + cause + ": " + what;
  return what + " failed: " + cause + (f.refusal != nullptr ? std::string(": ") + f.refusal : "");
}

kvio_status deviceScopeFailure(cudaError_t error, int32_t device) {
  cudaGetLastError();
  return fail(statusOf(error), "%s", deviceScopeMessage(error, device).c_str());
}

const CudaDeviceApi& cudaDeviceApi() {
  static const CudaDeviceApi api;
  return api;
}

namespace {

// Freed on whichever thread lets go of the pool last: under the device's scope, so that the
// runtime creates no context there.
struct PinnedHost {
  void* pointer = nullptr;
  int32_t device = 0;
  ~PinnedHost() {
    if (pointer != nullptr) {
      DeviceScope scope(device);
      if (cudaFreeHost(pointer) != cudaSuccess) cudaGetLastError();
    }
  }
};

struct DeviceMemory {
  void* pointer = nullptr;
  int32_t device = 0;
  ~DeviceMemory() {
    if (pointer != nullptr) {
      DeviceScope scope(device);
      if (cudaFree(pointer) != cudaSuccess) cudaGetLastError();
    }
  }
};

kvio_status checkDevice(int32_t device) {
  int count = 0;
  KVIO_CUDA_TRY(cudaGetDeviceCount(&count), "counting CUDA devices for device %d", device);
  if (device >= count) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "CUDA device %d does not exist (%d devices: 0 to %d)",
                device, count, count - 1);
  }
  return KVIO_STATUS_OK;
}

kvio_status allocate(int32_t kind, int32_t device, uint64_t bytes, uint64_t* address,
                     std::shared_ptr<void>* owner) {
  KVIO_RETURN_IF_ERROR(checkDevice(device));
  DeviceScope scope(device);
  KVIO_CUDA_TRY_SCOPE(scope, device);
  if (kind == KVIO_MEMORY_HOST_PINNED) {
    auto memory = std::make_shared<PinnedHost>();
    memory->device = device;
    KVIO_CUDA_TRY(
        cudaHostAlloc(&memory->pointer, bytes, cudaHostAllocPortable | cudaHostAllocMapped),
        "allocating %llu bytes of pinned host memory for a pool",
        static_cast<unsigned long long>(bytes));
    std::memset(memory->pointer, 0, bytes);
    *address = reinterpret_cast<uint64_t>(memory->pointer);
    *owner = std::move(memory);
    return KVIO_STATUS_OK;
  }
  auto memory = std::make_shared<DeviceMemory>();
  memory->device = device;
  KVIO_CUDA_TRY(cudaMalloc(&memory->pointer, bytes),
                "allocating %llu bytes on CUDA device %d for a pool",
                static_cast<unsigned long long>(bytes), device);
  // Zeroed on a private stream and waited for: an executor's stream may be non-blocking (kvio's
  // own, or a caller's), so a memset on the legacy stream could still run after the pool's first
  // transfer.
  cudaStream_t stream = nullptr;
  KVIO_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                "creating a stream to zero a new pool on CUDA device %d", device);
  const char* call = "cudaMemsetAsync";  // the first of the three that failed
  cudaError_t error = cudaMemsetAsync(memory->pointer, 0, bytes, stream);
  const cudaError_t waited = cudaStreamSynchronize(stream);
  const cudaError_t destroyed = cudaStreamDestroy(stream);
  if (error == cudaSuccess) {
    error = waited;
    call = "cudaStreamSynchronize";
  }
  const char* what = "zeroing";
  if (error == cudaSuccess) {
    error = destroyed;
    call = "cudaStreamDestroy";
    what = "destroying the stream that zeroed";  // the zeroing itself succeeded
  }
  KVIO_CUDA_TRY_RESULT(error, call, "%s %llu bytes of a new pool on CUDA device %d", what,
                       static_cast<unsigned long long>(bytes), device);
  *address = reinterpret_cast<uint64_t>(memory->pointer);
  *owner = std::move(memory);
  return KVIO_STATUS_OK;
}

// ---- the registry's CUDA runtime ----

kvio_status registerRange(void*, uint64_t address, uint64_t bytes, bool* alreadyRegistered) {
  const cudaError_t error = cudaHostRegister(reinterpret_cast<void*>(address), bytes,
                                             cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (error == cudaErrorHostMemoryAlreadyRegistered) {
    cudaGetLastError();
    *alreadyRegistered = true;
    return KVIO_STATUS_OK;
  }
  KVIO_CUDA_TRY_RESULT(error, "cudaHostRegister", "registering %llu bytes of host memory at 0x%llx",
                       static_cast<unsigned long long>(bytes),
                       static_cast<unsigned long long>(address));
  return KVIO_STATUS_OK;
}

// On whichever thread lets go of the last pool using the registration: a portable registration
// belongs to no device, so a primary context kvio uses will do (DeviceScope -1; never a context
// the caller made, nor one the runtime would create on device 0). False when CUDA refused
// (HostRuntime::unregisterRange: the registration stays counted). "Not registered" is an end:
// the registration is gone already (the caller unregistered it, or the device was reset).
bool unregisterRange(void*, uint64_t address) {
  DeviceScope scope(-1);
  if (scope.error() != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const cudaError_t error = cudaHostUnregister(reinterpret_cast<void*>(address));
  if (error == cudaSuccess) return true;
  cudaGetLastError();
  return error == cudaErrorHostMemoryNotRegistered;
}

using PointerGetAttribute = CUresult (*)(void* data, CUpointer_attribute attribute,
                                         CUdeviceptr pointer);

// cuPointerGetAttribute, resolved once; nullptr when the driver has none.
PointerGetAttribute pointerGetAttribute() {
  static const PointerGetAttribute function = [] {
    PointerGetAttribute f = nullptr;
    return resolve("cuPointerGetAttribute", &f) ? f : nullptr;
  }();
  return function;
}

// The registration holding host address `address`: page-locked host memory whose allocation
// range (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR / RANGE_SIZE) contains it, and whose first and
// last bytes both have a device address (so both are registered). False when any of that
// cannot be shown.
bool covering(void*, uint64_t address, uint64_t* start, uint64_t* bytes) {
  const PointerGetAttribute get = pointerGetAttribute();
  if (get == nullptr) return false;
  unsigned int type = 0;
  CUdeviceptr rangeStart = 0;
  size_t rangeBytes = 0;
  const CUdeviceptr pointer = static_cast<CUdeviceptr>(address);
  if (get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer) != CUDA_SUCCESS ||
      type != CU_MEMORYTYPE_HOST ||
      get(&rangeStart, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer) != CUDA_SUCCESS ||
      get(&rangeBytes, CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer) != CUDA_SUCCESS ||
      rangeBytes == 0 || rangeStart > address || rangeStart + rangeBytes <= address) {
    cudaGetLastError();
    return false;
  }
  void* first = nullptr;
  void* last = nullptr;
  if (cudaHostGetDevicePointer(&first, reinterpret_cast<void*>(rangeStart), 0) != cudaSuccess ||
      cudaHostGetDevicePointer(&last, reinterpret_cast<void*>(rangeStart + rangeBytes - 1), 0) !=
          cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  *start = static_cast<uint64_t>(rangeStart);
  *bytes = static_cast<uint64_t>(rangeBytes);
  return true;
}

// cudaHostRegister granularity: chunks of at most 1 GiB aligned to the host page, so one
// failing chunk names a small range and very large pools register in bounded calls.
constexpr uint64_t kRegisterChunk = 1ull << 30;

HostRegistry& registry() {
  static HostRegistry* r = new HostRegistry(
      HostRuntime{"CUDA", "cudaHostRegister", kRegisterChunk, nullptr, registerRange,
                  unregisterRange, covering});  // never destroyed: pools may outlive statics
  return *r;
}

// Registers the regions through the registry, then checks that the device addresses of the
// registrations a region spans follow each other like the host addresses, because kernels
// address a whole region from one device base.
kvio_status registerHost(const MemoryRegion* regions, size_t count, std::shared_ptr<void>* owner,
                         std::vector<MemoryRegion>* copyRegions) {
  std::shared_ptr<void> lease;
  std::vector<std::vector<uint64_t>> pieces;
  KVIO_RETURN_IF_ERROR(registry().acquire(regions, count, &lease, &pieces));
  for (size_t r = 0; r < count; ++r) {
    const uint64_t start = regions[r].address;
    std::vector<uint64_t> points = pieces[r];
    points.push_back(start + regions[r].bytes - 1);  // and the last byte
    void* firstDevice = nullptr;
    for (size_t k = 0; k < points.size(); ++k) {
      void* device = nullptr;
      KVIO_CUDA_TRY(cudaHostGetDevicePointer(&device, reinterpret_cast<void*>(points[k]), 0),
                    "getting the device address of host region %zu at 0x%llx (byte %llu of it)", r,
                    static_cast<unsigned long long>(points[k]),
                    static_cast<unsigned long long>(points[k] - start));
      if (k == 0) {
        firstDevice = device;
      } else if (reinterpret_cast<uint64_t>(device) - reinterpret_cast<uint64_t>(firstDevice) !=
                 points[k] - start) {
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "host region %zu (%llu bytes at 0x%llx) lies in %zu registrations (chunks "
                    "end at 1 GiB boundaries, a partial first or last page is registered on its "
                    "own, pages other pools registered are shared) that are not contiguous in "
                    "the device's address space; register it yourself in one cudaHostRegister "
                    "call (after closing kvio's pools over memory that shares its pages) and "
                    "wrap it again",
                    r, static_cast<unsigned long long>(regions[r].bytes),
                    static_cast<unsigned long long>(start), pieces[r].size());
      }
    }
  }
  *copyRegions = HostRegistry::piecesOf(regions, count, pieces);
  *owner = std::move(lease);
  return KVIO_STATUS_OK;
}

// The allocation holding device address `address` (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR and
// RANGE_SIZE): its end in *end. False when the driver cannot say (no cuPointerGetAttribute, or
// memory it gives no range for).
bool allocationEnd(uint64_t address, uint64_t* end) {
  const PointerGetAttribute get = pointerGetAttribute();
  if (get == nullptr) return false;
  CUdeviceptr start = 0;
  size_t bytes = 0;
  const CUdeviceptr pointer = static_cast<CUdeviceptr>(address);
  if (get(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, pointer) != CUDA_SUCCESS ||
      get(&bytes, CU_POINTER_ATTRIBUTE_RANGE_SIZE, pointer) != CUDA_SUCCESS || bytes == 0 ||
      start > address || address - start >= bytes) {
    cudaGetLastError();
    return false;
  }
  *end = static_cast<uint64_t>(start) + bytes;
  return true;
}

kvio_status checkDeviceRegions(int32_t device, const MemoryRegion* regions, size_t count) {
  // Every byte of each region must be memory of the device: a region that runs past the end of
  // its allocation would otherwise be accepted and fault in a kernel or copy later, which ends
  // the process's CUDA context. (An overrun into a neighbouring allocation of the same device
  // stays the caller's to avoid: nothing tells them apart.)
  for (size_t r = 0; r < count; ++r) {
    char region[96];
    std::snprintf(region, sizeof(region), "device region %zu (%llu bytes at 0x%llx)", r,
                  static_cast<unsigned long long>(regions[r].bytes),
                  static_cast<unsigned long long>(regions[r].address));
    KVIO_RETURN_IF_ERROR(
        checkDeviceSpan(device, region, regions[r].address, regions[r].bytes,
                        "wrap host memory with KVIO_MEMORY_HOST or KVIO_MEMORY_HOST_PINNED",
                        "the size given runs past the end of the allocation"));
  }
  return KVIO_STATUS_OK;
}

kvio_status adopt(int32_t kind, int32_t device, const MemoryRegion* regions, size_t count,
                  std::shared_ptr<void>* owner, std::vector<MemoryRegion>* copyRegions) {
  KVIO_RETURN_IF_ERROR(checkDevice(device));
  DeviceScope scope(device);
  KVIO_CUDA_TRY_SCOPE(scope, device);
  if (kind == KVIO_MEMORY_HOST_PINNED) return registerHost(regions, count, owner, copyRegions);
  KVIO_RETURN_IF_ERROR(checkDeviceRegions(device, regions, count));
  *owner = std::make_shared<int>(0);  // the caller owns the memory
  return KVIO_STATUS_OK;
}

kvio_status deviceAddress(int32_t kind, int32_t device, uint64_t address, uint64_t* out) {
  if (kind == KVIO_MEMORY_CUDA_DEVICE) {
    *out = address;
    return KVIO_STATUS_OK;
  }
  DeviceScope scope(device);
  KVIO_CUDA_TRY_SCOPE(scope, device);
  void* devicePointer = nullptr;
  KVIO_CUDA_TRY(cudaHostGetDevicePointer(&devicePointer, reinterpret_cast<void*>(address), 0),
                "getting the device address of pinned host memory at 0x%llx (device %d)",
                static_cast<unsigned long long>(address), device);
  *out = reinterpret_cast<uint64_t>(devicePointer);
  return KVIO_STATUS_OK;
}

// kvio_pool_copy for device memory: on a private non-blocking stream of the pool's device
// (never the legacy stream, which would serialize with the engine's work), waited for.
kvio_status copy(int32_t, int32_t device, uint64_t deviceAddress, uint64_t hostAddress,
                 uint64_t bytes, bool toHost) {
  DeviceScope scope(device);
  KVIO_CUDA_TRY_SCOPE(scope, device);
  cudaStream_t stream = nullptr;
  KVIO_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                "creating a stream to copy a pool's memory on CUDA device %d", device);
  void* devicePointer = reinterpret_cast<void*>(deviceAddress);
  void* hostPointer = reinterpret_cast<void*>(hostAddress);
  cudaError_t error =
      toHost ? cudaMemcpyAsync(hostPointer, devicePointer, bytes, cudaMemcpyDeviceToHost, stream)
             : cudaMemcpyAsync(devicePointer, hostPointer, bytes, cudaMemcpyHostToDevice, stream);
  const char* call = "cudaMemcpyAsync";
  // Synchronized even after a failed call: nothing may still run when the stream goes.
  const cudaError_t waited = cudaStreamSynchronize(stream);
  const cudaError_t destroyed = cudaStreamDestroy(stream);
  if (error == cudaSuccess && waited != cudaSuccess) {
    error = waited;
    call = "cudaStreamSynchronize";
  }
  const char* what = "copying";
  if (error == cudaSuccess && destroyed != cudaSuccess) {
    error = destroyed;
    call = "cudaStreamDestroy";
    what = "destroying the stream after copying";  // the copy itself succeeded
  }
  if (error != cudaSuccess) {
    return cudaFailure(error, call, "%s %llu bytes %s CUDA device %d (device 0x%llx, host 0x%llx)",
                       what, static_cast<unsigned long long>(bytes), toHost ? "from" : "to", device,
                       static_cast<unsigned long long>(deviceAddress),
                       static_cast<unsigned long long>(hostAddress));
  }
  return KVIO_STATUS_OK;
}

const MemoryOps kCudaMemory{allocate, adopt, deviceAddress, copy};

}  // namespace

namespace {

// Device memory a context of the caller's own holds lies in that context's address space:
// kvio's kernels and copies run in the device's primary context, where reaching it is an
// illegal address, which ends the process's CUDA context. Refused only when both say so: its
// owner (CU_POINTER_ATTRIBUTE_CONTEXT) is a context other than the current (primary) one, and
// the current context has no device address for it (CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
// "no device pointer through which kernels running in the current context may access it").
// So memory of no context (stream-ordered allocations, cuMemCreate + cuMemMap: an error or none
// for the owner), managed memory and memory of a context that shares the primary one's address
// space (a green context) are accepted, as is all memory when the driver's calls cannot be
// reached.
kvio_status checkOwningContext(int32_t device, const std::string& what, uint64_t address) {
  const PointerGetAttribute get = pointerGetAttribute();
  const ContextCalls& calls = driverContextCalls();
  if (get == nullptr || !calls.found) return KVIO_STATUS_OK;
  CUcontext owner = nullptr;
  CUcontext current = nullptr;
  if (get(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, static_cast<CUdeviceptr>(address)) !=
          CUDA_SUCCESS ||
      owner == nullptr || calls.getCurrent(&current) != CUDA_SUCCESS || current == nullptr ||
      owner == current) {
    return KVIO_STATUS_OK;  // driver calls leave no runtime error behind
  }
  // Only the documented answer for "no device pointer in the current context" refuses; any other
  // outcome of the query (success, or an error that says something else) keeps the memory.
  CUdeviceptr reachable = 0;
  if (get(&reachable, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, static_cast<CUdeviceptr>(address)) !=
      CUDA_ERROR_INVALID_VALUE) {
    return KVIO_STATUS_OK;
  }
  return fail(KVIO_STATUS_INVALID_ARGUMENT,
              "%s, at 0x%llx, was allocated in a CUDA context other than device %d's primary "
              "context (one the caller created, e.g. with cuCtxCreate); kvio's kernels and copies "
              "run in the primary context (the CUDA runtime's), which cannot reach that memory: "
              "allocate it with the runtime (cudaMalloc, cudaMallocAsync) or in the primary "
              "context (cuDevicePrimaryCtxRetain)",
              what.c_str(), static_cast<unsigned long long>(address), device);
}

}  // namespace

kvio_status checkStreamContext(cudaStream_t stream, int32_t device, const char* name) {
  // cuStreamGetCtx at the CUDA 12.5 ABI (cuStreamGetCtx_v2): a green context's stream answers
  // with the device's primary context (and the green context apart), as the earlier ABI does not.
  using StreamGetCtx = CUresult (*)(CUstream stream, CUcontext * context, CUgreenCtx * green);
  static const StreamGetCtx getCtx = [] {
    StreamGetCtx f = nullptr;
    return resolve("cuStreamGetCtx", &f, 12050) ? f : nullptr;
  }();
  if (getCtx == nullptr) return KVIO_STATUS_OK;
  CUcontext owner = nullptr;
  CUgreenCtx green = nullptr;
  void* primary = nullptr;
  if (getCtx(reinterpret_cast<CUstream>(stream), &owner, &green) != CUDA_SUCCESS ||
      owner == nullptr || cudaDeviceApi().primaryContext(device, &primary) != cudaSuccess ||
      owner == primary) {
    return KVIO_STATUS_OK;  // an answer that says nothing keeps the stream, as before the check
  }
  return fail(KVIO_STATUS_INVALID_ARGUMENT,
              "the stream %p given to a '%s' executor belongs to a CUDA context other than "
              "device %d's primary context (one the caller created, e.g. with cuCtxCreate, or "
              "another device's); "
              "kvio's events, staging memory and kernels live in the primary context (the CUDA "
              "runtime's), and a kernel launched to another context's stream fails: pass a "
              "stream created in the primary context (cudaStreamCreate with no other context "
              "current), or KVIO_CUDA_OWN_STREAM",
              static_cast<void*>(stream), name, device);
}

std::string describeDriver(CUresult result) {
  const ContextCalls& calls = driverContextCalls();
  const char* name = nullptr;
  const char* text = nullptr;
  if (calls.errorName == nullptr || calls.errorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (calls.errorString == nullptr || calls.errorString(result, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  std::string out = name != nullptr ? name : "CUresult " + std::to_string(result);
  if (text != nullptr) out += std::string(" (") + text + ")";
  if (name != nullptr) out += " [CUresult " + std::to_string(result) + "]";
  return out;
}

kvio_status checkDeviceSpan(int32_t device, const std::string& what, uint64_t address,
                            uint64_t bytes, const char* advice, const char* pastEnd) {
  const auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  KVIO_RETURN_IF_ERROR(checkDeviceAddress(device, "the first byte of " + what, address, advice));
  if (bytes <= 1) return KVIO_STATUS_OK;
  const uint64_t end = address + bytes;  // the callers' sizes end inside the address space
  uint64_t at = address;
  uint64_t allocationStop = 0;
  while (at < end && allocationEnd(at, &allocationStop) && allocationStop < end) {
    char where[96];
    std::snprintf(where, sizeof(where), "byte %llu of ", ull(allocationStop - address));
    char after[96];
    std::snprintf(after, sizeof(after), ", where the allocation holding byte %llu ends",
                  ull(at - address));
    KVIO_RETURN_IF_ERROR(checkDeviceAddress(
        device, where + what + after, allocationStop,
        "it runs past the end of an allocation (the size given is too large, or it spans "
        "allocations that do not lie back to back)"));
    at = allocationStop;
  }
  return checkDeviceAddress(device, "the last byte of " + what, end - 1, pastEnd);
}

kvio_status checkDeviceAddress(int32_t device, const std::string& what, uint64_t address,
                               const char* advice) {
  cudaPointerAttributes attributes{};
  KVIO_CUDA_TRY(cudaPointerGetAttributes(&attributes, reinterpret_cast<void*>(address)),
                "checking %s at 0x%llx", what.c_str(), static_cast<unsigned long long>(address));
  const bool ofDevice = (attributes.type == cudaMemoryTypeDevice && attributes.device == device) ||
                        attributes.type == cudaMemoryTypeManaged;
  if (!ofDevice) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "%s, at 0x%llx, is not memory of CUDA device %d (cudaPointerGetAttributes type %d, "
                "device %d): %s",
                what.c_str(), static_cast<unsigned long long>(address), device,
                static_cast<int>(attributes.type), attributes.device,
                attributes.type == cudaMemoryTypeDevice
                    ? "it is another device's memory; use the pool or executor of that device"
                    : advice);
  }
  return checkOwningContext(device, what, address);
}

}  // namespace cuda

const MemoryOps& cudaMemoryOps() {
  return cuda::kCudaMemory;
}

}  // namespace kvio
