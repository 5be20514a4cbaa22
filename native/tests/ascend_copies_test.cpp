// Tests of the kernel_ascend copy engine (native/src/ascend/ascend_copies.hpp, issued by the
// shared issuer of native/src/engine/copy_engine.hpp) driven directly with the ACL host
// emulation's table: heights above aclrtMemcpy2dAsync's limit are split, not refused; copies
// the 2-D call cannot do (device to device, a broadcast source of pitch 0) become 1-D copies;
// batches are bounded; copies over two adjacent allocations are cut; and the emulation itself
// answers the documented argument errors, refuses copies spanning two allocations, and keeps
// ACL's context rules (so that the executor's tests would catch a bad call).
#include "ascend/ascend_copies.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl_host_emulation.hpp"
#include "ascend/host_pinning.hpp"

namespace kvio_test {
namespace {

using namespace kvio::ascend;

struct Buffers {
  explicit Buffers(const AclApi& a, size_t hostSize, size_t deviceSize)
      : api(a), hostBytes(hostSize), deviceBytes(deviceSize) {
    // The emulated calls need a current context on the calling thread: device 0's default one.
    AclHostEmulation& acl = AclHostEmulation::instance();
    acl.setThreadContext(acl.defaultContext(0));
    EXPECT_EQ(api.mallocHost(&host, hostBytes), ACL_SUCCESS);
    EXPECT_EQ(api.malloc(&device, deviceBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EXPECT_EQ(api.createStream(&stream), ACL_SUCCESS);
  }
  ~Buffers() {
    api.freeHost(host);
    api.free(device);
    api.destroyStream(stream);
    AclHostEmulation::instance().setThreadContext(nullptr);
  }
  uint64_t h() const { return reinterpret_cast<uint64_t>(host); }
  uint64_t d() const { return reinterpret_cast<uint64_t>(device); }
  // The regions a pool over each buffer would have.
  std::vector<kvio::engine::Region> hostRegion() const { return {{h(), hostBytes}}; }
  std::vector<kvio::engine::Region> deviceRegion() const { return {{d(), deviceBytes}}; }
  // One aclrtMemcpyBatchAsync on the stream: dsts[i] <- srcs[i], sizes[i] bytes (each
  // destination's size too), under one attribute (where destinations and sources lie);
  // *failIndex: the entry the runtime names.
  aclError batch(std::vector<void*> dsts, std::vector<void*> srcs, std::vector<size_t> sizes,
                 aclrtMemLocationType dstType, aclrtMemLocationType srcType,
                 size_t* failIndex) const {
    aclrtMemcpyBatchAttr attr{};
    attr.dstLoc.type = dstType;
    attr.srcLoc.type = srcType;
    size_t attrIndex = 0;
    return api.memcpyBatchAsync(dsts.data(), sizes.data(), srcs.data(), sizes.data(), dsts.size(),
                                &attr, &attrIndex, 1, failIndex, stream);
  }
  AclApi api;
  uint64_t hostBytes, deviceBytes;
  void* host = nullptr;
  void* device = nullptr;
  aclrtStream stream = nullptr;
};

// CANN documents that pinning pageable memory with aclrtHostRegisterV2 leads to errors on OS
// kernels 5.10 and older: kvio refuses its wraps of caller memory there (ascend_memory.cpp).
TEST(AscendHostPinning, PageableMemoryIsPinnedOnlyAboveKernel510) {
  EXPECT_FALSE(kernelPinsPageableMemory("5.10.0-60.18.0.50.oe2203.aarch64"));  // openEuler 22.03
  EXPECT_FALSE(kernelPinsPageableMemory("4.19.90-24.4.v2101.ky10.aarch64"));   // Kylin V10
  EXPECT_FALSE(kernelPinsPageableMemory("5.4.0"));
  EXPECT_FALSE(kernelPinsPageableMemory("3.10"));
  EXPECT_TRUE(kernelPinsPageableMemory("5.11.0"));
  EXPECT_TRUE(kernelPinsPageableMemory("5.15.0-91-generic"));
  EXPECT_TRUE(kernelPinsPageableMemory("6.6.0-28.0.0.34.oe2403.aarch64"));
  EXPECT_TRUE(kernelPinsPageableMemory("10.0"));
  // Not "major.minor": nothing says it cannot, so it is not refused on a guess.
  EXPECT_TRUE(kernelPinsPageableMemory("unknown"));
  EXPECT_TRUE(kernelPinsPageableMemory(""));
  EXPECT_TRUE(kernelPinsPageableMemory(nullptr));
}

// aclrtMemcpyBatchAsync is experimental in CANN's reference: kvio uses it only when
// KVIO_ASCEND_BATCH is exactly "1".
TEST(AscendCopies, BatchCopiesAreOptIn) {
  EXPECT_TRUE(ascendBatchCopiesWanted("1"));
  EXPECT_FALSE(ascendBatchCopiesWanted(nullptr));
  EXPECT_FALSE(ascendBatchCopiesWanted(""));
  EXPECT_FALSE(ascendBatchCopiesWanted("0"));
  EXPECT_FALSE(ascendBatchCopiesWanted("10"));
  EXPECT_FALSE(ascendBatchCopiesWanted("yes"));
}

TEST(AscendCopies, HeightsAboveTheLimitAreSplit) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  const AclApi api = acl.table();
  const uint64_t rows = kMax2dHeight + 3;
  Buffers b(api, rows * 2, rows * 3);  // width 1: source pitch 2, destination pitch 3
  auto* src = static_cast<uint8_t*>(b.host);
  for (uint64_t i = 0; i < rows * 2; ++i) src[i] = static_cast<uint8_t>(i * 13 + 7);
  std::memset(b.device, 0, rows * 3);
  const std::vector<kvio_copy2d> plan = {{b.h(), b.d(), 1, rows, 2, 3}};
  IssueState state;
  const IssueTarget target{&api, b.stream, ACL_MEMCPY_HOST_TO_DEVICE, 0};
  ASSERT_EQ(issuePlan(target, plan, b.hostRegion(), b.deviceRegion(), &state), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(acl.counts().memcpy2dAsync, 2);
  EXPECT_EQ(acl.counts().rejected, 0) << acl.recentError();
  const auto* dst = static_cast<const uint8_t*>(b.device);
  for (uint64_t r = 0; r < rows; r += 9973) ASSERT_EQ(dst[r * 3], src[r * 2]) << "row " << r;
  ASSERT_EQ(dst[(rows - 1) * 3], src[(rows - 1) * 2]);
}

// aclrtMemcpy2dAsync takes widths up to 5000000 bytes: the rows of a wider 2-D copy go as 1-D
// copies (the emulation refuses a wider 2-D copy, as the runtime does); the bytes arrive.
TEST(AscendCopies, WidthsAboveTheLimitBecomeRows) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  const AclApi api = acl.table();
  const uint64_t width = kMax2dWidth + 64, pitch = width + 64;
  Buffers b(api, 3 * pitch, 3 * pitch);
  auto* src = static_cast<uint8_t*>(b.host);
  for (uint64_t i = 0; i < 3 * pitch; ++i) src[i] = static_cast<uint8_t>(i * 31 + 5);
  std::memset(b.device, 0, 3 * pitch);
  for (uint64_t w : {kMax2dWidth, width}) {
    acl.reset();
    IssueState state;
    ASSERT_EQ(
        issuePlan({&api, b.stream, ACL_MEMCPY_HOST_TO_DEVICE, 0},
                  {{b.h(), b.d(), w, 3, pitch, pitch}}, b.hostRegion(), b.deviceRegion(), &state),
        KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(acl.counts().rejected, 0) << acl.recentError();
    EXPECT_EQ(acl.counts().memcpy2dAsync, w == kMax2dWidth ? 1 : 0) << "width " << w;
    for (uint64_t r = 0; r < 3; ++r) {
      const auto* d = static_cast<const uint8_t*>(b.device) + r * pitch;
      EXPECT_EQ(std::memcmp(d, src + r * pitch, w), 0) << "width " << w << ", row " << r;
    }
  }
}

TEST(AscendCopies, PitchZeroAndDeviceToDeviceBecomeRows) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  const AclApi api = acl.table();
  Buffers b(api, 4096, 8192);
  std::memset(b.host, 9, 64);
  // A broadcast source (pitch 0, 3 rows) and a device-to-device strided copy (4 rows).
  IssueState state;
  ASSERT_EQ(issuePlan({&api, b.stream, ACL_MEMCPY_HOST_TO_DEVICE, 0},
                      {{b.h(), b.d(), 64, 3, 0, 128}}, b.hostRegion(), b.deviceRegion(), &state),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(acl.counts().memcpy2dAsync, 0);
  EXPECT_EQ(acl.counts().memcpyBatchAsync, 1);
  EXPECT_EQ(acl.counts().batchedCopies, 3);
  acl.reset();
  ASSERT_EQ(issuePlan({&api, b.stream, ACL_MEMCPY_DEVICE_TO_DEVICE, 0},
                      {{b.d(), b.d() + 4096, 32, 4, 128, 64}}, b.deviceRegion(), b.deviceRegion(),
                      &state),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(acl.counts().memcpy2dAsync, 0);
  // aclrtMemcpyBatchAsync copies host to device or device to host only: one copy per row.
  EXPECT_EQ(acl.counts().memcpyBatchAsync, 0);
  EXPECT_EQ(acl.counts().memcpyAsync, 4);
  EXPECT_EQ(acl.counts().rejected, 0) << acl.recentError();
  const auto* d = static_cast<const uint8_t*>(b.device);
  EXPECT_EQ(d[4096 + 64], 9);  // row 1 of the second copy: from row 1 of the broadcast
}

TEST(AscendCopies, BatchesHoldAtMostMaxBatchCopies) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  const AclApi api = acl.table();
  const size_t n = kMaxBatch + 10;
  Buffers b(api, n * 16, n * 16);
  std::vector<kvio_copy2d> plan;
  for (size_t i = 0; i < n; ++i) {  // reversed: nothing merges
    const uint64_t j = n - 1 - i;
    plan.push_back({b.h() + j * 16, b.d() + j * 16, 8, 1, 8, 8});
  }
  IssueState state;
  ASSERT_EQ(issuePlan({&api, b.stream, ACL_MEMCPY_HOST_TO_DEVICE, 0}, plan, b.hostRegion(),
                      b.deviceRegion(), &state),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(acl.counts().memcpyBatchAsync, 2);
  EXPECT_EQ(acl.counts().batchedCopies, static_cast<int64_t>(n));
}

// Two device buffers tagged back to back out of one block: the emulation refuses any copy
// that spans both (1-D, a 2-D footprint, a batch entry), and the issuer, given the two
// regions, cuts a copy over both so that every call stays inside one.
TEST(AscendCopies, CopiesSpanningAdjacentAllocationsAreRefusedAndCut) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  const AclApi api = acl.table();
  Buffers b(api, 4096, 16);
  std::vector<uint8_t> block(2048, 0);
  const auto tagA = acl.tagDevice(block.data(), 1024);
  const auto tagB = acl.tagDevice(block.data() + 1024, 1024);
  const uint64_t d = reinterpret_cast<uint64_t>(block.data());
  auto* h = static_cast<uint8_t*>(b.host);
  for (int i = 0; i < 4096; ++i) h[i] = static_cast<uint8_t>(i * 5 + 3);
  const auto H2D = ACL_MEMCPY_HOST_TO_DEVICE;
  EXPECT_EQ(api.memcpyAsync(block.data() + 1000, 48, b.host, 48, H2D, b.stream),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(api.memcpy2dAsync(block.data() + 512, 1024, b.host, 64, 64, 2, H2D, b.stream),
            ACL_ERROR_INVALID_PARAM);
  size_t failIndex = 0;
  EXPECT_EQ(b.batch({block.data(), block.data() + 1020}, {b.host, b.host}, {8, 8},
                    ACL_MEM_LOCATION_TYPE_DEVICE, ACL_MEM_LOCATION_TYPE_HOST, &failIndex),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(failIndex, 1u);
  EXPECT_EQ(acl.counts().rejected, 3);
  EXPECT_EQ(acl.counts().bytesCopied, 0u);
  // Through the issuer: a 1-D copy over both buffers and a 2-D copy whose rows fall in both.
  acl.reset();
  IssueState state;
  const std::vector<kvio::engine::Region> device = {{d, 1024}, {d + 1024, 1024}};
  const std::vector<kvio_copy2d> plan = {{b.h(), d + 1000, 48, 1, 48, 48},
                                         {b.h() + 64, d + 512, 64, 2, 64, 1024}};
  ASSERT_EQ(issuePlan({&api, b.stream, H2D, 0}, plan, b.hostRegion(), device, &state),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(acl.counts().rejected, 0) << acl.recentError();
  EXPECT_EQ(acl.counts().bytesCopied, 48u + 128u);
  EXPECT_EQ(0, std::memcmp(block.data() + 1000, h, 48));
  EXPECT_EQ(0, std::memcmp(block.data() + 512, h + 64, 64));
  EXPECT_EQ(0, std::memcmp(block.data() + 1536, h + 128, 64));
}

TEST(AscendCopies, TheEmulationAnswersArgumentErrors) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  const AclApi api = acl.table();
  Buffers b(api, 4096, 4096);
  const auto H2D = ACL_MEMCPY_HOST_TO_DEVICE;
  EXPECT_EQ(api.memcpy2dAsync(b.device, 32, b.host, 64, 48, 2, H2D, b.stream),
            ACL_ERROR_INVALID_PARAM);  // width > dpitch
  EXPECT_EQ(api.memcpy2dAsync(b.device, 1, b.host, 1, 1, kMax2dHeight + 1, H2D, b.stream),
            ACL_ERROR_INVALID_PARAM);  // height above the limit
  EXPECT_EQ(
      api.memcpy2dAsync(b.device, 64, b.device, 64, 32, 2, ACL_MEMCPY_DEVICE_TO_DEVICE, b.stream),
      ACL_ERROR_INVALID_PARAM);  // 2-D device to device
  EXPECT_EQ(api.memcpyAsync(b.device, 64, b.host, 64, ACL_MEMCPY_DEVICE_TO_HOST, b.stream),
            ACL_ERROR_INVALID_PARAM);  // kind does not match where the pointers lie
  EXPECT_EQ(api.memcpyAsync(b.device, 32, b.host, 64, H2D, b.stream),
            ACL_ERROR_INVALID_PARAM);  // count > destMax
  EXPECT_EQ(api.memcpyAsync(b.device, 8192, b.host, 8192, H2D, b.stream),
            ACL_ERROR_INVALID_PARAM);  // leaves the allocation
  EXPECT_EQ(api.memcpyAsync(nullptr, 8, b.host, 8, H2D, b.stream), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(api.memcpyAsync(b.device, 8, b.host, 8, H2D, reinterpret_cast<aclrtStream>(0x7)),
            ACL_ERROR_RT_PARAM_INVALID);  // unknown stream
  EXPECT_EQ(api.setDevice(5), ACL_ERROR_RT_INVALID_DEVICEID);
  // A batch of device-to-device copies (the batch copies host to device or device to host).
  size_t failIndex = 0;
  EXPECT_EQ(b.batch({b.device}, {static_cast<uint8_t*>(b.device) + 2048}, {64},
                    ACL_MEM_LOCATION_TYPE_DEVICE, ACL_MEM_LOCATION_TYPE_DEVICE, &failIndex),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(acl.counts().rejected, 10);
  EXPECT_EQ(acl.counts().bytesCopied, 0u);
  // And an issued plan whose copy the runtime refuses fails with the call and the sizes (the
  // destination region claims more than the runtime's 4096-byte allocation).
  IssueState state;
  EXPECT_EQ(issuePlan({&api, b.stream, H2D, 0}, {{b.h(), b.d(), 64, 2, 64, 8192}}, b.hostRegion(),
                      std::vector<kvio::engine::Region>{{b.d(), 16384}}, &state),
            KVIO_STATUS_BACKEND_ERROR);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("aclrtMemcpy2dAsync failed: ACL_ERROR_INVALID_PARAM (100000)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("2 rows of 64 bytes"), std::string::npos) << message;
}

// ACL's context rules, as the emulation keeps them, on a thread that starts with no context.
TEST(AscendCopies, TheEmulationKeepsAclContextRules) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  acl.setDeviceCount(2);
  const AclApi api = acl.table();
  std::thread([&] {
    ASSERT_EQ(acl.threadContext(), nullptr);
    aclrtContext context = reinterpret_cast<aclrtContext>(0x1);
    EXPECT_EQ(api.getCurrentContext(&context), ACL_ERROR_RT_CONTEXT_NULL);
    void* p = nullptr;
    aclrtStream stream = nullptr;
    aclrtEvent event = nullptr;
    std::vector<uint8_t> host(8192);
    EXPECT_EQ(api.mallocHost(&p, 64), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(api.malloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(api.createStream(&stream), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(api.createEvent(&event), ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(api.hostRegister(host.data(), 4096, ACL_HOST_REGISTER_MAPPED, &p),
              ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(api.hostRegisterV2(host.data(), 4096, ACL_HOST_REG_PINNED),
              ACL_ERROR_RT_CONTEXT_NULL);
    EXPECT_EQ(api.hostUnregister(host.data()), ACL_ERROR_RT_CONTEXT_NULL);
    // The text of the failure is this thread's, and reading it clears it.
    EXPECT_NE(std::string(api.getRecentErrMsg()).find("no current context"), std::string::npos);
    EXPECT_EQ(std::string(api.getRecentErrMsg()), "");
    // No unbinding: CANN's aclrtSetCurrentContext refuses NULL as an invalid parameter.
    EXPECT_EQ(api.setCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(acl.threadContext(), nullptr);

    // aclrtSetDevice binds the device's default context (and counts).
    ASSERT_EQ(api.setDevice(1), ACL_SUCCESS);
    EXPECT_EQ(acl.setDeviceCalls(1), 1);
    ASSERT_EQ(api.getCurrentContext(&context), ACL_SUCCESS);
    EXPECT_EQ(context, acl.defaultContext(1));
    aclrtStream stream1 = nullptr;
    ASSERT_EQ(api.createStream(&stream1), ACL_SUCCESS);
    // The table of registrations is the process's: pages pinned in device 1's context are
    // registered for device 0 too (refused again), and end once, from either context.
    uint8_t* page =
        reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(host.data()) + 4095) / 4096 * 4096);
    ASSERT_EQ(api.hostRegisterV2(page, 4096, ACL_HOST_REG_PINNED), ACL_SUCCESS);
    void* device0 = acl.defaultContext(0);
    ASSERT_EQ(api.setCurrentContext(device0), ACL_SUCCESS);
    EXPECT_EQ(api.hostRegisterV2(page, 4096, ACL_HOST_REG_PINNED),
              ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    void* dev = nullptr;
    ASSERT_EQ(api.malloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    // Work on device 1's stream from device 0's context.
    EXPECT_EQ(api.memcpyAsync(dev, 64, page, 64, ACL_MEMCPY_HOST_TO_DEVICE, stream1),
              ACL_ERROR_RT_STREAM_CONTEXT);
    aclrtStream stream0 = nullptr;
    ASSERT_EQ(api.createStream(&stream0), ACL_SUCCESS);
    EXPECT_EQ(acl.registrations(1), 1);
    EXPECT_EQ(acl.registrations(0), 0);
    EXPECT_EQ(api.memcpyAsync(dev, 64, page, 64, ACL_MEMCPY_HOST_TO_DEVICE, stream0), ACL_SUCCESS);
    EXPECT_EQ(api.hostUnregister(page), ACL_SUCCESS);  // from device 0's context
    EXPECT_EQ(api.free(dev), ACL_SUCCESS);
    EXPECT_EQ(api.destroyStream(stream0), ACL_SUCCESS);
    ASSERT_EQ(api.setCurrentContext(acl.defaultContext(1)), ACL_SUCCESS);
    EXPECT_EQ(api.hostUnregister(page), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);  // once only
    EXPECT_EQ(api.destroyStream(stream1), ACL_SUCCESS);
    EXPECT_EQ(acl.setDeviceCalls(0), 0);  // a context switch is no aclrtSetDevice
  }).join();
  EXPECT_EQ(acl.live().registrations, 0);
  acl.reset();
  EXPECT_STREQ(aclErrorName(ACL_ERROR_RT_CONTEXT_NULL), "ACL_ERROR_RT_CONTEXT_NULL");
  EXPECT_STREQ(aclErrorName(ACL_ERROR_RT_STREAM_CONTEXT), "ACL_ERROR_RT_STREAM_CONTEXT");
  EXPECT_STREQ(aclErrorName(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED),
               "ACL_ERROR_HOST_MEMORY_NOT_REGISTERED");
  EXPECT_STREQ(aclErrorName(507013), "ACL_ERROR_RT_SYS_DMA");  // a failed copy's task
  EXPECT_STREQ(aclErrorName(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT),
               "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT");
  EXPECT_STREQ(aclErrorName(123456), "ACL error");
}

// Host registration as CANN's runtime does it. aclrtHostRegister (V1) maps host memory for the
// device and does not pin it: a copy from or to it is accepted and faults when it runs (the
// destination keeps its canary); aclrtHostRegisterV2 with ACL_HOST_REG_PINNED pins it and the
// same copy moves the bytes. V2 takes a 4K-aligned pointer, MAPPED and/or PINNED, and answers
// ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED for a range overlapping any registration (its
// CheckMemoryRangeRegistered), V1 for one overlapping a registration (the driver's "busy");
// V2 registers aclrtMallocHost memory too (the API reference allows it; the runtime's range check
// knows its own table only), and unregistering it leaves the allocation;
// aclrtHostUnregister takes the registered pointer only.
TEST(AscendCopies, TheEmulationKeepsAclRegistrationRules) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  const AclApi api = acl.table();
  acl.setThreadContext(acl.defaultContext(0));
  aclrtStream stream = nullptr;
  ASSERT_EQ(api.createStream(&stream), ACL_SUCCESS);
  void* dev = nullptr;
  ASSERT_EQ(api.malloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::memset(dev, 0x11, 4096);
  std::vector<uint8_t> block(4 * 4096);
  uint8_t* page =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(block.data()) + 4095) / 4096 * 4096);
  constexpr uint8_t kCanary = 0xC3;
  std::memset(page, kCanary, 2 * 4096);
  const int64_t faultsBefore = acl.faults();

  void* mapped = nullptr;
  ASSERT_EQ(api.hostRegister(page, 4096, ACL_HOST_REGISTER_MAPPED, &mapped), ACL_SUCCESS);
  EXPECT_EQ(api.hostRegister(page + 4096 - 64, 128, ACL_HOST_REGISTER_MAPPED, &mapped),
            ACL_ERROR_INVALID_PARAM);  // not 4K-aligned
  EXPECT_EQ(api.memcpyAsync(page, 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS);
  std::string fault;
  EXPECT_EQ(acl.faults(&fault), faultsBefore + 1);
  EXPECT_NE(fault.find("not page-locked"), std::string::npos) << fault;
  EXPECT_EQ(page[0], kCanary);  // nothing copied
  EXPECT_EQ(api.hostRegisterV2(page, 4096, ACL_HOST_REG_PINNED),
            ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(api.hostUnregister(page + 64), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(api.hostUnregister(page), ACL_SUCCESS);

  EXPECT_EQ(api.hostRegisterV2(page, 4096, 0x4), ACL_ERROR_INVALID_PARAM);  // IOMEMORY
  EXPECT_EQ(api.hostRegisterV2(page + 64, 4096, ACL_HOST_REG_PINNED), ACL_ERROR_INVALID_PARAM);
  ASSERT_EQ(api.hostRegisterV2(page, 4096, ACL_HOST_REG_PINNED), ACL_SUCCESS);
  // Any overlap, by one byte, is "already registered"; the next page is free.
  EXPECT_EQ(api.hostRegisterV2(page + 4096, 4096, ACL_HOST_REG_PINNED), ACL_SUCCESS);
  EXPECT_EQ(api.hostUnregister(page + 4096), ACL_SUCCESS);
  uint8_t* before = page - 4096 >= block.data() ? page - 4096 : nullptr;
  if (before != nullptr) {
    EXPECT_EQ(api.hostRegisterV2(before, 4097, ACL_HOST_REG_PINNED),
              ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  }
  EXPECT_EQ(api.hostRegister(page, 4096, ACL_HOST_REGISTER_MAPPED, &mapped),
            ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(api.memcpyAsync(page, 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS);
  EXPECT_EQ(acl.faults(), faultsBefore + 1);
  EXPECT_EQ(page[0], 0x11);
  EXPECT_EQ(page[64], kCanary);
  EXPECT_EQ(api.hostUnregister(page), ACL_SUCCESS);
  EXPECT_EQ(api.hostUnregister(page), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);

  void* pinned = nullptr;
  ASSERT_EQ(api.mallocHost(&pinned, 4096), ACL_SUCCESS);
  EXPECT_EQ(api.hostRegisterV2(pinned, 4096, ACL_HOST_REG_PINNED), ACL_SUCCESS);
  EXPECT_EQ(api.hostRegisterV2(pinned, 4096, ACL_HOST_REG_PINNED),
            ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(api.hostUnregister(pinned), ACL_SUCCESS);
  EXPECT_EQ(acl.live().hostAllocations, 1);  // unregistering is not freeing
  EXPECT_EQ(api.freeHost(pinned), ACL_SUCCESS);
  EXPECT_EQ(api.free(dev), ACL_SUCCESS);
  EXPECT_EQ(api.destroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(acl.live().registrations, 0);
  EXPECT_EQ(acl.table(true, false).hostRegisterV2, nullptr);  // an older runtime's table
  acl.setThreadContext(nullptr);
  acl.reset();
}

// A copy the runtime accepted that fails when it runs (failTask), as CANN's open-source runtime
// handles it (Stream::SetErrCode, Context::CheckStatus): in the default mode the stream goes on
// (the next copy runs), the event recorded after both completes and its query and synchronisation
// succeed, and the next stream synchronisation reports ACL_ERROR_RT_SYS_DMA, once; where the
// context stops on failure, the work after the failed copy never runs and every later copy,
// record, event query and synchronisation answers the error.
TEST(AscendCopies, TheEmulationReportsACopyThatFailsWhenItRunsAsTheRuntimeDoes) {
  constexpr aclError kSysDma = 507013;  // ACL_ERROR_RT_SYS_DMA
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  const AclApi api = acl.table();
  Buffers buffers(api, 256, 256);
  const aclrtStream stream = buffers.stream;
  aclrtEvent event = nullptr;
  ASSERT_EQ(api.createEvent(&event), ACL_SUCCESS);
  uint8_t* const d = static_cast<uint8_t*>(buffers.device);
  uint8_t* const h = static_cast<uint8_t*>(buffers.host);
  for (bool stop : {false, true}) {
    SCOPED_TRACE(stop ? "ACL_STOP_ON_FAILURE" : "ACL_CONTINUE_ON_FAILURE");
    acl.reset();
    acl.stopOnFailure(stop);
    std::memset(h, 0x5A, 256);
    std::memset(d, 0xC3, 256);
    acl.holdStream();
    acl.failTask(0);
    ASSERT_EQ(api.memcpyAsync(d, 128, h, 128, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
    ASSERT_EQ(api.memcpyAsync(d + 128, 128, h + 128, 128, ACL_MEMCPY_HOST_TO_DEVICE, stream),
              ACL_SUCCESS);
    ASSERT_EQ(api.recordEvent(event, stream), ACL_SUCCESS);
    aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_COMPLETE;
    EXPECT_EQ(api.queryEventStatus(event, &status), ACL_SUCCESS);
    EXPECT_EQ(status, ACL_EVENT_RECORDED_STATUS_NOT_READY);  // held: nothing ran yet
    acl.releaseStream();
    EXPECT_EQ(acl.faults(), 1);
    EXPECT_EQ(std::count(d, d + 128, 0xC3), 128) << "the failed copy moved nothing";
    if (!stop) {
      EXPECT_EQ(std::count(d + 128, d + 256, 0x5A), 128) << "the next copy ran";
      EXPECT_EQ(api.queryEventStatus(event, &status), ACL_SUCCESS);
      EXPECT_EQ(status, ACL_EVENT_RECORDED_STATUS_COMPLETE);
      EXPECT_EQ(api.synchronizeEvent(event), ACL_SUCCESS);
      EXPECT_EQ(api.synchronizeStream(stream), kSysDma);
      EXPECT_EQ(api.synchronizeStream(stream), ACL_SUCCESS) << "reported once";
      EXPECT_EQ(api.memcpyAsync(d, 128, h, 128, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
      EXPECT_EQ(std::count(d, d + 128, 0x5A), 128) << "the stream still runs its work";
    } else {
      EXPECT_EQ(std::count(d + 128, d + 256, 0xC3), 128) << "the work after it never ran";
      EXPECT_EQ(api.queryEventStatus(event, &status), kSysDma);
      EXPECT_EQ(api.synchronizeEvent(event), kSysDma);
      EXPECT_EQ(api.synchronizeStream(stream), kSysDma);
      EXPECT_EQ(api.memcpyAsync(d, 128, h, 128, ACL_MEMCPY_HOST_TO_DEVICE, stream), kSysDma);
      EXPECT_EQ(api.recordEvent(event, stream), kSysDma);
      EXPECT_EQ(std::count(d, d + 128, 0xC3), 128);
    }
  }
  acl.reset();  // a fresh device: the faults and the stopped context forgotten
  EXPECT_EQ(api.destroyEvent(event), ACL_SUCCESS);
}

// aclrtPointerGetAttributes as CANN's runtime answers it (NpuDriver::PtrGetAttributes): NPU
// memory is DEVICE with its device; aclrtMallocHost memory is HOST at every byte and not one
// past its end; other host memory is UNREGISTERED until a registration (V2 pinned, or V1 only
// mapped: the runtime's table holds both) makes it HOST, and again after it ends. It needs no
// context, and a table can leave it out.
TEST(AscendCopies, TheEmulationAnswersPointerAttributesAsTheRuntime) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  acl.setDeviceCount(2);
  const AclApi api = acl.table();
  acl.setThreadContext(acl.defaultContext(1));
  void* device1 = nullptr;
  ASSERT_EQ(api.malloc(&device1, 8192, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  void* pinned = nullptr;
  ASSERT_EQ(api.mallocHost(&pinned, 8192), ACL_SUCCESS);
  acl.setThreadContext(nullptr);  // the queries need none
  auto where = [&](const void* p) {
    aclrtPtrAttributes a{};
    a.location.type = static_cast<aclrtMemLocationType>(99);
    EXPECT_EQ(api.pointerGetAttributes(p, &a), ACL_SUCCESS);
    return a;
  };
  const auto* d = static_cast<const uint8_t*>(device1);
  EXPECT_EQ(where(d).location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(where(d + 8191).location.id, 1u);
  const auto* h = static_cast<const uint8_t*>(pinned);
  EXPECT_EQ(where(h).location.type, ACL_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(where(h + 8191).location.type, ACL_MEM_LOCATION_TYPE_HOST);
  std::vector<uint8_t> block(4 * 4096);
  uint8_t* page =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(block.data()) + 4095) / 4096 * 4096);
  EXPECT_EQ(where(page).location.type, ACL_MEM_LOCATION_TYPE_UNREGISTERED);
  acl.setThreadContext(acl.defaultContext(0));
  ASSERT_EQ(api.hostRegisterV2(page, 4096, ACL_HOST_REG_PINNED), ACL_SUCCESS);
  EXPECT_EQ(where(page + 4095).location.type, ACL_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(where(page + 4096).location.type, ACL_MEM_LOCATION_TYPE_UNREGISTERED);
  ASSERT_EQ(api.hostUnregister(page), ACL_SUCCESS);
  EXPECT_EQ(where(page).location.type, ACL_MEM_LOCATION_TYPE_UNREGISTERED);
  void* mapped = nullptr;
  ASSERT_EQ(api.hostRegister(page, 4096, ACL_HOST_REGISTER_MAPPED, &mapped), ACL_SUCCESS);
  EXPECT_EQ(where(page).location.type, ACL_MEM_LOCATION_TYPE_HOST);  // not pinned, yet HOST
  ASSERT_EQ(api.hostUnregister(page), ACL_SUCCESS);
  aclrtPtrAttributes a{};
  EXPECT_EQ(api.pointerGetAttributes(nullptr, &a), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(api.pointerGetAttributes(page, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(api.freeHost(pinned), ACL_SUCCESS);
  acl.setThreadContext(acl.defaultContext(1));
  EXPECT_EQ(api.free(device1), ACL_SUCCESS);
  EXPECT_EQ(acl.table(true, true, false).pointerGetAttributes, nullptr);
  acl.setThreadContext(nullptr);
  acl.reset();
}

// The switch for acl_rt.h's alignment rule of aclrtMemcpyAsync: off, a device-to-device copy at
// any address runs; on, one whose destination or source is not 64-byte aligned is refused (and
// an aligned one, or one between host and device, still runs).
TEST(AscendCopies, TheEmulationCanRefuseUnalignedDeviceToDeviceCopies) {
  AclHostEmulation& acl = AclHostEmulation::instance();
  acl.reset();
  const AclApi api = acl.table();
  Buffers b(api, 4096, 4096);
  auto* dev = static_cast<uint8_t*>(b.device);
  auto* host = static_cast<uint8_t*>(b.host);
  EXPECT_EQ(api.memcpyAsync(dev + 1, 64, dev + 2048, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, b.stream),
            ACL_SUCCESS);
  acl.refuseUnalignedDeviceCopies(true);
  EXPECT_EQ(api.memcpyAsync(dev + 1, 64, dev + 2048, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, b.stream),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(acl.recentError().find("64-byte aligned"), std::string::npos) << acl.recentError();
  EXPECT_EQ(api.memcpyAsync(dev, 64, dev + 2048 + 4, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, b.stream),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(api.memcpyAsync(dev + 64, 4, dev + 2048, 4, ACL_MEMCPY_DEVICE_TO_DEVICE, b.stream),
            ACL_SUCCESS);
  EXPECT_EQ(api.memcpyAsync(dev + 1, 4, host + 3, 4, ACL_MEMCPY_HOST_TO_DEVICE, b.stream),
            ACL_SUCCESS);
  acl.reset();  // off again
  EXPECT_EQ(api.memcpyAsync(dev + 1, 64, dev + 2048, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, b.stream),
            ACL_SUCCESS);
}

}  // namespace
}  // namespace kvio_test
