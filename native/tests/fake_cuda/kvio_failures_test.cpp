// kvio's CUDA backend when CUDA calls fail, on the fake runtime (its failCall hook arms a
// failure of one call; a GPU cannot be told to fail on cue, so these run on the fake only, ctest
// label `fake_cuda`). What each test shows: the failure is reported with a typed status naming
// the call, nothing kvio allocated or registered is left behind, no byte of any pool changes when
// the call is refused before a copy, and the next call works.
#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda.hpp"
#include "kvio/kvio.h"
#include "oracle.hpp"

namespace kvio_test {
namespace {

namespace fake = kvio_fake_cuda;

constexpr uint64_t kPage = 4096;

// Page-aligned host memory of whole pages, canary-filled, freed with free().
struct HostPages {
  explicit HostPages(size_t pages)
      : bytes(pages * kPage), data(static_cast<uint8_t*>(std::aligned_alloc(kPage, bytes))) {
    std::memset(data, kCanary, bytes);
  }
  ~HostPages() { std::free(data); }
  HostPages(const HostPages&) = delete;
  HostPages& operator=(const HostPages&) = delete;
  uint64_t address() const { return reinterpret_cast<uint64_t>(data); }
  bool untouched() const {
    for (size_t i = 0; i < bytes; ++i) {
      if (data[i] != kCanary) return false;
    }
    return true;
  }
  const size_t bytes;
  uint8_t* const data;
};

int64_t kvioRegistrations() {
  int64_t count = -1;
  EXPECT_EQ(kvio_debug_live_host_registrations(&count), KVIO_STATUS_OK);
  return count;
}

// Whether the fake runtime holds a registration (any) at `address`.
bool registeredAt(uint64_t address) {
  cudaPointerAttributes attributes{};
  EXPECT_EQ(cudaPointerGetAttributes(&attributes, reinterpret_cast<void*>(address)), cudaSuccess);
  return attributes.type == cudaMemoryTypeHost;
}

class CudaFailures : public ::testing::Test {
 protected:
  void SetUp() override {
    fake::clearFailures();
    allocationsAtSetUp_ = fake::liveAllocations();
    registrationsAtSetUp_ = kvioRegistrations();
  }
  void TearDown() override {
    fake::clearFailures();
    EXPECT_EQ(fake::liveAllocations(), allocationsAtSetUp_) << "CUDA memory left behind";
    EXPECT_EQ(kvioRegistrations(), registrationsAtSetUp_) << "kvio registrations left behind";
    cudaGetLastError();
  }

 private:
  int64_t allocationsAtSetUp_ = 0;
  int64_t registrationsAtSetUp_ = 0;
};

// One page of MLA layer_first: 2 layers x 16 tokens x 128 bytes.
const kvio_pool_spec kSpec{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 2, 1, 16, 1, 128};
constexpr uint64_t kPoolBytes = 2 * 16 * 128;

// A registration whose cudaHostUnregister failed stays kvio's (stale): a later wrap of the same
// pages first retries the unregistration and is refused while it fails (no pool, no byte
// changed), then registers afresh once it succeeds, and that pool's transfer moves the bytes.
TEST_F(CudaFailures, AStaleRegistrationIsEndedBeforeItsPagesAreWrappedAgain) {
  HostPages host(1);
  uint64_t pool = 0;
  ASSERT_EQ(
      kvio_pool_wrap_memory(&kSpec, KVIO_MEMORY_HOST_PINNED, 0, host.address(), kPoolBytes, &pool),
      KVIO_STATUS_OK)
      << kvio_last_error();
  const int64_t registrations = kvioRegistrations();
  EXPECT_TRUE(registeredAt(host.address()));
  fake::failCall("cudaHostUnregister", 0, cudaErrorUnknown);
  EXPECT_EQ(kvio_pool_close_wait(pool, -1), KVIO_STATUS_OK);
  EXPECT_TRUE(registeredAt(host.address())) << "the runtime still holds it";
  EXPECT_EQ(kvioRegistrations(), registrations) << "kept as stale, still counted";

  fake::failCall("cudaHostUnregister", 0, cudaErrorUnknown);
  uint64_t refused = 0;
  EXPECT_EQ(kvio_pool_wrap_memory(&kSpec, KVIO_MEMORY_HOST_PINNED, 0, host.address(), kPoolBytes,
                                  &refused),
            KVIO_STATUS_INVALID_ARGUMENT);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("could not unregister"), std::string::npos) << message;
  EXPECT_EQ(refused, 0u);
  EXPECT_TRUE(host.untouched());

