// Tests of the C ABI's memory kinds and CUDA entry points that hold on every machine: bad
// memory kinds, the cpu backend refusing device pools, CUDA-only calls on a cpu executor,
// and, where the kernel/direct backends are unavailable (no CUDA build, driver or device),
// that every CUDA entry says so with the cause instead of failing in some other way.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvio/kvio.h"
#include "rejection_assertions.hpp"

namespace {

const kvio_pool_spec kSpec{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, 2, 4, 4, 2, 16};

bool cudaPresent() {
  return kvio_backend_available(KVIO_BACKEND_KERNEL) == KVIO_STATUS_OK;
}

TEST(CudaApi, InvalidMemoryKindIsRejected) {
  uint64_t pool = 0;
  EXPECT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_COUNT, 0, &pool),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(
      std::string(kvio_last_error())
          .find("memory_kind: memory kind " + std::to_string(KVIO_MEMORY_COUNT) + " is not valid"),
      std::string::npos);
  EXPECT_EQ(kvio_pool_allocate_memory(&kSpec, -1, 0, &pool), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_CUDA_DEVICE, -2, &pool),
            KVIO_STATUS_INVALID_ARGUMENT);
  std::vector<uint8_t> memory(1 << 16);
  EXPECT_EQ(kvio_pool_wrap_memory(&kSpec, 9, 0, reinterpret_cast<uint64_t>(memory.data()),
                                  memory.size(), &pool),
            KVIO_STATUS_INVALID_ARGUMENT);
}

TEST(CudaApi, HostPoolsReportTheirMemory) {
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_allocate(&kSpec, &pool), KVIO_STATUS_OK);
  int32_t kind = -1, device = 7;
  ASSERT_EQ(kvio_pool_memory(pool, &kind, &device), KVIO_STATUS_OK);
  EXPECT_EQ(kind, KVIO_MEMORY_HOST);
  EXPECT_EQ(device, -1);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_HOST, 5, &pool), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_memory(pool, &kind, &device), KVIO_STATUS_OK);
  EXPECT_EQ(kind, KVIO_MEMORY_HOST);
  EXPECT_EQ(device, -1);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

