// CUDA memory services of the core (MemoryOps, pool.hpp): pinned host allocation
// (cudaHostAlloc), registration of caller host memory (cudaHostRegister in chunks, undone when
// the pool's memory is released), device allocation (cudaMalloc), checks of wrapped device
// memory (cudaPointerGetAttributes), and the device addresses of host memory
// (cudaHostGetDevicePointer; never assumed equal to the host address). Also the error idiom
// of cuda_check.hpp.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

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

DeviceScope::DeviceScope(int32_t device) {
  error_ = cudaGetDevice(&previous_);
  if (error_ == cudaSuccess && previous_ != device) error_ = cudaSetDevice(device);
}

DeviceScope::~DeviceScope() {
  int current = -1;
  if (previous_ >= 0 && cudaGetDevice(&current) == cudaSuccess && current != previous_) {
    cudaSetDevice(previous_);
  }
}

namespace {

// cudaHostRegister granularity: chunks of at most 1 GiB aligned to the host page, so one
// failing chunk names a small range and very large pools register in bounded calls.
constexpr uint64_t kRegisterChunk = 1ull << 30;

struct PinnedHost {
  void* pointer = nullptr;
  ~PinnedHost() {
    if (pointer != nullptr) cudaFreeHost(pointer);
  }
};

struct DeviceMemory {
  void* pointer = nullptr;
  int32_t device = 0;
  ~DeviceMemory() {
    if (pointer != nullptr) {
      DeviceScope scope(device);
      cudaFree(pointer);
    }
  }
};

// Caller host memory kvio registered; unregistered on release. Chunks that were already
// registered (by the caller or another pool) are used as they are and left registered.
struct Registration {
  std::vector<void*> chunks;
  ~Registration() {
    for (void* chunk : chunks) cudaHostUnregister(chunk);
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
  KVIO_CUDA_TRY(scope.error(), "selecting CUDA device %d", device);
  if (kind == KVIO_MEMORY_HOST_PINNED) {
    auto memory = std::make_shared<PinnedHost>();
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
  // Zeroed on a private stream and waited for: executors' streams are non-blocking, so a
  // memset on the legacy stream could still run after the pool's first transfer.
  cudaStream_t stream = nullptr;
  KVIO_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                "creating a stream to zero a new pool on CUDA device %d", device);
  cudaError_t error = cudaMemsetAsync(memory->pointer, 0, bytes, stream);
  const cudaError_t waited = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  if (error == cudaSuccess) error = waited;
  KVIO_CUDA_TRY(error, "zeroing %llu bytes on CUDA device %d",
                static_cast<unsigned long long>(bytes), device);
  *address = reinterpret_cast<uint64_t>(memory->pointer);
  *owner = std::move(memory);
  return KVIO_STATUS_OK;
}

// Registers each region in chunks whose boundaries are multiples of kRegisterChunk (so no
// host page belongs to two registrations), then checks that the device addresses of the chunks
// follow each other like the host addresses, because kernels address a whole region from one
// device base.
kvio_status registerHost(const MemoryRegion* regions, size_t count, std::shared_ptr<void>* owner) {
  auto registration = std::make_shared<Registration>();
  for (size_t r = 0; r < count; ++r) {
    const uint64_t start = regions[r].address;
    const uint64_t end = start + regions[r].bytes;
    const uint64_t chunks = (end - 1) / kRegisterChunk - start / kRegisterChunk + 1;
    uint64_t k = 0;
    void* firstDevice = nullptr;
    for (uint64_t at = start; at < end; ++k) {
      const uint64_t boundary = (at / kRegisterChunk + 1) * kRegisterChunk;
      const uint64_t bytes = (boundary < end ? boundary : end) - at;
      void* chunk = reinterpret_cast<void*>(at);
      const cudaError_t error =
          cudaHostRegister(chunk, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
      if (error == cudaErrorHostMemoryAlreadyRegistered) {
        cudaGetLastError();     // the caller's own registration: use it, leave it, if it covers
        void* first = nullptr;  // the whole chunk (not just a page shared with another buffer)
        void* last = nullptr;
        const cudaError_t a = cudaHostGetDevicePointer(&first, chunk, 0);
        const cudaError_t b =
            cudaHostGetDevicePointer(&last, reinterpret_cast<void*>(at + bytes - 1), 0);
        if (a != cudaSuccess || b != cudaSuccess ||
            reinterpret_cast<uint64_t>(last) - reinterpret_cast<uint64_t>(first) != bytes - 1) {
          cudaGetLastError();
          return fail(KVIO_STATUS_BACKEND_ERROR,
                      "host region %zu chunk %llu (%llu bytes at 0x%llx) is partly registered "
                      "with CUDA already (cudaHostRegister: cudaErrorHostMemoryAlreadyRegistered) "
                      "but not as a whole; register the whole buffer yourself and wrap it again",
                      r, static_cast<unsigned long long>(k + 1),
                      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(at));
        }
      } else {
        KVIO_CUDA_TRY(
            error, "registering host region %zu, %llu bytes at 0x%llx (chunk %llu of %llu)", r,
            static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(at),
            static_cast<unsigned long long>(k + 1), static_cast<unsigned long long>(chunks));
        registration->chunks.push_back(chunk);
      }
      void* device = nullptr;
      KVIO_CUDA_TRY(cudaHostGetDevicePointer(&device, chunk, 0),
                    "getting the device address of host region %zu chunk %llu at 0x%llx", r,
                    static_cast<unsigned long long>(k + 1), static_cast<unsigned long long>(at));
      if (k == 0) {
        firstDevice = device;
      } else if (reinterpret_cast<uint64_t>(device) - reinterpret_cast<uint64_t>(firstDevice) !=
                 at - start) {
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "host region %zu (%llu bytes at 0x%llx) registered in %llu chunks is not "
                    "contiguous in the device's address space; register it yourself in one "
                    "cudaHostRegister call and wrap it again",
                    r, static_cast<unsigned long long>(regions[r].bytes),
                    static_cast<unsigned long long>(start),
                    static_cast<unsigned long long>(chunks));
      }
      at += bytes;
    }
  }
  *owner = std::move(registration);
  return KVIO_STATUS_OK;
}

kvio_status checkDeviceRegions(int32_t device, const MemoryRegion* regions, size_t count) {
  for (size_t r = 0; r < count; ++r) {
    cudaPointerAttributes attributes{};
    KVIO_CUDA_TRY(
        cudaPointerGetAttributes(&attributes, reinterpret_cast<void*>(regions[r].address)),
        "checking device region %zu at 0x%llx", r,
        static_cast<unsigned long long>(regions[r].address));
    if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "region %zu at 0x%llx is not CUDA device memory (cudaPointerGetAttributes type "
                  "%d); wrap host memory with KVIO_MEMORY_HOST or KVIO_MEMORY_HOST_PINNED",
                  r, static_cast<unsigned long long>(regions[r].address),
                  static_cast<int>(attributes.type));
    }
    if (attributes.device != device) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "region %zu at 0x%llx is memory of CUDA device %d, not of device %d", r,
                  static_cast<unsigned long long>(regions[r].address), attributes.device, device);
    }
  }
  return KVIO_STATUS_OK;
}

kvio_status adopt(int32_t kind, int32_t device, const MemoryRegion* regions, size_t count,
                  std::shared_ptr<void>* owner) {
  KVIO_RETURN_IF_ERROR(checkDevice(device));
  DeviceScope scope(device);
  KVIO_CUDA_TRY(scope.error(), "selecting CUDA device %d", device);
  if (kind == KVIO_MEMORY_HOST_PINNED) return registerHost(regions, count, owner);
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
  KVIO_CUDA_TRY(scope.error(), "selecting CUDA device %d", device);
  void* devicePointer = nullptr;
  KVIO_CUDA_TRY(cudaHostGetDevicePointer(&devicePointer, reinterpret_cast<void*>(address), 0),
                "getting the device address of pinned host memory at 0x%llx (device %d)",
                static_cast<unsigned long long>(address), device);
  *out = reinterpret_cast<uint64_t>(devicePointer);
  return KVIO_STATUS_OK;
}

const MemoryOps kCudaMemory{allocate, adopt, deviceAddress};

}  // namespace
}  // namespace cuda

const MemoryOps& cudaMemoryOps() {
  return cuda::kCudaMemory;
}

}  // namespace kvio