  // The retry succeeds: registered afresh, and the pool works.
  ASSERT_EQ(
      kvio_pool_wrap_memory(&kSpec, KVIO_MEMORY_HOST_PINNED, 0, host.address(), kPoolBytes, &pool),
      KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvioRegistrations(), registrations);
  uint64_t device = 0, executor = 0, transfer = 0;
  ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_CUDA_DEVICE, 0, &device), KVIO_STATUS_OK);
  ASSERT_EQ(
      kvio_executor_create_cuda(KVIO_BACKEND_KERNEL, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &executor),
      KVIO_STATUS_OK)
      << kvio_last_error();
  std::vector<uint8_t> source(kPoolBytes);
  std::mt19937_64 rng(3);
  fillRandom(source.data(), source.size(), rng);
  ASSERT_EQ(kvio_pool_copy(device, 0, 0, reinterpret_cast<uint64_t>(source.data()), kPoolBytes,
                           KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OK);
  const std::vector<int64_t> slots = range(0, 16);
  ASSERT_EQ(
      kvio_submit_args(executor, device, pool, slots.data(), slots.data(), 16, 0, 0, 2, &transfer),
      KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  EXPECT_EQ(std::memcmp(host.data, source.data(), kPoolBytes), 0);
  for (size_t i = kPoolBytes; i < host.bytes; ++i) ASSERT_EQ(host.data[i], kCanary) << i;
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(device, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(pool, -1), KVIO_STATUS_OK);
  EXPECT_FALSE(registeredAt(host.address()));
}

// A registration the runtime refuses (cudaHostRegister failing): the wrap is refused with the
// runtime's error, no pool, nothing registered, no byte changed; the next wrap works.
TEST_F(CudaFailures, ARefusedRegistrationRefusesTheWrap) {
  HostPages host(1);
  fake::failCall("cudaHostRegister", 0, cudaErrorMemoryAllocation);
  uint64_t pool = 0;
  EXPECT_EQ(
      kvio_pool_wrap_memory(&kSpec, KVIO_MEMORY_HOST_PINNED, 0, host.address(), kPoolBytes, &pool),
      KVIO_STATUS_OUT_OF_MEMORY);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("cudaHostRegister"), std::string::npos) << message;
  EXPECT_EQ(pool, 0u);
  EXPECT_FALSE(registeredAt(host.address()));
  EXPECT_TRUE(host.untouched());
  ASSERT_EQ(
      kvio_pool_wrap_memory(&kSpec, KVIO_MEMORY_HOST_PINNED, 0, host.address(), kPoolBytes, &pool),
      KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_pool_close_wait(pool, -1), KVIO_STATUS_OK);
}

// Each CUDA call of a pool allocation failing in turn (the allocation, and for device memory the
// stream that zeroes it: its creation, the memset, the wait, its destruction): the allocation is
// refused with a status for the error and the call's
// name, and what it had allocated before the failure is freed.
TEST_F(CudaFailures, AFailedAllocationLeavesNothingBehind) {
  struct Step {
    int32_t memory;
    const char* call;
    cudaError_t error;
    kvio_status status;
  };
  for (const Step& step : {Step{KVIO_MEMORY_CUDA_DEVICE, "cudaMalloc", cudaErrorMemoryAllocation,
                                KVIO_STATUS_OUT_OF_MEMORY},
                           Step{KVIO_MEMORY_CUDA_DEVICE, "cudaStreamCreateWithFlags",
                                cudaErrorUnknown, KVIO_STATUS_BACKEND_ERROR},
                           Step{KVIO_MEMORY_CUDA_DEVICE, "cudaMemsetAsync", cudaErrorUnknown,
                                KVIO_STATUS_BACKEND_ERROR},
                           Step{KVIO_MEMORY_CUDA_DEVICE, "cudaStreamSynchronize",
                                cudaErrorLaunchFailure, KVIO_STATUS_BACKEND_ERROR},
                           Step{KVIO_MEMORY_CUDA_DEVICE, "cudaStreamDestroy", cudaErrorUnknown,
                                KVIO_STATUS_BACKEND_ERROR},
                           Step{KVIO_MEMORY_HOST_PINNED, "cudaHostAlloc", cudaErrorMemoryAllocation,
                                KVIO_STATUS_OUT_OF_MEMORY}}) {
    SCOPED_TRACE(step.call);
    const int64_t before = fake::liveAllocations();
    fake::failCall(step.call, 0, step.error);
    uint64_t pool = 0;
    EXPECT_EQ(kvio_pool_allocate_memory(&kSpec, step.memory, 0, &pool), step.status);
    const std::string message = kvio_last_error();
    EXPECT_NE(message.find(step.call), std::string::npos) << message;
    EXPECT_EQ(pool, 0u);
    EXPECT_EQ(fake::liveAllocations(), before);
    ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, step.memory, 0, &pool), KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(kvio_pool_close_wait(pool, -1), KVIO_STATUS_OK);
  }
}

