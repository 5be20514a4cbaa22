// Which ACL context kvio's calls run in, through the public API and the ACL host emulation
// (which keeps ACL's rules: no context on a new thread, the calls that need one refused with
// ACL_ERROR_RT_CONTEXT_NULL, aclrtSetDevice counted, one process-wide table of host
// registrations). Covers a
// fresh thread that creates pools and executors, submits, waits and closes (kvio binds the
// device's default context, which stays: ACL cannot unbind), threads with a context of their
// own (of another device, or a created one of the same device: they get it back after every
// kvio call), aclrtSetDevice called once per device however many transfers run, one host
// buffer wrapped for a second device (refused: the runtime's registrations are process-wide),
// and failures whose text is not left behind.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acl_emulation_test.hpp"
#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"
#include "rejection_assertions.hpp"

namespace kvio_test {
namespace {

using namespace kvio::ascend;

const Geometry kDevice{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 1, 64};
const Geometry kHost{KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 1, 64};
const Geometry kHostAllocated{
    KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 1, 64};

class AscendContextTest : public AclEmulationTest {
 protected:
  AscendContextTest() : AclEmulationTest(true) {}

  // Creates pools (allocated and wrapped pinned host memory, NPU memory) and an executor on
  // `device`, moves pages both ways, and closes everything, checking after every kvio call that
  // the thread's context is `expected` (nullptr: the device's default context, which kvio
  // leaves bound on a thread that had none).
  void roundTrip(int32_t device, void* expected) {
    void* const want = expected != nullptr ? expected : acl().defaultContext(device);
    const std::vector<int64_t> pages{1, 2, 3};
    {
      kvio::Executor ex = kvio::Executor::ascend(device);
      EXPECT_EQ(acl().threadContext(), want);
      TestPool allocated(kHostAllocated, KVIO_MEMORY_ASCEND_HOST_PINNED, device);
      EXPECT_EQ(acl().threadContext(), want);
      TestPool wrapped(kHost, KVIO_MEMORY_ASCEND_HOST_PINNED, device);
      EXPECT_EQ(acl().threadContext(), want);
      NpuPool npu(kDevice, device);
      kvio::transferDimExchange(ex, wrapped.pool(), npu.pool.pool(), pages, pages, 0, 2).wait();
      EXPECT_EQ(acl().threadContext(), want);
      kvio::transferDimExchange(ex, npu.pool.pool(), allocated.pool(), pages, pages, 0, 2).wait();
      EXPECT_EQ(acl().threadContext(), want);
    }
    EXPECT_EQ(acl().threadContext(), want);  // closing ran ACL calls too
    EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
  }
};

// A thread that never touched ACL: every kvio call works (nothing is refused for want of a
// context), and afterwards the thread holds device 0's default context (ACL has no unbinding).
TEST_F(AscendContextTest, FreshThreadWithoutContextWorksAndKeepsTheDefaultContext) {
  acl().reset();
  std::thread([&] {
    ASSERT_EQ(acl().threadContext(), nullptr);
    roundTrip(0, nullptr);
  }).join();
  EXPECT_EQ(acl().live().registrations, 0);
  EXPECT_EQ(acl().setDeviceCalls(0), 1);
}

// A thread in a context of another device gets it back after every kvio call.
TEST_F(AscendContextTest, ThreadOnAnotherDeviceGetsItsContextBack) {
  acl().reset();
  acl().setDeviceCount(2);
  std::thread([&] {
    void* own = acl().createContext(1);
    acl().setThreadContext(own);
    roundTrip(0, own);
    void* defaultOfDevice1 = acl().defaultContext(1);
    acl().setThreadContext(defaultOfDevice1);
    roundTrip(0, defaultOfDevice1);
  }).join();
}

// A context the caller created on the same device (not its default one) survives kvio calls on
// the test thread, and so does the default context of another device.
TEST_F(AscendContextTest, CallerSetContextOnTheTestThreadSurvives) {
  acl().reset();
  acl().setDeviceCount(2);
  void* own = acl().createContext(0);
  acl().setThreadContext(own);
  roundTrip(0, own);
  acl().setThreadContext(acl().defaultContext(1));
  roundTrip(0, acl().defaultContext(1));
  roundTrip(1, acl().defaultContext(1));
}

// aclrtSetDevice adds one to a device's reference count at every call: kvio calls it once per
// device (to obtain the default context), however many threads and transfers run.
TEST_F(AscendContextTest, SetDeviceIsCalledOncePerDevice) {
  acl().reset();
  acl().setDeviceCount(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const int32_t device = t % 2;
      kvio::Executor ex = kvio::Executor::ascend(device);
      // kvio's allocation: two threads' wrapped heap buffers for devices 0 and 1 could share a
      // page, which ACL's process-wide registration table refuses (seen under ASan's allocator).
      TestPool host(kHostAllocated, KVIO_MEMORY_ASCEND_HOST_PINNED, device);
      NpuPool npu(kDevice, device);
      for (int i = 0; i < 10; ++i) {
        kvio::transferDimExchange(ex, host.pool(), npu.pool.pool(), {i % 8}, {(i + 1) % 8}, 0, 2)
            .wait();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(acl().setDeviceCalls(0), 1);
  EXPECT_EQ(acl().setDeviceCalls(1), 1);
  EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
  EXPECT_EQ(acl().live().registrations, 0);
}

// CANN's runtime keeps one process-wide table of registered host memory: the same pages cannot
// be registered for a second device (aclrtHostRegisterV2 answers "already registered") and are
// unregistered once. kvio refuses to wrap pages it pinned for device 0 as pinned memory of
// device 1, naming device 0 (without kvio's check the emulation's "already registered" would be
// reported as someone else's registration), leaves device 0's pool as it was, and accepts the
// buffer for device 1 once device 0's pool is gone, also when that pool was let go of on a
// thread with no context; a transfer on device 1 then uses it.
TEST_F(AscendContextTest, HostBufferWrappedForASecondDeviceIsRefused) {
  acl().reset();
  acl().setDeviceCount(2);
  std::vector<uint8_t> buffer(static_cast<size_t>(kHost.regionBytes()), 7);
  const kvio_pool_spec spec = kHost.spec().toC();
  uint64_t on0 = 0, on1 = 0;
  ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                  reinterpret_cast<uint64_t>(buffer.data()), buffer.size(), &on0),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 1,
                                  reinterpret_cast<uint64_t>(buffer.data()), buffer.size(), &on1),
            KVIO_STATUS_INVALID_ARGUMENT);
  const std::string message = kvio_last_error();
  for (const char* part : {"pinned by kvio for Ascend device 0 already", "process-wide",
                           "again for Ascend device 1", "separate host buffers"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
  }
  EXPECT_EQ(on1, 0u);
  EXPECT_EQ(acl().registrations(0), registrationsFor(buffer.data(), buffer.size()));
  EXPECT_EQ(acl().registrations(1), 0);
  EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();  // refused before ACL was asked
  // Device 0's pool let go of on a thread with no context: its registration ends.
  std::thread([&] {
    ASSERT_EQ(acl().threadContext(), nullptr);
    EXPECT_EQ(kvio_pool_close(on0), KVIO_STATUS_OK);
  }).join();
  EXPECT_EQ(acl().live().registrations, 0);
  std::mt19937_64 rng(46);
  fillRandom(buffer.data(), buffer.size(), rng);
  {
    kvio::Pool pool1 = kvio::Pool::wrap(kHost.spec(), buffer.data(), buffer.size(),
                                        kvio::MemoryKind::AscendHostPinned, 1);
    EXPECT_EQ(acl().registrations(1), registrationsFor(buffer.data(), buffer.size()));
    kvio::Executor ex = kvio::Executor::ascend(1);
    NpuPool npu(kDevice, 1);
    npu.pool.fill(kCanary);
    Image expected = npu.pool.capture();
    Image host;
    host.buffers.push_back(buffer);
    kvio::transferDimExchange(ex, pool1, npu.pool.pool(), {0, 1}, {2, 3}, 0, 2).wait();
    applyTransfer(kHost, host, kDevice, &expected, expandPages({0, 1}, kHost.ps),
                  expandPages({2, 3}, kHost.ps), 0, 0, 2);
    EXPECT_TRUE(sameImage(expected, npu.pool.capture(), "device pool"));
  }
  EXPECT_EQ(acl().live().registrations, 0);
  EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
}

// A failure inside a destructor has nobody to report to: its text is read (cleared), so the
// thread's next aclGetRecentErrMsg does not blame it on a later call.
TEST_F(AscendContextTest, DestructorFailuresLeaveNoErrorText) {
  const AclApi api = acl().table();
  uint64_t stream = 0;
  {
    kvio::Executor ex = kvio::Executor::ascend(0);
    ASSERT_EQ(kvio_executor_ascend_stream(ex.handle(), &stream), KVIO_STATUS_OK);
    acl().failCall("aclrtDestroyStream", 0, ACL_ERROR_RT_PARAM_INVALID);
  }
  EXPECT_STREQ(api.getRecentErrMsg(), "");
  void* pinned = nullptr;
  {
    TestPool allocated(kHostAllocated, KVIO_MEMORY_ASCEND_HOST_PINNED, 0);
    pinned = allocated.region(0);
    acl().failCall("aclrtFreeHost", 0, ACL_ERROR_RT_PARAM_INVALID);
  }
  EXPECT_STREQ(api.getRecentErrMsg(), "");
  // Never freed, and whole pages of its own: kvio keeps these pages listed as stale for the rest
  // of the process (their unregistration fails below), and a later test given any of them by the
  // allocator would be refused. One registration, starting at `kept`.
  const uint64_t page = hostPageBytes();
  const size_t bytes = static_cast<size_t>(kHost.regionBytes());
  static void* const kept =
      std::aligned_alloc(page, (bytes + page - 1) / page * page);  // NOLINT: kept for good
  ASSERT_NE(kept, nullptr);
  std::memset(kept, 0, bytes);
  {
    kvio::Pool wrapped =
        kvio::Pool::wrap(kHost.spec(), kept, bytes, kvio::MemoryKind::AscendHostPinned, 0);
    acl().failCall("aclrtHostUnregister", 0, ACL_ERROR_RT_PARAM_INVALID);
  }
  EXPECT_STREQ(api.getRecentErrMsg(), "");
  EXPECT_EQ(acl().counts().rejected, 3);
  // What the failed calls left alive, ended here (the test thread has device 0's context).
  EXPECT_EQ(api.destroyStream(reinterpret_cast<aclrtStream>(stream)), ACL_SUCCESS);
  EXPECT_EQ(api.freeHost(pinned), ACL_SUCCESS);
  EXPECT_EQ(api.hostUnregister(kept), ACL_SUCCESS);
}

// A failure to make a device's context current says what the runtime said: the scope clears
// the thread's error text (so that no later call is blamed), and the message keeps it. Device 3
// (of 4) is one no other test of this binary makes current, so its first use calls
// aclrtSetDevice, which fails here; the thread's context is unchanged, and the next attempt
// works.
TEST_F(AscendContextTest, FailedDeviceSelectionKeepsTheRuntimesText) {
  acl().setDeviceCount(4);
  void* const before = acl().threadContext();
  acl().failCall("aclrtSetDevice", 0, ACL_ERROR_RT_PARAM_INVALID);
  uint64_t executor = 0;
  EXPECT_EQ(kvio_executor_create_ascend(3, KVIO_ASCEND_OWN_STREAM, &executor),
            KVIO_STATUS_BACKEND_ERROR);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("making Ascend device 3's default context current"), std::string::npos)
      << message;
  const std::string injected = acl().recentError();
  ASSERT_FALSE(injected.empty());
  EXPECT_NE(message.find(injected), std::string::npos) << message << " lacks " << injected;
  EXPECT_STREQ(acl().table().getRecentErrMsg(), "");
  EXPECT_EQ(acl().threadContext(), before);
  ASSERT_EQ(kvio_executor_create_ascend(3, KVIO_ASCEND_OWN_STREAM, &executor), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// Host registrations act for one device: a pinned pool of device 1 is refused by an executor of
// device 0 before any byte moves (it would not be pinned for device 0).
TEST_F(AscendContextTest, PinnedPoolOfAnotherDeviceIsRefused) {
  acl().setDeviceCount(2);
  TestPool wrapped(kHost, KVIO_MEMORY_ASCEND_HOST_PINNED, 1);
  NpuPool npu(kDevice, 0);
  npu.pool.fill(kCanary);
  const Image before = npu.pool.capture();
  kvio::Executor ex = kvio::Executor::ascend(0);
  const std::vector<int64_t> pages{1, 2};
  expectError(
      [&] {
        kvio::transferDimExchange(ex, wrapped.pool(), npu.pool.pool(), pages, pages, 0, 2).wait();
      },
      KVIO_STATUS_UNSUPPORTED, {"pinned host memory for Ascend device 1"},
      "a pinned pool of device 1 on device 0");
  EXPECT_TRUE(sameImage(before, npu.pool.capture(), "device pool"));
  EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
}

// kvio issues a caller stream's work from the device's default context, so the stream must
// belong to it (docs/ascend.md): CANN's runtime refuses work on a stream of another context
// (ACL_ERROR_RT_STREAM_CONTEXT), even one of the same device, and so does the emulation. The
// transfer fails with that error named; the executor and the caller's stream stay usable.
TEST_F(AscendContextTest, CallerStreamOfACreatedContextFailsWithTheRuntimesError) {
  const AclApi api = acl().table();
  void* const mine = acl().threadContext();
  void* own = acl().createContext(0);
  acl().setThreadContext(own);
  aclrtStream stream = nullptr;
  ASSERT_EQ(api.createStream(&stream), ACL_SUCCESS);
  acl().setThreadContext(mine);
  {
    kvio::Executor ex = kvio::Executor::ascend(0, reinterpret_cast<uint64_t>(stream));
    TestPool wrapped(kHost, KVIO_MEMORY_ASCEND_HOST_PINNED, 0);
    NpuPool npu(kDevice, 0);
    const std::vector<int64_t> pages{1, 2};
    acl().reset();
    expectError(
        [&] {
          kvio::transferDimExchange(ex, wrapped.pool(), npu.pool.pool(), pages, pages, 0, 2).wait();
        },
        KVIO_STATUS_BACKEND_ERROR, {"ACL_ERROR_RT_STREAM_CONTEXT"},
        "work on a stream of another context");
    // The first copy was refused, so nothing was queued: the transfer fails at once, without an
    // event (which that stream would refuse too) and without waiting for the caller's stream.
    EXPECT_EQ(acl().counts().recordEvent, 0);
    EXPECT_EQ(acl().counts().synchronizeStream, 0);
    EXPECT_EQ(acl().threadContext(), mine);
  }
  acl().setThreadContext(own);
  EXPECT_EQ(api.destroyStream(stream), ACL_SUCCESS);
  acl().setThreadContext(mine);
}

// Without aclrtGetCurrentContext/aclrtSetCurrentContext (an ACL table lacking them), kvio falls
// back to selecting the device with aclrtSetDevice, and still works on a fresh thread.
TEST_F(AscendContextTest, WithoutContextCallsDevicesAreSelected) {
  AclApi table = acl().table();
  table.getCurrentContext = nullptr;
  table.setCurrentContext = nullptr;
  ASSERT_EQ(kvio_test_ascend_runtime(&table, sizeof(table)), KVIO_STATUS_OK);
  acl().reset();
  std::thread([&] {
    ASSERT_EQ(acl().threadContext(), nullptr);
    roundTrip(0, nullptr);
  }).join();
  EXPECT_GE(acl().setDeviceCalls(0), 1);
}

}  // namespace
}  // namespace kvio_test
