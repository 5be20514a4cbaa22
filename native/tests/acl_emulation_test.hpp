// acl(): the ACL host emulation (acl_host_emulation.hpp). AclEmulationTest: the fixture of tests
// that run on it: SetUp installs it and makes device 0's default context the test thread's
// current context (tests that call the emulated functions directly need one; kvio itself makes
// its own current where it needs it); TearDown checks that the test left no stream, no device
// allocation and no host allocation alive, and no copy faulted (with `everything`, no event and no
// host registration either), then uninstalls it.
#ifndef KVIO_TESTS_ACL_EMULATION_TEST_HPP_
#define KVIO_TESTS_ACL_EMULATION_TEST_HPP_

#include <gtest/gtest.h>

#include <string>

#include "acl_host_emulation.hpp"
#include "oracle.hpp"

namespace kvio_test {

inline AclHostEmulation& acl() {
  return AclHostEmulation::instance();
}

/// `base` with each wrapped buffer tagged as emulated NPU memory of `device` before the wrap
/// (kvio asks aclrtPointerGetAttributes about memory wrapped as KVIO_MEMORY_ASCEND_DEVICE).
inline Placement npuMemory(int32_t device, Placement base = apart()) {
  base.tagRegion = [device](uint8_t* region, size_t bytes) {
    return acl().tagDevice(region, bytes, device);
  };
  return base;
}

/// A wrapped pool in emulated NPU memory of `device` (its buffers tagged as device memory).
struct NpuPool {
  explicit NpuPool(const Geometry& g, int32_t device = 0)
      : pool(g, KVIO_MEMORY_ASCEND_DEVICE, device, npuMemory(device)) {}
  TestPool pool;
};

class AclEmulationTest : public ::testing::Test {
 protected:
  explicit AclEmulationTest(bool everything) : everything_(everything) {}
  void SetUp() override {
    acl().install();
    acl().setThreadContext(acl().defaultContext(0));
  }
  void TearDown() override {
    const AclHostEmulation::Live live = acl().live();
    EXPECT_EQ(live.streams, 0);
    EXPECT_EQ(live.deviceAllocations, 0);
    EXPECT_EQ(live.hostAllocations, 0);
    std::string fault;
    EXPECT_EQ(acl().faults(&fault), 0) << fault;  // no copy ran over memory a device would refuse
    if (everything_) {
      EXPECT_EQ(live.events, 0);
      EXPECT_EQ(live.registrations, 0);
    }
    acl().uninstall();
    acl().setThreadContext(nullptr);
  }

 private:
  const bool everything_;
};

}  // namespace kvio_test

#endif  // KVIO_TESTS_ACL_EMULATION_TEST_HPP_