// Making the device's context current failing (on a thread with no context, where kvio makes
// it current with cuCtxSetCurrent; here with the driver's out of memory, CUresult 2): the call is
// refused with the status for that error and a message that names the driver call that failed,
// its own error and the device, nothing is allocated, and the next call on the same thread works.
TEST_F(CudaFailures, AContextThatCannotBeMadeCurrentRefusesTheCallAndSaysWhy) {
  std::thread([] {
    fake::failCall("cuCtxSetCurrent", 0, static_cast<cudaError_t>(CUDA_ERROR_OUT_OF_MEMORY));
    uint64_t pool = 0;
    EXPECT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_CUDA_DEVICE, 0, &pool),
              KVIO_STATUS_OUT_OF_MEMORY);
    const std::string message = kvio_last_error();
    for (const char* part : {"cuCtxSetCurrent failed: ", "CUresult 2",
                             ": making CUDA device 0's primary context current"}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
    }
    for (const char* part : {"cuDevicePrimaryCtxRetain", "cuCtxGetCurrent", "scope"}) {
      EXPECT_EQ(message.find(part), std::string::npos) << part << " in: " << message;
    }
    EXPECT_EQ(pool, 0u);
    ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_CUDA_DEVICE, 0, &pool), KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(kvio_pool_close_wait(pool, -1), KVIO_STATUS_OK);
  }).join();
}

// The event that marks a transfer's end failing to record, for each CUDA backend: the copies
// are queued already, so the submit gives a transfer that fails (BACKEND_ERROR naming
// cudaEventRecord) once the stream has run them; the executor and the pools stay usable, and
// the next transfer moves what the oracle says.
TEST_F(CudaFailures, AnEventThatFailsToRecordFailsItsTransferAndTheNextOneWorks) {
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED}) {
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    uint64_t executor = 0, device = 0, host = 0;
    ASSERT_EQ(kvio_executor_create_cuda(backend, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &executor),
              KVIO_STATUS_OK)
        << kvio_last_error();
    ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_CUDA_DEVICE, 0, &device),
              KVIO_STATUS_OK);
    ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_HOST_PINNED, 0, &host), KVIO_STATUS_OK);
    std::vector<uint8_t> source(kPoolBytes), image(kPoolBytes, kCanary);
    std::mt19937_64 rng(7 + backend);
    fillRandom(source.data(), source.size(), rng);
    ASSERT_EQ(kvio_pool_copy(device, 0, 0, reinterpret_cast<uint64_t>(source.data()), kPoolBytes,
                             KVIO_COPY_HOST_TO_POOL),
              KVIO_STATUS_OK);
    ASSERT_EQ(kvio_pool_copy(host, 0, 0, reinterpret_cast<uint64_t>(image.data()), kPoolBytes,
                             KVIO_COPY_HOST_TO_POOL),
              KVIO_STATUS_OK);
    const std::vector<int64_t> from = {3, 9, 12}, to = {0, 5, 15};

    fake::failCall("cudaEventRecord", 0, cudaErrorUnknown);
    uint64_t transfer = 0;
    ASSERT_EQ(
        kvio_submit_args(executor, device, host, from.data(), to.data(), 3, 0, 0, 2, &transfer),
        KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_BACKEND_ERROR);
    const std::string message = kvio_last_error();
    EXPECT_NE(message.find("cudaEventRecord failed"), std::string::npos) << message;
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    transfer = 0;

    ASSERT_EQ(
        kvio_submit_args(executor, device, host, from.data(), to.data(), 3, 0, 0, 2, &transfer),
        KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    // The oracle: rows of 128 bytes, layer_first (layer, token).
    std::vector<uint8_t> expected = image;
    for (size_t i = 0; i < from.size(); ++i) {
      for (int64_t layer = 0; layer < 2; ++layer) {
        std::memcpy(&expected[static_cast<size_t>((layer * 16 + to[i]) * 128)],
                    &source[static_cast<size_t>((layer * 16 + from[i]) * 128)], 128);
      }
    }
    std::vector<uint8_t> actual(kPoolBytes, 0);
    ASSERT_EQ(kvio_pool_copy(host, 0, 0, reinterpret_cast<uint64_t>(actual.data()), kPoolBytes,
                             KVIO_COPY_POOL_TO_HOST),
              KVIO_STATUS_OK);
    EXPECT_EQ(actual, expected);
    EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_pool_close_wait(device, -1), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_pool_close_wait(host, -1), KVIO_STATUS_OK);
  }
}

