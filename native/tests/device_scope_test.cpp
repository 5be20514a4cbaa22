// BasicDeviceScope (native/src/cuda/device_scope.hpp) against a fake runtime that keeps CUDA's
// rules since 12.0: a device's primary context is created by the first cudaSetDevice of it,
// which also binds it to the thread; cudaGetDevice answers the current context's device, or the
// thread's last selected device (0 at first) when none is current; driver calls need a current
// context. Covers a thread with no context (the device's context is bound for the scope, none
// is created on device 0, none is left current), a thread on another device (its context comes
// back), one on the device already (no call), a caller-created context (it comes back, not the
// primary one), failures, and the fallback without the driver's context calls.
#include "cuda/device_scope.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace kvio_test {
namespace {

/// One thread's view of a fake CUDA runtime with `devices` devices.
struct FakeCuda {
  using Error = int;
  static constexpr int kSuccess = 0;
  using Context = const void*;

  struct Ctx {
    int device;
  };

  explicit FakeCuda(int devices) : created(static_cast<size_t>(devices), false) {
    for (int d = 0; d < devices; ++d) primaries.push_back(Ctx{d});
  }

  // The thread's state.
  Context current = nullptr;
  int selected = 0;  // the runtime's device for a thread with no current context
  // The process's state and what the scope did.
  std::vector<Ctx> primaries;
  std::vector<bool> created;  // primary contexts created
  bool contextCalls = true;
  int setDeviceCalls = 0;
  int setContextCalls = 0;
  int failSetDevice = -1;  // a device whose cudaSetDevice fails
  int pendingError = 0;

  Context primary(int device) const { return &primaries[static_cast<size_t>(device)]; }

  bool currentContext(Context* out) const {
    if (!contextCalls) return false;
    *out = current;
    return true;
  }
  Error setCurrentContext(Context context) const {
    auto* self = const_cast<FakeCuda*>(this);
    ++self->setContextCalls;
    self->current = context;
    return kSuccess;
  }
  Error getDevice(int* device) const {
    *device = current != nullptr ? static_cast<const Ctx*>(current)->device : selected;
    return kSuccess;
  }
  Error setDevice(int device) const {
    auto* self = const_cast<FakeCuda*>(this);
    ++self->setDeviceCalls;
    if (device == failSetDevice) {
      self->pendingError = 101;
      return 101;  // cudaErrorInvalidDevice
    }
    self->created[static_cast<size_t>(device)] = true;
    self->current = primary(device);
    self->selected = device;
    return kSuccess;
  }
  void clearError() const { const_cast<FakeCuda*>(this)->pendingError = 0; }
};

using Scope = kvio::cuda::BasicDeviceScope<FakeCuda>;

// The H200 engine thread's case inverted: a thread that never touched CUDA submits to an
// executor of device 1. Inside, device 1's context is current (driver calls work); after, the
// thread has no context again and device 0 has none either.
TEST(DeviceScope, ThreadWithoutContextGetsTheDeviceForTheScopeOnly) {
  FakeCuda cuda(2);
  {
    Scope scope(cuda, 1);
    EXPECT_EQ(scope.error(), 0);
    EXPECT_EQ(cuda.current, cuda.primary(1));
  }
  EXPECT_EQ(cuda.current, nullptr);
  EXPECT_FALSE(cuda.created[0]) << "leaving the scope created a context on device 0";
}

// cudaGetDevice says 0 on a thread with no context, which is not a context: the scope binds
// device 0's for driver calls.
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

// A context the caller made (cuCtxCreate) on device 0 is current: it comes back as it was, not
// device 0's primary context.
TEST(DeviceScope, CallersOwnContextComesBack) {
  FakeCuda cuda(2);
  const FakeCuda::Ctx own{0};
  cuda.current = &own;
  {
    Scope scope(cuda, 1);
    EXPECT_EQ(cuda.current, cuda.primary(1));
  }
  EXPECT_EQ(cuda.current, &own);
  EXPECT_FALSE(cuda.created[0]);
}

TEST(DeviceScope, FailedSelectionIsReportedClearedAndChangesNothing) {
  FakeCuda cuda(2);
  ASSERT_EQ(cuda.setDevice(0), 0);
  cuda.failSetDevice = 1;
  {
    Scope scope(cuda, 1);
    EXPECT_EQ(scope.error(), 101);
    EXPECT_EQ(cuda.pendingError, 0) << "the failure was left for the next call to report";
  }
  EXPECT_EQ(cuda.current, cuda.primary(0));
  EXPECT_EQ(cuda.setContextCalls, 0);
}

// Without the driver's context calls, the previous device is selected again (the rules before).
TEST(DeviceScope, WithoutContextCallsThePreviousDeviceIsSelectedAgain) {
  FakeCuda cuda(2);
  cuda.contextCalls = false;
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
