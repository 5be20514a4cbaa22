// The fake CUDA runtime's own rules (fake_cuda.hpp), checked directly: the GPU tests that run on
// it find kvio's mistakes only while it refuses what CUDA refuses. No kvio here: the runtime calls,
// the driver calls reached through cudaGetDriverEntryPointByVersion and the busy kernel.
#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "cuda_gpu_busy.hpp"

namespace {

template <class F>
F driverCall(const char* name, unsigned int version = 12000) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  EXPECT_EQ(cudaGetDriverEntryPointByVersion(name, &entry, version, cudaEnableDefault, &found),
            cudaSuccess);
  EXPECT_EQ(found, cudaDriverEntryPointSuccess) << name;
  return reinterpret_cast<F>(entry);
}

TEST(FakeCuda, CopiesStayInsideOneAllocationAndChangeNothingWhenRefused) {
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 1000), cudaSuccess);
  std::vector<unsigned char> host(1001, 7);
  ASSERT_EQ(cudaMemcpy(device, host.data(), 1000, cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<unsigned char> more(1001, 9);
  EXPECT_EQ(cudaMemcpyAsync(device, more.data(), 1001, cudaMemcpyHostToDevice, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the last error is read once";
  std::vector<unsigned char> back(1000, 0);
  ASSERT_EQ(cudaMemcpy(back.data(), device, 1000, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, std::vector<unsigned char>(1000, 7));
  // Host memory where device memory is required.
  EXPECT_EQ(cudaMemcpyAsync(more.data(), host.data(), 8, cudaMemcpyHostToDevice, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaErrorInvalidValue) << "freed twice";
}

TEST(FakeCuda, HostRegistrationsDoNotOverlapAndHaveDeviceAddressesWhenMapped) {
  std::vector<unsigned char> buffer(3 * 4096);
  unsigned char* p = buffer.data();
  ASSERT_EQ(cudaHostRegister(p, 4096, cudaHostRegisterMapped), cudaSuccess);
  EXPECT_EQ(cudaHostRegister(p + 100, 4096, cudaHostRegisterMapped),
            cudaErrorHostMemoryAlreadyRegistered);
  ASSERT_EQ(cudaHostRegister(p + 4096, 4096, cudaHostRegisterPortable), cudaSuccess);
  void* mapped = nullptr;
  EXPECT_EQ(cudaHostGetDevicePointer(&mapped, p + 10, 0), cudaSuccess);
  EXPECT_EQ(mapped, p + 10);
  EXPECT_EQ(cudaHostGetDevicePointer(&mapped, p + 4096, 0), cudaErrorInvalidValue)
      << "registered without cudaHostRegisterMapped";
  EXPECT_EQ(cudaHostUnregister(p + 1), cudaErrorHostMemoryNotRegistered);
  EXPECT_EQ(cudaHostUnregister(p), cudaSuccess);
  EXPECT_EQ(cudaHostUnregister(p + 4096), cudaSuccess);
}

TEST(FakeCuda, AKernelLaunchNeedsAStreamOfTheCurrentContext) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  cudaStream_t stream = nullptr;
  float* data = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&data, 64 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(kvioTestLaunchBusy(stream, data, 2, 32, 1), cudaErrorInvalidResourceHandle);
  int device = -1;
  EXPECT_EQ(cudaStreamGetDevice(stream, &device), cudaSuccess);
  EXPECT_EQ(device, 1);
  // A copy to that stream is allowed.
  std::vector<float> host(64, 1.0f);
  EXPECT_EQ(cudaMemcpyAsync(data, host.data(), 64 * sizeof(float), cudaMemcpyHostToDevice, stream),
            cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(kvioTestLaunchBusy(stream, data, 2, 32, 1), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaFree(data), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

// On device 1, so that the context it ends is not the one the other cases use (each case runs in
// a process of its own under ctest, but not when the program runs whole).
TEST(FakeCuda, AKernelReachingHostMemoryEndsTheContextForGood) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  std::vector<float> pageable(64, 0.0f);
  // The fault shows when the kernel runs: the launch's own answer may already carry it.
  const cudaError_t launched = kvioTestLaunchBusy(nullptr, pageable.data(), 2, 32, 1);
  EXPECT_TRUE(launched == cudaSuccess || launched == cudaErrorIllegalAddress) << launched;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  void* more = nullptr;
  EXPECT_EQ(cudaMalloc(&more, 16), cudaErrorIllegalAddress) << "sticky";
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress) << "not cleared by reading it";
  EXPECT_EQ(pageable, std::vector<float>(64, 0.0f)) << "the faulting kernel wrote nothing";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST(FakeCuda, TheLegacyStreamWaitsForBlockingStreams) {
  cudaStream_t blocking = nullptr;
  float* data = nullptr;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&data, 64 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(data, 0, 64 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(kvioTestLaunchBusy(blocking, data, 2, 32, 1 << 18), cudaSuccess);  // ~30 ms
  std::vector<float> host(64, -1.0f);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), data, 64 * sizeof(float), cudaMemcpyDeviceToHost, nullptr),
            cudaSuccess);  // pageable: returns when done
  EXPECT_EQ(host, std::vector<float>(64, 1.0e-7f)) << "the copy ran before the kernel";
  EXPECT_EQ(cudaStreamDestroy(blocking), cudaSuccess);
  EXPECT_EQ(cudaFree(data), cudaSuccess);
}

TEST(FakeCuda, UnsafeCallsDuringAGlobalCaptureInvalidateItUnlessRelaxed) {
  cudaStream_t stream = nullptr;
  float* data = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&data, 64 * sizeof(float)), cudaSuccess);
  for (const bool relaxed : {false, true}) {
    SCOPED_TRACE(relaxed ? "relaxed" : "global");
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT_EQ(cudaMemsetAsync(data, 0, 64 * sizeof(float), stream), cudaSuccess);
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (relaxed) {
      ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    }
    void* more = nullptr;
    const cudaError_t allocated = cudaMalloc(&more, 16);
    if (relaxed) {
      ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (relaxed) {
      EXPECT_EQ(allocated, cudaSuccess);
      EXPECT_EQ(ended, cudaSuccess);
      size_t nodes = 0;
      EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
      EXPECT_EQ(nodes, 1u);
      EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
      EXPECT_EQ(cudaFree(more), cudaSuccess);
    } else {
      EXPECT_EQ(allocated, cudaErrorStreamCaptureUnsupported);
      EXPECT_EQ(ended, cudaErrorStreamCaptureInvalidated);
      EXPECT_EQ(graph, nullptr);
    }
    cudaGetLastError();
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaFree(data), cudaSuccess);
}

TEST(FakeCuda, BatchCopiesNeedAContextAndAStreamOtherThanTheLegacyOne) {
  using Batch = CUresult (*)(CUdeviceptr*, CUdeviceptr*, size_t*, size_t, CUmemcpyAttributes*,
                             size_t*, size_t, CUstream);
  const auto batch = driverCall<Batch>("cuMemcpyBatchAsync", 13000);
  ASSERT_NE(batch, nullptr);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 256), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::vector<unsigned char> host(256, 3);
  CUdeviceptr dst = reinterpret_cast<CUdeviceptr>(device);
  CUdeviceptr src = reinterpret_cast<CUdeviceptr>(host.data());
  size_t size = 256, index = 0;
  CUmemcpyAttributes attributes{};
  attributes.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  EXPECT_EQ(batch(&dst, &src, &size, 1, &attributes, &index, 1, nullptr), CUDA_ERROR_INVALID_VALUE)
      << "the legacy stream";
  CUresult fromBareThread = CUDA_SUCCESS;
  std::thread bare([&] {
    fromBareThread =
        batch(&dst, &src, &size, 1, &attributes, &index, 1, reinterpret_cast<CUstream>(stream));
  });
  bare.join();
  EXPECT_EQ(fromBareThread, CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(batch(&dst, &src, &size, 1, &attributes, &index, 1, reinterpret_cast<CUstream>(stream)),
            CUDA_SUCCESS);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<unsigned char> back(256, 0);
  ASSERT_EQ(cudaMemcpy(back.data(), device, 256, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  EXPECT_EQ(cudaFree(device), cudaSuccess);
}

TEST(FakeCuda, MemoryOfACreatedContextHasNoDeviceAddressInThePrimaryOne) {
  using CtxCreate = CUresult (*)(CUcontext*, unsigned int, CUdevice);
  using CtxPop = CUresult (*)(CUcontext*);
  using CtxDestroy = CUresult (*)(CUcontext);
  using MemAlloc = CUresult (*)(CUdeviceptr*, size_t);
  using MemFree = CUresult (*)(CUdeviceptr);
  using GetAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
  const auto create = driverCall<CtxCreate>("cuCtxCreate");
  const auto pop = driverCall<CtxPop>("cuCtxPopCurrent");
  const auto destroy = driverCall<CtxDestroy>("cuCtxDestroy");
  const auto alloc = driverCall<MemAlloc>("cuMemAlloc");
  const auto memFree = driverCall<MemFree>("cuMemFree");
  const auto attribute = driverCall<GetAttribute>("cuPointerGetAttribute");
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  CUcontext own = nullptr;
  ASSERT_EQ(create(&own, 0, 0), CUDA_SUCCESS);
  CUdeviceptr memory = 0;
  ASSERT_EQ(alloc(&memory, 64), CUDA_SUCCESS);
  CUdeviceptr reachable = 0;
  EXPECT_EQ(attribute(&reachable, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, memory), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(pop(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, own);
  CUcontext owner = nullptr;
  EXPECT_EQ(attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, memory), CUDA_SUCCESS);
  EXPECT_EQ(owner, own);
  EXPECT_EQ(attribute(&reachable, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, memory),
            CUDA_ERROR_INVALID_VALUE)
      << "from the primary context";
  EXPECT_EQ(memFree(memory), CUDA_SUCCESS);
  EXPECT_EQ(destroy(own), CUDA_SUCCESS);
}

}  // namespace