// A copy that fails while a transfer is being queued, after some of its copies ('direct' on the
// legacy stream, which issues each row's two layers as one cudaMemcpy2DAsync, no batch): the
// transfer fails naming the
// copy once the stream has run what was queued before it, found through the transfer's event,
// not by a cudaStreamSynchronize in the submit (armed to fail here, it would show in the
// message); the executor stays usable and the next transfer moves what the oracle says.
TEST_F(CudaFailures, ACopyThatFailsMidSubmitFailsItsTransferWithoutAStreamWait) {
  uint64_t executor = 0, device = 0, host = 0;
  ASSERT_EQ(kvio_executor_create_cuda(KVIO_BACKEND_DIRECT, 0, 0, 0, 0, &executor), KVIO_STATUS_OK)
      << kvio_last_error();
  ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_CUDA_DEVICE, 0, &device), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_HOST_PINNED, 0, &host), KVIO_STATUS_OK);
  std::vector<uint8_t> source(kPoolBytes), image(kPoolBytes, kCanary);
  std::mt19937_64 rng(11);
  fillRandom(source.data(), source.size(), rng);
  ASSERT_EQ(kvio_pool_copy(device, 0, 0, reinterpret_cast<uint64_t>(source.data()), kPoolBytes,
                           KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_copy(host, 0, 0, reinterpret_cast<uint64_t>(image.data()), kPoolBytes,
                           KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OK);
  const std::vector<int64_t> from = {3, 9, 12}, to = {0, 5, 15};  // scattered: several copies

  fake::failCall("cudaMemcpy2DAsync", 1, cudaErrorInvalidValue);  // the transfer's second copy
  fake::failCall("cudaStreamSynchronize", 0, cudaErrorUnknown);
  uint64_t transfer = 0;
  ASSERT_EQ(kvio_submit_args(executor, device, host, from.data(), to.data(), 3, 0, 0, 2, &transfer),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_BACKEND_ERROR);
  const std::string message = kvio_last_error();
  fake::clearFailures();
  EXPECT_NE(message.find("cudaMemcpy2DAsync"), std::string::npos) << message;
  EXPECT_EQ(message.find("cudaStreamSynchronize"), std::string::npos)
      << "the submit waited for the stream: " << message;
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  transfer = 0;
  // Reported once the copy queued before the failed one had run: each 128-byte row of the
  // destination (layer_first: layer, token) is whole, either as it was or as the transfer
  // writes it, and some rows landed (the first copy's) but not all (the failed copy's did not).
  std::vector<uint8_t> written = image;
  for (size_t i = 0; i < from.size(); ++i) {
    for (int64_t layer = 0; layer < 2; ++layer) {
      std::memcpy(&written[static_cast<size_t>((layer * 16 + to[i]) * 128)],
                  &source[static_cast<size_t>((layer * 16 + from[i]) * 128)], 128);
    }
  }
  std::vector<uint8_t> afterFailure(kPoolBytes, 0);
  ASSERT_EQ(kvio_pool_copy(host, 0, 0, reinterpret_cast<uint64_t>(afterFailure.data()), kPoolBytes,
                           KVIO_COPY_POOL_TO_HOST),
            KVIO_STATUS_OK);
  int landed = 0;
  for (size_t row = 0; row < kPoolBytes / 128; ++row) {
    const auto at = static_cast<std::ptrdiff_t>(row * 128);
    const bool asBefore =
        std::equal(afterFailure.begin() + at, afterFailure.begin() + at + 128, image.begin() + at);
    const bool asWritten = std::equal(afterFailure.begin() + at, afterFailure.begin() + at + 128,
                                      written.begin() + at);
    EXPECT_TRUE(asBefore || asWritten) << "row " << row << " is torn";
    if (asWritten && !asBefore) ++landed;
  }
  EXPECT_GT(landed, 0) << "the copy queued before the failed one had not run when it was reported";
  EXPECT_LT(landed, 6) << "the failed copy's rows landed";

  ASSERT_EQ(kvio_submit_args(executor, device, host, from.data(), to.data(), 3, 0, 0, 2, &transfer),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  std::vector<uint8_t> expected = image;  // rows of 128 bytes, layer_first (layer, token)
  for (size_t i = 0; i < from.size(); ++i) {
    for (int64_t layer = 0; layer < 2; ++layer) {
      std::memcpy(&expected[static_cast<size_t>((layer * 16 + to[i]) * 128)],
                  &source[static_cast<size_t>((layer * 16 + from[i]) * 128)], 128);
    }
  }
  std::vector<uint8_t> actual(kPoolBytes, 0);
  ASSERT_EQ(kvio_pool_copy(host, 0, 0, reinterpret_cast<uint64_t>(actual.data()), kPoolBytes,
                           KVIO_COPY_POOL_TO_HOST),
            KVIO_STATUS_OK);
  EXPECT_EQ(actual, expected);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(device, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(host, -1), KVIO_STATUS_OK);
}

// A thread whose DeviceScope fails (no context of its own, cuCtxSetCurrent refused) asks for a
// transfer while another thread captures a stream in global mode: without the scope's relaxed
// capture mode, its event query is refused (cudaErrorStreamCaptureUnsupported), which says
// nothing about the transfer's work. The transfer is not reported done (or failed) on that
// answer; once the capture has ended, its wait answers OK and the destination holds the rows.
TEST_F(CudaFailures, AnEventQueryRefusedForACaptureIsNoAnswer) {
  uint64_t device = 0, host = 0, executor = 0, transfer = 0;
  ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_CUDA_DEVICE, 0, &device), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_allocate_memory(&kSpec, KVIO_MEMORY_HOST_PINNED, 0, &host), KVIO_STATUS_OK);
  ASSERT_EQ(
      kvio_executor_create_cuda(KVIO_BACKEND_KERNEL, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &executor),
      KVIO_STATUS_OK);
  std::vector<uint8_t> source(kPoolBytes);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_EQ(kvio_pool_copy(device, 0, 0, reinterpret_cast<uint64_t>(source.data()), kPoolBytes,
                           KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OK);
  const int64_t from[2] = {1, 7}, to[2] = {4, 12};
  ASSERT_EQ(kvio_submit_args(executor, device, host, from, to, 2, 0, 0, 2, &transfer),
            KVIO_STATUS_OK)
      << kvio_last_error();

  // Thread A captures a stream of its own, in global mode, until told to end.
  std::mutex m;
  std::condition_variable cv;
  int phase = 0;  // 1: capturing, 2: end it, 3: ended
  std::thread capturer([&] {
    cudaStream_t stream = nullptr;
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    std::unique_lock<std::mutex> lock(m);
    phase = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return phase == 2; });
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream, &graph);  // invalidated by the refused query: no graph
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
    phase = 3;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return phase == 1; });
  }
  // Thread B: no context, its scope refused, asks whether the transfer is done.
  int32_t done = -1;
  std::thread asker([&] {
    fake::failCall("cuCtxSetCurrent", 0, cudaErrorUnknown);
    done = kvio_transfer_is_done(transfer);
  });
  asker.join();
  fake::clearFailures();
  EXPECT_EQ(done, 0) << "a query refused for the capture was taken as the transfer's end";
  {
    std::unique_lock<std::mutex> lock(m);
    phase = 2;
    cv.notify_all();
    cv.wait(lock, [&] { return phase == 3; });
  }
  capturer.join();
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  std::vector<uint8_t> actual(kPoolBytes, 0);
  ASSERT_EQ(kvio_pool_copy(host, 0, 0, reinterpret_cast<uint64_t>(actual.data()), kPoolBytes,
                           KVIO_COPY_POOL_TO_HOST),
            KVIO_STATUS_OK);
  for (int64_t layer = 0; layer < 2; ++layer) {
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(std::memcmp(&actual[static_cast<size_t>((layer * 16 + to[i]) * 128)],
                            &source[static_cast<size_t>((layer * 16 + from[i]) * 128)], 128),
                0)
          << "layer " << layer << " pair " << i;
    }
  }
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(device, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(host, -1), KVIO_STATUS_OK);
}

