// BasicDeviceScope (native/src/core/device_scope.hpp) against a fake runtime that keeps CUDA's
// rules: a device's primary context exists once created (retained, or by the first cudaSetDevice
// of the device, which also binds it and records the thread's runtime device); cudaGetDevice
// answers the current context's device, or the thread's recorded device (0 at first) when none
// is current. Covers a thread with no context (the device's context is current for the scope
// only, no context is created on device 0, the thread's runtime device is untouched), a thread
// on another device (its context comes back), one on the device already (no call), a context the
// caller created (it comes back, also on the same device), "any device" (-1), failures, and the
// fallback without the driver's context calls.
#include "core/device_scope.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace kvio_test {
namespace {

/// One thread's view of a fake CUDA runtime with `devices` devices.
struct FakeCuda {
  using Error = int;
  static constexpr int kSuccess = 0;
  static constexpr int kInvalidDevice = 101;
  using Context = const void*;

  struct Ctx {
    int device;
  };

  explicit FakeCuda(int devices)
      : created(static_cast<size_t>(devices), false),
        retained(static_cast<size_t>(devices), false) {
    for (int d = 0; d < devices; ++d) primaries.push_back(Ctx{d});
  }

  // The thread's state.
  Context current = nullptr;
  int selected = 0;  // the runtime's device for this thread (cudaSetDevice records it)
  // The process's state and what the scope did.
  std::vector<Ctx> primaries;
  std::vector<bool> created;   // primary contexts that exist
  std::vector<bool> retained;  // ... that kvio retained (primaryContext)
  bool haveContextCalls = true;
  int setDeviceCalls = 0;
  int setContextCalls = 0;
  int failDevice = -1;  // a device whose selection or retain fails
  int pendingError = 0;

  Context primary(int device) const { return &primaries[static_cast<size_t>(device)]; }
  FakeCuda& self() const { return const_cast<FakeCuda&>(*this); }
  Error failure() const {
    self().pendingError = kInvalidDevice;
    return kInvalidDevice;
  }

