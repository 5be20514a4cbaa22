// GPU tests of the lifetime of caller host memory kvio registers (docs/memory-lifetime.md), for
// the 'kernel', 'direct' and 'staged' io backends (ctest label `cuda`; skipped with the reason
// where no driver or device is present). The H200 failure: host memory wrapped as pinned, used,
// closed, unmapped, mapped again at the same address and wrapped again; then the caller's own
// cudaHostRegister of a whole buffer (used, left registered), of part of one (refused), and two
// pools sharing a host page (at a row boundary and mid-row). Each transfer's bytes are checked on
// the host: the wrapped memory is loaded into a device pool and backed up into a kvio-allocated
// pinned pool, compared whole with the oracle (canary-filled destination).
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"
#include "pool_fixtures.hpp"

namespace kvio_test {
namespace {

constexpr size_t kPage = 4096;
const Geometry kHost{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 64};
const Geometry kDevice{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 8, 4, 2, 64};
const Geometry kBack{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 2, 64};

#define REQUIRE_GPU()                                                  \
  do {                                                                 \
    if (kvio_backend_available(KVIO_BACKEND_KERNEL) != KVIO_STATUS_OK) \
      GTEST_SKIP() << "no CUDA device: " << kvio_last_error();         \
  } while (0)

int64_t liveRegistrations() {
  int64_t count = -1;
  EXPECT_EQ(kvio_debug_live_host_registrations(&count), KVIO_STATUS_OK);
  return count;
}

uint8_t* mapAt(void* hint, size_t bytes, int extraFlags) {
  void* p =
      mmap(hint, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extraFlags, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

/// `bytes` of anonymous memory (mmap), unmapped however the test ends: a failed ASSERT before a
/// munmap at the end leaked it into the tests that follow in the process.
class Mapping {
 public:
  explicit Mapping(size_t bytes) : bytes_(bytes), data_(mapAt(nullptr, bytes, 0)) {}
  ~Mapping() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  uint8_t* get() const { return data_; }

 private:
  size_t bytes_;
  uint8_t* data_;
};

/// The caller's own cudaHostRegister of `bytes` at `data`, undone however the test ends;
/// unregister() undoes it now and returns what cudaHostUnregister said.
class CallerRegistration {
 public:
  CallerRegistration(void* data, size_t bytes)
      : data_(data),
        status_(cudaHostRegister(data, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped)),
        held_(status_ == cudaSuccess) {}
  ~CallerRegistration() {
    if (held_) cudaHostUnregister(data_);
  }
  CallerRegistration(const CallerRegistration&) = delete;
  CallerRegistration& operator=(const CallerRegistration&) = delete;

  /// What cudaHostRegister said.
  cudaError_t status() const { return status_; }
  cudaError_t unregister() {
    held_ = false;
    return cudaHostUnregister(data_);
  }

 private:
  void* data_;
  cudaError_t status_;
  bool held_;
};

uint64_t wrapPinned(uint8_t* data, size_t bytes, kvio_status expected = KVIO_STATUS_OK) {
  return wrapBuffer(kHost, KVIO_MEMORY_HOST_PINNED, 0, data, bytes, expected);
}

class CudaLifetime : public ::testing::TestWithParam<int32_t> {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    ASSERT_EQ(kvio_executor_create(GetParam(), 0, &executor_), KVIO_STATUS_OK) << kvio_last_error();
    device_ = std::make_unique<TestPool>(kDevice, KVIO_MEMORY_CUDA_DEVICE, 0);
    back_ = std::make_unique<TestPool>(kBack, KVIO_MEMORY_HOST_PINNED, 0);
  }
  void TearDown() override {
    device_.reset();
    back_.reset();
    if (executor_ != 0) {
      kvio_executor_close(executor_);
      EXPECT_EQ(liveRegistrations(), 0);
    }
  }

  uint64_t submit(uint64_t src, uint64_t dst, const std::vector<int64_t>& s,
                  const std::vector<int64_t>& d) {
    uint64_t transfer = 0;
    EXPECT_EQ(kvio_submit_args(executor_, src, dst, s.data(), d.data(),
                               static_cast<int64_t>(s.size()), 0, 0, kHost.L, &transfer),
              KVIO_STATUS_OK)
        << kvio_last_error();
    return transfer;
  }

  // Loads every token of the wrapped pool into the device pool (shuffled), backs the device
  // pool up into the pinned pool, and compares that with the oracle.
  ::testing::AssertionResult roundTrip(uint64_t pool, const uint8_t* data, std::mt19937_64& rng) {
    std::vector<int64_t> tokens(static_cast<size_t>(kHost.S()));
    for (size_t t = 0; t < tokens.size(); ++t) tokens[t] = static_cast<int64_t>(t);
    std::vector<int64_t> shuffled = tokens;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    back_->fill(kCanary);
    const uint64_t load = submit(pool, device_->pool().handle(), tokens, shuffled);
    const uint64_t backup =
        submit(device_->pool().handle(), back_->pool().handle(), tokens, tokens);
    const kvio_status a = kvio_transfer_wait(load, -1);
    const kvio_status b = kvio_transfer_wait(backup, -1);
    kvio_transfer_close(load);
    kvio_transfer_close(backup);
    if (a != KVIO_STATUS_OK || b != KVIO_STATUS_OK) {
      return ::testing::AssertionFailure() << "transfer failed: " << kvio_last_error();
    }
    Image host;
    host.buffers.emplace_back(data, data + kHost.regionBytes());
    Image device;
    device.buffers.emplace_back(static_cast<size_t>(kDevice.regionBytes()), 0);
    applyTransfer(kHost, host, kDevice, &device, tokens, shuffled, 0, 0, kHost.L);
    Image expected = back_->capture();
    applyTransfer(kDevice, device, kBack, &expected, tokens, tokens, 0, 0, kHost.L);
    return sameImage(expected, back_->capture(), "backup of the wrapped memory");
  }

  uint64_t executor_ = 0;
  std::unique_ptr<TestPool> device_, back_;
};

TEST_P(CudaLifetime, WrapCloseUnmapAndWrapAgainAtTheSameAddress) {
  std::mt19937_64 rng(1);
  const size_t bytes = static_cast<size_t>(kHost.regionBytes());
  const Mapping mapping(bytes);
  uint8_t* const data = mapping.get();
  ASSERT_NE(data, nullptr);
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round > 0) {  // the mapping owns what lies at `data` again after this
      ASSERT_EQ(munmap(data, bytes), 0);
      ASSERT_EQ(mapAt(data, bytes, MAP_FIXED), data);
    }
    fillRandom(data, bytes, rng);
    const uint64_t pool = wrapPinned(data, bytes);
    EXPECT_EQ(liveRegistrations(), 1);
    EXPECT_TRUE(roundTrip(pool, data, rng));
    EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
    EXPECT_EQ(liveRegistrations(), 0) << "kvio's registration outlived the closed pool";
  }
}

TEST_P(CudaLifetime, CallersWholeRegistrationIsUsedAndLeftRegistered) {
  std::mt19937_64 rng(2);
  const size_t bytes = static_cast<size_t>(kHost.regionBytes());
  const Mapping mapping(bytes);
  uint8_t* const data = mapping.get();
  ASSERT_NE(data, nullptr);
  CallerRegistration registration(data, bytes);
  ASSERT_EQ(registration.status(), cudaSuccess);
  fillRandom(data, bytes, rng);
  const uint64_t whole = wrapPinned(data, bytes);
  EXPECT_EQ(liveRegistrations(), 0) << "kvio registered memory the caller had registered";
  EXPECT_TRUE(roundTrip(whole, data, rng));
  EXPECT_EQ(kvio_pool_close_wait(whole, -1), KVIO_STATUS_OK);
  EXPECT_EQ(registration.unregister(), cudaSuccess) << "kvio unregistered the caller's memory";
}

TEST_P(CudaLifetime, CallersPartialRegistrationIsRefused) {
  const size_t bytes = static_cast<size_t>(kHost.regionBytes());  // 4 pages
  const Mapping mapping(bytes);
  uint8_t* const data = mapping.get();
  ASSERT_NE(data, nullptr);
  CallerRegistration registration(data + kPage, kPage);
  ASSERT_EQ(registration.status(), cudaSuccess);
  wrapPinned(data, bytes, KVIO_STATUS_INVALID_ARGUMENT);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("partly registered with CUDA already"), std::string::npos) << message;
  EXPECT_EQ(liveRegistrations(), 0);
  EXPECT_EQ(registration.unregister(), cudaSuccess);
}