// ---- direct on several streams (KVIO_DIRECT_STREAMS) ----

// A direct executor on four streams with a device pool and a pinned host pool of 64 rows of
// 64 KiB (MLA, one layer, one token a page): 32 scattered rows are four groups of 8 copies.
class DirectOnStreams : public CudaFailures {
 protected:
  static constexpr int64_t kRows = 64;
  static constexpr uint64_t kRow = 64 << 10;

  void SetUp() override {
    CudaFailures::SetUp();
    const char* old = std::getenv("KVIO_DIRECT_STREAMS");
    hadStreams_ = old != nullptr;
    if (hadStreams_) oldStreams_ = old;
    setenv("KVIO_DIRECT_STREAMS", "4", 1);
    const kvio_pool_spec spec{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1, kRows, 1, 1, kRow};
    ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, &device_),
              KVIO_STATUS_OK)
        << kvio_last_error();
    ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_HOST_PINNED, 0, &host_), KVIO_STATUS_OK)
        << kvio_last_error();
    uint64_t address = 0;
    ASSERT_EQ(kvio_pool_region(host_, 0, &address, nullptr, nullptr), KVIO_STATUS_OK);
    hostRows_ = reinterpret_cast<uint8_t*>(address);
    ASSERT_EQ(
        kvio_executor_create_cuda(KVIO_BACKEND_DIRECT, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &executor_),
        KVIO_STATUS_OK)
        << kvio_last_error();
    uint64_t stream = 0;
    ASSERT_EQ(kvio_executor_cuda_stream(executor_, &stream), KVIO_STATUS_OK);
    stream_ = reinterpret_cast<cudaStream_t>(stream);
    // Device rows: row r's bytes are r + 1 and its offset, so every row and byte is its own.
    source_.resize(kRows * kRow);
    for (size_t i = 0; i < source_.size(); ++i) {
      source_[i] = static_cast<uint8_t>(i / kRow * 37 + i % 251 + 1);
    }
    ASSERT_EQ(kvio_pool_copy(device_, 0, 0, reinterpret_cast<uint64_t>(source_.data()),
                             source_.size(), KVIO_COPY_HOST_TO_POOL),
              KVIO_STATUS_OK)
        << kvio_last_error();
    std::memset(hostRows_, kCanary, kRows * kRow);
    std::mt19937_64 rng(71);
    std::vector<int64_t> slots(kRows);
    for (int64_t i = 0; i < kRows; ++i) slots[static_cast<size_t>(i)] = i;
    std::shuffle(slots.begin(), slots.end(), rng);
    from_.assign(slots.begin(), slots.begin() + 32);
    std::shuffle(slots.begin(), slots.end(), rng);
    to_.assign(slots.begin(), slots.begin() + 32);
    fake::takeCopyStreams();
  }
  void TearDown() override {
    fake::delayCopies(0, {});
    if (executor_ != 0) EXPECT_EQ(kvio_executor_close(executor_), KVIO_STATUS_OK);
    if (device_ != 0) EXPECT_EQ(kvio_pool_close_wait(device_, -1), KVIO_STATUS_OK);
    if (host_ != 0) EXPECT_EQ(kvio_pool_close_wait(host_, -1), KVIO_STATUS_OK);
    if (hadStreams_) {
      setenv("KVIO_DIRECT_STREAMS", oldStreams_.c_str(), 1);
    } else {
      unsetenv("KVIO_DIRECT_STREAMS");
    }
    CudaFailures::TearDown();
  }

  // The executor's four streams in the order their groups are issued (its own first), from an
  // untimed transfer.
  std::vector<cudaStream_t> learnStreams() {
    fake::takeCopyStreams();
    const uint64_t transfer = backup();
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    std::memset(hostRows_, kCanary, kRows * kRow);
    return fake::takeCopyStreams();
  }

  uint64_t backup() {
    uint64_t transfer = 0;
    EXPECT_EQ(kvio_submit_args(executor_, device_, host_, from_.data(), to_.data(), 32, 0, 0, 1,
                               &transfer),
              KVIO_STATUS_OK)
        << kvio_last_error();
    return transfer;
  }

  // How many of the backup's 32 rows the host pool holds now, read by the host; every other
  // host row must still be canary (a row half written counts as not held).
  int rowsHeld() const {
    std::vector<bool> target(kRows, false);
    int held = 0;
    for (size_t i = 0; i < to_.size(); ++i) {
      target[static_cast<size_t>(to_[i])] = true;
      held += std::memcmp(hostRows_ + static_cast<uint64_t>(to_[i]) * kRow,
                          source_.data() + static_cast<uint64_t>(from_[i]) * kRow, kRow) == 0;
    }
    for (int64_t r = 0; r < kRows; ++r) {
      if (target[static_cast<size_t>(r)]) continue;
      const uint8_t* row = hostRows_ + static_cast<uint64_t>(r) * kRow;
      EXPECT_TRUE(std::all_of(row, row + kRow, [](uint8_t b) { return b == kCanary; }))
          << "host row " << r << " is not one of the transfer's and changed";
    }
    return held;
  }

  uint64_t device_ = 0, host_ = 0, executor_ = 0;
  cudaStream_t stream_ = nullptr;
  uint8_t* hostRows_ = nullptr;
  std::vector<uint8_t> source_;
  std::vector<int64_t> from_, to_;

 private:
  bool hadStreams_ = false;
  std::string oldStreams_;
};