  bool contextCalls() const { return haveContextCalls; }
  Error currentContext(Context* out) const {
    *out = current;
    return kSuccess;
  }
  Error primaryContext(int device, Context* out) const {
    if (device < 0) {
      for (size_t d = 0; d < retained.size(); ++d) {
        if (retained[d]) {
          *out = primary(static_cast<int>(d));
          return kSuccess;
        }
      }
      return failure();
    }
    if (device == failDevice) return failure();
    self().created[static_cast<size_t>(device)] = true;
    self().retained[static_cast<size_t>(device)] = true;
    *out = primary(device);
    return kSuccess;
  }
  Error setCurrentContext(Context context) const {
    ++self().setContextCalls;
    self().current = context;
    return kSuccess;
  }
  Error getDevice(int* device) const {
    *device = current != nullptr ? static_cast<const Ctx*>(current)->device : selected;
    return kSuccess;
  }
  Error setDevice(int device) const {
    ++self().setDeviceCalls;
    if (device == failDevice) return failure();
    self().created[static_cast<size_t>(device)] = true;
    self().current = primary(device);
    self().selected = device;
    return kSuccess;
  }
  void clearError() const { self().pendingError = 0; }
};

using Scope = kvio::BasicDeviceScope<FakeCuda>;

// A worker thread that never touched CUDA submits to an executor of device 1. Inside, device
// 1's primary context is current (driver calls work); after, the thread has no context again,
// device 0 has none either, and the thread's runtime device is still 0.
TEST(DeviceScope, ThreadWithoutContextGetsTheDeviceForTheScopeOnly) {
  FakeCuda cuda(2);
  {
    Scope scope(cuda, 1);
    EXPECT_EQ(scope.error(), 0);
    EXPECT_EQ(cuda.current, cuda.primary(1));
  }
  EXPECT_EQ(cuda.current, nullptr);
  EXPECT_FALSE(cuda.created[0]) << "leaving the scope created a context on device 0";
  EXPECT_EQ(cuda.selected, 0) << "the thread's own calls would now go to device 1";
  EXPECT_EQ(cuda.setDeviceCalls, 0);
}

// cudaGetDevice says 0 on a thread with no context, which is not a context: the scope makes
// device 0's current for driver calls.
TEST(DeviceScope, DeviceZeroIsBoundOnAThreadWithoutContext) {
  FakeCuda cuda(1);
  {
    Scope scope(cuda, 0);
    EXPECT_EQ(cuda.current, cuda.primary(0));
  }
  EXPECT_EQ(cuda.current, nullptr);
}

TEST(DeviceScope, AnotherDevicesContextComesBack) {
  FakeCuda cuda(2);
  ASSERT_EQ(cuda.setDevice(0), 0);
  {
    Scope scope(cuda, 1);
    EXPECT_EQ(cuda.current, cuda.primary(1));
  }
  EXPECT_EQ(cuda.current, cuda.primary(0));
  EXPECT_EQ(cuda.selected, 0);
}

TEST(DeviceScope, ThreadOnTheDeviceMakesNoCall) {
  FakeCuda cuda(2);
  ASSERT_EQ(cuda.setDevice(1), 0);
  const int calls = cuda.setDeviceCalls;
  {
    Scope scope(cuda, 1);
    EXPECT_EQ(scope.error(), 0);
  }
  EXPECT_EQ(cuda.setDeviceCalls, calls);
  EXPECT_EQ(cuda.setContextCalls, 0);
  EXPECT_EQ(cuda.current, cuda.primary(1));
}

// A context the caller made (cuCtxCreate, a green context) is current: kvio's streams belong to
// the primary context, so that is current for the scope, on the same device too, and the
// caller's comes back as it was.
TEST(DeviceScope, CallersOwnContextComesBack) {
  for (int device : {0, 1}) {
    SCOPED_TRACE("scope on device " + std::to_string(device));
    FakeCuda cuda(2);
    const FakeCuda::Ctx own{0};
    cuda.current = &own;
    {
      Scope scope(cuda, device);
      EXPECT_EQ(cuda.current, cuda.primary(device));
    }
    EXPECT_EQ(cuda.current, &own);
  }
}

TEST(DeviceScope, FailedSelectionIsReportedClearedAndChangesNothing) {
  FakeCuda cuda(2);
  ASSERT_EQ(cuda.setDevice(0), 0);
  cuda.failDevice = 1;
  {
    Scope scope(cuda, 1);
    EXPECT_EQ(scope.error(), FakeCuda::kInvalidDevice);
    EXPECT_EQ(cuda.pendingError, 0) << "the failure was left for the next call to report";
  }
  EXPECT_EQ(cuda.current, cuda.primary(0));
  EXPECT_EQ(cuda.setContextCalls, 0);
}

// Device -1 (memory registered for every device): the first device's context kvio uses, for
// the scope, whatever context the thread has (another device's, one the caller made: kvio
// registered nothing there), and the thread's own back after; a thread already in it makes no
// call; with none used, an error and no change.
TEST(DeviceScope, AnyDeviceBindsAContextKvioUses) {
  FakeCuda cuda(3);
  {
    Scope none(cuda, -1);
    EXPECT_EQ(none.error(), FakeCuda::kInvalidDevice);
    EXPECT_EQ(cuda.current, nullptr);
  }
  { Scope used(cuda, 2); }
  {
    Scope any(cuda, -1);
    EXPECT_EQ(any.error(), 0);
    EXPECT_EQ(cuda.current, cuda.primary(2));
  }
  EXPECT_EQ(cuda.current, nullptr);
  EXPECT_FALSE(cuda.created[0]);
  ASSERT_EQ(cuda.setDevice(1), 0);  // the thread is on another device's context
  {
    Scope any(cuda, -1);
    EXPECT_EQ(any.error(), 0);
    EXPECT_EQ(cuda.current, cuda.primary(2));
  }
  EXPECT_EQ(cuda.current, cuda.primary(1));
  const FakeCuda::Ctx own{1};  // a context the caller made
  cuda.current = &own;
  {
    Scope any(cuda, -1);
    EXPECT_EQ(cuda.current, cuda.primary(2));
  }
  EXPECT_EQ(cuda.current, &own);
  cuda.current = cuda.primary(2);
  const int calls = cuda.setContextCalls;
  {
    Scope any(cuda, -1);
    EXPECT_EQ(cuda.current, cuda.primary(2));
  }
  EXPECT_EQ(cuda.setContextCalls, calls);
}

// Without the driver's context calls, the previous device is selected again (the rules before).
TEST(DeviceScope, WithoutContextCallsThePreviousDeviceIsSelectedAgain) {
  FakeCuda cuda(2);
  cuda.haveContextCalls = false;
  ASSERT_EQ(cuda.setDevice(0), 0);
  {
    Scope scope(cuda, 1);
    EXPECT_EQ(cuda.current, cuda.primary(1));
  }
  EXPECT_EQ(cuda.current, cuda.primary(0));
  EXPECT_EQ(cuda.setContextCalls, 0);
}

}  // namespace
}  // namespace kvio_test