TEST_P(CudaLifetime, PoolsSharingAHostPageBothWork) {
  std::mt19937_64 rng(3);
  const size_t bytes = static_cast<size_t>(kHost.regionBytes());
  const Mapping mapping(2 * bytes + kPage);
  uint8_t* const data = mapping.get();
  ASSERT_NE(data, nullptr);
  uint8_t* first = data + kPage / 2;
  uint8_t* second = first + bytes;
  fillRandom(data, 2 * bytes + kPage, rng);
  const uint64_t a = wrapPinned(first, bytes);
  const uint64_t b = wrapPinned(second, bytes);
  // Each region's first and last pages, which it shares with memory around it, are registered
  // apart: the first pool's first page, middle pages and last (shared) page; the second's middle
  // and last pages (with 4 KiB pages: 5 registrations).
  const Buffer bufferA{reinterpret_cast<uint64_t>(first), bytes};
  const Buffer bufferB{reinterpret_cast<uint64_t>(second), bytes};
  EXPECT_EQ(liveRegistrations(), registrationsFor({bufferA, bufferB}));
  EXPECT_TRUE(roundTrip(a, first, rng));
  EXPECT_TRUE(roundTrip(b, second, rng));
  EXPECT_EQ(kvio_pool_close(a), KVIO_STATUS_OK);
  EXPECT_EQ(liveRegistrations(), registrationsFor({bufferB}))
      << "the first pool's pages but the shared one are released";
  EXPECT_TRUE(roundTrip(b, second, rng));
  EXPECT_EQ(kvio_pool_close(b), KVIO_STATUS_OK);
  EXPECT_EQ(liveRegistrations(), 0);
}