// The transfer's copies go to four streams, the executor's first (the fake records the streams
// of its copy calls), and its wait returns only once all four streams' copies are done: with
// the copies on the three others held 200 ms, the host pool has every row the moment the wait
// returns (without the join, the executor's stream, and so the transfer's event, would be done
// after its own quarter).
TEST_F(DirectOnStreams, CopiesGoToFourStreamsAndTheWaitCoversThemAll) {
  const std::vector<cudaStream_t> streams = learnStreams();
  ASSERT_EQ(streams.size(), 4u);
  EXPECT_EQ(streams[0], stream_) << "the executor's own stream takes the first group";
  fake::delayCopies(200000, {streams[1], streams[2], streams[3]});
  const uint64_t transfer = backup();
  ASSERT_NE(transfer, 0u);
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(rowsHeld(), 32) << "rows in host memory when the wait returned";
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  EXPECT_EQ(fake::takeCopyStreams(), streams);
}

// The fork's event record fails: nothing is issued on any stream, the transfer fails naming the
// fork, no host byte changes, and the next transfer works.
TEST_F(DirectOnStreams, AFailedForkIssuesNothing) {
  fake::failCall("cudaEventRecord", 0, cudaErrorUnknown);
  uint64_t transfer = 0;
  const kvio_status submitted =
      kvio_submit_args(executor_, device_, host_, from_.data(), to_.data(), 32, 0, 0, 1, &transfer);
  kvio_status status = submitted;
  std::string message = kvio_last_error();
  if (submitted == KVIO_STATUS_OK) {
    status = kvio_transfer_wait(transfer, -1);
    message = kvio_last_error();
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  }
  EXPECT_EQ(status, KVIO_STATUS_BACKEND_ERROR);
  EXPECT_NE(message.find("fork event"), std::string::npos) << message;
  EXPECT_EQ(rowsHeld(), 0);
  EXPECT_TRUE(fake::takeCopyStreams().empty());
  const uint64_t again = backup();
  EXPECT_EQ(kvio_transfer_wait(again, -1), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_transfer_close(again), KVIO_STATUS_OK);
  EXPECT_EQ(rowsHeld(), 32);
}

// The first join's event record fails (that stream's copies held 100 ms, the others' not): the
// submit waits on the host for that stream instead, so when the transfer reports the failure,
// naming the join, every row is in place; the next transfer works.
TEST_F(DirectOnStreams, AFailedJoinWaitsForItsStreamBeforeTheFailureIsReported) {
  const std::vector<cudaStream_t> streams = learnStreams();
  ASSERT_EQ(streams.size(), 4u);
  fake::delayCopies(100000, {streams[1]});
  fake::failCall("cudaEventRecord", 1, cudaErrorUnknown);
  const uint64_t transfer = backup();
  ASSERT_NE(transfer, 0u);
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_BACKEND_ERROR);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("joining stream 2 of 4"), std::string::npos) << message;
  EXPECT_EQ(rowsHeld(), 32) << "rows in host memory when the failure was reported";
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  fake::delayCopies(0, {});
  const uint64_t again = backup();
  EXPECT_EQ(kvio_transfer_wait(again, -1), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_transfer_close(again), KVIO_STATUS_OK);
}

}  // namespace
}  // namespace kvio_test