TEST(CudaApi, CudaOnlyCallsOnACpuExecutorAreUnsupported) {
  uint64_t executor = 0, a = 0, b = 0, transfer = 0, out = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_allocate(&kSpec, &a), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_allocate(&kSpec, &b), KVIO_STATUS_OK);
  const int64_t s[2] = {0, 1}, d[2] = {2, 3};
  const kvio_transfer_desc desc{a, b, s, d, 2, 0, 0, 2};
  EXPECT_EQ(kvio_submit_device_indices(executor, &desc, &transfer), KVIO_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(kvio_last_error()).find("'kernel'"), std::string::npos);
  EXPECT_REJECTED(kvio_executor_set_launch(executor, 2, 8), KVIO_STATUS_UNSUPPORTED,
                  "is a 'cpu' executor, which launches no copy kernel");
  // A shape outside the limits is INVALID_ARGUMENT on every backend, as on a GPU's.
  EXPECT_REJECTED(kvio_executor_set_launch(executor, 70000, 1), KVIO_STATUS_INVALID_ARGUMENT,
                  "launch shape 70000 CTAs x 1 warps is not valid");
  EXPECT_REJECTED(kvio_executor_set_launch(executor, 1, 33), KVIO_STATUS_INVALID_ARGUMENT,
                  "warps per CTA 1 to 32");
  // Checked before the handle (kvio.h: "checked first"): a closed executor's bad shape too.
  uint64_t closed = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &closed), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_executor_close(closed), KVIO_STATUS_OK);
  EXPECT_REJECTED(kvio_executor_set_launch(closed, 70000, 1), KVIO_STATUS_INVALID_ARGUMENT,
                  "launch shape 70000 CTAs x 1 warps is not valid");
  EXPECT_REJECTED(kvio_executor_set_launch(closed, 2, 8), KVIO_STATUS_CLOSED, "is closed");
  EXPECT_EQ(kvio_executor_cuda_stream(executor, &out), KVIO_STATUS_UNSUPPORTED);
  ASSERT_EQ(kvio_submit(executor, &desc, &transfer), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_cuda_event(transfer, &out), KVIO_STATUS_UNSUPPORTED);
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  // A per-transfer launch shape is ignored by the cpu backend, but must be a valid one.
  ASSERT_EQ(kvio_submit_launch(executor, &desc, 2, 8, &transfer), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_submit_launch(executor, &desc, 1, 33, &transfer), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("33 warps"), std::string::npos);
  EXPECT_EQ(kvio_executor_create_cuda(KVIO_BACKEND_CPU, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &out),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kvio_pool_close(a), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close(b), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

TEST(CudaApi, ThePerThreadDefaultStreamIsRefusedOnEveryMachine) {
  uint64_t out = 0;
  for (int32_t backend :
       {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED, KVIO_BACKEND_AUTO}) {
    EXPECT_REJECTED(kvio_executor_create_cuda(backend, 0, 0x2, 0, 0, &out),
                    KVIO_STATUS_INVALID_ARGUMENT, "stream 0x2 is cudaStreamPerThread");
    EXPECT_EQ(out, 0u);
  }
}

// Arguments that are wrong on every machine get INVALID_ARGUMENT whether or not the backend is
// present: they were checked after its availability, so a machine without CUDA (or ACL) said
// UNAVAILABLE for them and one with it INVALID_ARGUMENT.
TEST(CudaApi, ArgumentsWrongOnEveryMachineAreRefusedAsSuchEverywhere) {
  uint64_t out = 0;
  EXPECT_REJECTED(
      kvio_executor_create_cuda(KVIO_BACKEND_KERNEL_ASCEND, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &out),
      KVIO_STATUS_INVALID_ARGUMENT, "io backend 'kernel_ascend' is not a CUDA backend",
      "'kernel' or 'direct' or 'auto' or 'staged'");
  EXPECT_REJECTED(kvio_executor_create_cuda(KVIO_BACKEND_CPU, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &out),
                  KVIO_STATUS_INVALID_ARGUMENT, "io backend 'cpu' is not a CUDA backend");
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_AUTO}) {
    EXPECT_REJECTED(kvio_executor_create_cuda(backend, -1, KVIO_CUDA_OWN_STREAM, 0, 0, &out),
                    KVIO_STATUS_INVALID_ARGUMENT, "device -1 is not a CUDA device ordinal");
  }
  EXPECT_REJECTED(kvio_executor_create_ascend(-1, KVIO_ASCEND_OWN_STREAM, &out),
                  KVIO_STATUS_INVALID_ARGUMENT, "device -1 is not an Ascend device ordinal");
  EXPECT_REJECTED(kvio_executor_create_cuda(99, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &out),
                  KVIO_STATUS_INVALID_ARGUMENT, "io_backend");
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_STAGED, KVIO_BACKEND_AUTO}) {
    EXPECT_REJECTED(kvio_executor_create_cuda(backend, 0, KVIO_CUDA_OWN_STREAM, 65536, 8, &out),
                    KVIO_STATUS_INVALID_ARGUMENT, "launch shape 65536 CTAs x 8 warps");
    EXPECT_REJECTED(kvio_executor_create_cuda(backend, 0, KVIO_CUDA_OWN_STREAM, 4, 33, &out),
                    KVIO_STATUS_INVALID_ARGUMENT, "launch shape 4 CTAs x 33 warps");
  }
  EXPECT_EQ(out, 0u);
}

TEST(CudaApi, WithoutCudaEveryEntrySaysWhy) {
  if (cudaPresent()) GTEST_SKIP() << "a CUDA device is present (cuda_gpu_test covers it)";
  const std::string cause = (kvio_backend_available(KVIO_BACKEND_KERNEL), kvio_last_error());
  EXPECT_FALSE(cause.empty());
  int32_t count = -1;
  EXPECT_EQ(kvio_cuda_device_count(&count), KVIO_STATUS_UNAVAILABLE);
  EXPECT_EQ(count, 0);
  uint64_t out = 0;
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT}) {
    EXPECT_EQ(kvio_executor_create(backend, 0, &out), KVIO_STATUS_UNAVAILABLE);
    EXPECT_EQ(kvio_executor_create_cuda(backend, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &out),
              KVIO_STATUS_UNAVAILABLE);
  }
  for (int32_t kind : {KVIO_MEMORY_HOST_PINNED, KVIO_MEMORY_CUDA_DEVICE}) {
    EXPECT_EQ(kvio_pool_allocate_memory(&kSpec, kind, 0, &out), KVIO_STATUS_UNAVAILABLE)
        << kvio_last_error();
    std::vector<uint8_t> memory(1 << 16);
    EXPECT_EQ(kvio_pool_wrap_memory(&kSpec, kind, 0, reinterpret_cast<uint64_t>(memory.data()),
                                    memory.size(), &out),
              KVIO_STATUS_UNAVAILABLE)
        << kvio_last_error();
  }
}

}  // namespace