// As above with the second pool 64 bytes further on: its own registration then begins in the
// middle of a token row (1984 bytes in), so whole-page copies of it cross from the first pool's
// registration into its own. direct and staged cut their copy-engine copies there (a copy
// engine resolves one registration per call; cudaMemcpyBatchAsync fails on a copy spanning
// two), kernel reads through the device addresses, which kvio checked are contiguous.
TEST_P(CudaLifetime, PoolSharingAHostPageMidRowWorks) {
  std::mt19937_64 rng(4);
  const size_t bytes = static_cast<size_t>(kHost.regionBytes());
  const Mapping mapping(2 * bytes + 2 * kPage);
  uint8_t* const data = mapping.get();
  ASSERT_NE(data, nullptr);
  uint8_t* first = data + kPage / 2;
  uint8_t* second = first + bytes + 64;
  fillRandom(data, 2 * bytes + 2 * kPage, rng);
  const uint64_t a = wrapPinned(first, bytes);
  const uint64_t b = wrapPinned(second, bytes);
  EXPECT_EQ(liveRegistrations(),  // as above
            registrationsFor({{reinterpret_cast<uint64_t>(first), bytes},
                              {reinterpret_cast<uint64_t>(second), bytes}}));
  EXPECT_TRUE(roundTrip(b, second, rng));
  EXPECT_TRUE(roundTrip(a, first, rng));
  EXPECT_EQ(kvio_pool_close(a), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close(b), KVIO_STATUS_OK);
  EXPECT_EQ(liveRegistrations(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, CudaLifetime,
                         ::testing::Values(KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT,
                                           KVIO_BACKEND_STAGED),
                         [](const ::testing::TestParamInfo<int32_t>& info) {
                           return std::string(kvio_name(KVIO_NAME_BACKEND, info.param));
                         });

}  // namespace
}  // namespace kvio_test
