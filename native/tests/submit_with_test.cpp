// kvio_submit_with and kvio_check_transfer_with (kvio.h): the general submit, with every
// per-transfer option at once (the overlap mark, the launch shape, where the indices lie) in an
// extensible kvio_submit_options. Every rejection of an option, one by one: the status, a message
// naming the field and what is valid, *transfer_out unchanged, the check entry point agreeing,
// and no byte of either pool changed (both compared whole, guard zones included). Then what is
// accepted, against the oracle on canary-filled destinations: NULL options as kvio_submit, a
// newer caller's larger struct, the mark with a launch shape on cpu, and device indices refused
// on the executors that do not take them (cpu; auto without a GPU).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"
#include "pool_fixtures.hpp"
#include "rejection_assertions.hpp"

namespace kvio_test {
namespace {

constexpr uint64_t kUntouched = 0x5eed5eed5eed5eedull;  // what *transfer_out holds before a call

kvio_submit_options defaults() {
  kvio_submit_options options = KVIO_SUBMIT_OPTIONS_INIT;
  return options;
}

// A caller compiled against a later kvio.h whose kvio_submit_options has two more fields.
struct LaterOptions {
  kvio_submit_options known;
  uint64_t later[2];
};

// Source: mha layer_first, 4 layers, 8 pages of 4 tokens, 2 heads x 16 bytes; destination: mha
// page_first, 2 layers, 6 pages. TearDown checks that neither changed.
class SubmitWithRejection : public UnchangedPoolsTest {
 protected:
  SubmitWithRejection() : UnchangedPoolsTest(&src_, &dst_, 17, "source pool", "destination pool") {}

  // A valid transfer of three pairs, two layers.
  kvio_transfer_desc desc() const { return descOf(src_, dst_, from_, to_, 0, 0, 2); }

  // kvio_submit_with refuses `options` with `status`, leaves *transfer_out as it was, and
  // kvio_check_transfer_with gives the same status and message (with the pairs and without).
  ::testing::AssertionResult refuses(const void* options, kvio_status status,
                                     std::initializer_list<std::string> parts) {
    return refusesDesc(desc(), options, status, parts);
  }
  ::testing::AssertionResult refusesDesc(const kvio_transfer_desc& d, const void* options,
                                         kvio_status status,
                                         std::initializer_list<std::string> parts) {
    const auto* o = static_cast<const kvio_submit_options*>(options);
    uint64_t transfer = kUntouched;
    const kvio_status submitted = kvio_submit_with(executor_, &d, o, &transfer);
    if (transfer != kUntouched) {
      return ::testing::AssertionFailure() << "*transfer_out changed to " << transfer;
    }
    ::testing::AssertionResult r = rejected(submitted, status, parts);
    if (!r) return r << " (kvio_submit_with)";
    const std::string message = kvio_last_error();
    r = rejected(kvio_check_transfer_with(executor_, &d, o), status, parts);
    if (!r) return r << " (kvio_check_transfer_with)";
    if (message != kvio_last_error()) {
      return ::testing::AssertionFailure()
             << "check says \"" << kvio_last_error() << "\", submit said \"" << message << "\"";
    }
    return ::testing::AssertionSuccess();
  }

  TestPool src_{Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 4, 8, 4, 2, 16}};
  TestPool dst_{Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 6, 4, 2, 16}};
  const std::vector<int64_t> from_{3, 0, 17};
  const std::vector<int64_t> to_{5, 23, 9};
};

TEST_F(SubmitWithRejection, StructSizeBelowTheFirstVersionOrAboveTheBound) {
  for (const uint32_t size : {0u, 4u, 23u, KVIO_SUBMIT_OPTIONS_MAX_SIZE + 1, 0xffffffffu}) {
    SCOPED_TRACE(size);
    kvio_submit_options o = defaults();
    o.struct_size = size;
    EXPECT_TRUE(refuses(&o, KVIO_STATUS_INVALID_ARGUMENT,
                        {"options->struct_size " + std::to_string(size), "24 to 4096",
                         "sizeof(kvio_submit_options)"}));
  }
}

TEST_F(SubmitWithRejection, ALaterCallersFieldsMustBeZero) {
  LaterOptions later{};
  later.known = defaults();
  later.known.struct_size = sizeof(LaterOptions);
  // One non-zero byte in the later fields: an option this library would ignore; refused.
  reinterpret_cast<unsigned char*>(&later)[28] = 1;
  EXPECT_TRUE(refuses(&later, KVIO_STATUS_INVALID_ARGUMENT,
                      {"options byte 28 is 0x01", "struct_size 40", "past the 24 bytes"}));
  // ... but only the bytes struct_size covers are read: a size that ends before it is the first
  // version, whatever lies beyond.
  later.known.struct_size = 28;
  std::memset(&later.later, 0, sizeof later.later);
  reinterpret_cast<unsigned char*>(&later)[39] = 0x80;
  EXPECT_TRUE(refusesDesc(descOf(src_, dst_, from_, to_, 0, 0, 3), &later, KVIO_STATUS_OUT_OF_RANGE,
                          {"layer range"}))
      << "struct_size 28 read byte 39";
}

TEST_F(SubmitWithRejection, UnknownFlagBits) {
  for (const uint32_t flags : {0x4u, 0x7u, 0x80000000u}) {
    kvio_submit_options o = defaults();
    o.flags = flags;
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%x", flags);
    EXPECT_TRUE(refuses(&o, KVIO_STATUS_INVALID_ARGUMENT,
                        {std::string("options->flags ") + hex, "unknown bits",
                         "KVIO_SUBMIT_OVERLAPS_COMPUTE (0x1), KVIO_SUBMIT_QUEUE_ONLY (0x2)"}));
  }
}

TEST_F(SubmitWithRejection, UnknownIndicesMemory) {
  for (const int32_t memory : {2, -1, 0x7fffffff}) {
    kvio_submit_options o = defaults();
    o.indices_memory = memory;
    EXPECT_TRUE(refuses(&o, KVIO_STATUS_INVALID_ARGUMENT,
                        {"options->indices_memory " + std::to_string(memory),
                         "KVIO_INDICES_HOST (0) or KVIO_INDICES_DEVICE (1)"}));
  }
}

TEST_F(SubmitWithRejection, ReservedIsNotZero) {
  for (const int32_t reserved : {1, -1}) {
    kvio_submit_options o = defaults();
    o.reserved = reserved;
    EXPECT_TRUE(refuses(&o, KVIO_STATUS_INVALID_ARGUMENT,
                        {"options->reserved is " + std::to_string(reserved), "must be 0"}));
  }
}

// cpu launches no kernel and ignores the shape, but its limits hold on every backend (a caller's
// shape that a GPU executor would refuse is refused here too, with the mark or without).
TEST_F(SubmitWithRejection, LaunchShapePastTheLimitsOnCpu) {
  kvio_submit_options o = defaults();
  o.flags = KVIO_SUBMIT_OVERLAPS_COMPUTE;
  o.cta_budget = 65536;
  o.warps_per_cta = 8;
  EXPECT_TRUE(refuses(&o, KVIO_STATUS_INVALID_ARGUMENT,
                      {"65536 CTAs x 8 warps", "CTA budget 1 to 65535", "warps per CTA 1 to 32"}));
  o.cta_budget = 4;
  o.warps_per_cta = 33;
  EXPECT_TRUE(refuses(&o, KVIO_STATUS_INVALID_ARGUMENT, {"4 CTAs x 33 warps"}));
  o.flags = 0;
  EXPECT_TRUE(refuses(&o, KVIO_STATUS_INVALID_ARGUMENT, {"4 CTAs x 33 warps"}));
  // The check of an empty transfer checks the shape too.
  kvio_transfer_desc empty = desc();
  empty.num_indices = 0;
  EXPECT_REJECTED(kvio_check_transfer_with(executor_, &empty, &o), KVIO_STATUS_INVALID_ARGUMENT,
                  "4 CTAs x 33 warps");
}

TEST_F(SubmitWithRejection, DeviceIndicesOnCpuAreUnsupportedInSubmitAndCheck) {
  kvio_submit_options o = defaults();
  o.indices_memory = KVIO_INDICES_DEVICE;
  // Host arrays stand in for device memory: cpu refuses before it reads them.
  EXPECT_TRUE(refuses(&o, KVIO_STATUS_UNSUPPORTED, {"device-resident indices", "'cpu'"}));
  o.flags = KVIO_SUBMIT_OVERLAPS_COMPUTE;
  o.cta_budget = 2;
  o.warps_per_cta = 4;
  EXPECT_TRUE(refuses(&o, KVIO_STATUS_UNSUPPORTED, {"device-resident indices", "'cpu'"}));
  // No pairs, no arrays: still the backend's refusal (kvio_check_transfer would say OK).
  kvio_transfer_desc empty = desc();
  empty.num_indices = 0;
  empty.src_indices = nullptr;
  empty.dst_indices = nullptr;
  EXPECT_EQ(kvio_check_transfer(executor_, &empty, 0), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_TRUE(
      refusesDesc(empty, &o, KVIO_STATUS_UNSUPPORTED, {"device-resident indices", "'cpu'"}));
  // The thin form says the same as the general one.
  uint64_t transfer = kUntouched;
  const kvio_transfer_desc d = desc();
  EXPECT_REJECTED(kvio_submit_device_indices(executor_, &d, &transfer), KVIO_STATUS_UNSUPPORTED,
                  "device-resident indices", "'cpu'");
  EXPECT_EQ(transfer, kUntouched);
}

TEST_F(SubmitWithRejection, OptionsAreCheckedBeforeHandlesAndTheOtherArguments) {
  kvio_submit_options o = defaults();
  o.reserved = 7;
  const kvio_transfer_desc d = desc();
  uint64_t transfer = kUntouched;
  EXPECT_REJECTED(kvio_submit_with(0, &d, &o, &transfer), KVIO_STATUS_INVALID_ARGUMENT,
                  "options->reserved");
  EXPECT_REJECTED(kvio_submit_with(executor_, &d, &o, nullptr), KVIO_STATUS_INVALID_ARGUMENT,
                  "options->reserved");
  // The descriptor comes first; a null transfer_out with good options is named.
  EXPECT_REJECTED(kvio_submit_with(executor_, nullptr, &o, &transfer), KVIO_STATUS_INVALID_ARGUMENT,
                  "desc");
  EXPECT_REJECTED(kvio_check_transfer_with(executor_, nullptr, nullptr),
                  KVIO_STATUS_INVALID_ARGUMENT, "desc");
  EXPECT_REJECTED(kvio_submit_with(executor_, &d, nullptr, nullptr), KVIO_STATUS_INVALID_ARGUMENT,
                  "transfer_out");
  EXPECT_EQ(transfer, kUntouched);
}

// ---- accepted ----

const Geometry kSrc{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 3, 8, 4, 2, 32};
const Geometry kDst{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_HEAD, Form::PerComponent, 2, 5, 4, 2, 32};
const std::vector<int64_t> kFrom{30, 1, 2, 16, 9};
const std::vector<int64_t> kTo{0, 19, 7, 8, 12};

// Submits with `submit` from a seeded source to a canary-filled destination (source layers 1-2
// to destination layers 0-1) through the oracle's checkTransfer (every destination byte against
// the oracle, the source unchanged), and returns the transfer's info.
template <typename Submit>
kvio_transfer_info moveAndCheck(Submit submit) {
  std::mt19937_64 rng(5);
  kvio_transfer_info info{};
  checkTransfer(kSrc, kDst, rng, kFrom, kTo, 1, 0, 2, [&](TestPool& src, TestPool& dst) {
    const kvio_transfer_desc d = descOf(src, dst, kFrom, kTo, 1, 0, 2);
    uint64_t transfer = 0;
    ASSERT_EQ(submit(d, &transfer), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_transfer_get_info(transfer, &info), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  });
  return info;
}

class SubmitWith : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 2, &cpu_), KVIO_STATUS_OK);
  }
  void TearDown() override { EXPECT_EQ(kvio_executor_close(cpu_), KVIO_STATUS_OK); }
  uint64_t cpu_ = 0;
};

TEST_F(SubmitWith, NullOptionsAreKvioSubmit) {
  const kvio_transfer_info plain = moveAndCheck(
      [&](const kvio_transfer_desc& d, uint64_t* t) { return kvio_submit(cpu_, &d, t); });
  const kvio_transfer_info with = moveAndCheck([&](const kvio_transfer_desc& d, uint64_t* t) {
    return kvio_submit_with(cpu_, &d, nullptr, t);
  });
  const kvio_submit_options zero = defaults();
  const kvio_transfer_info init = moveAndCheck([&](const kvio_transfer_desc& d, uint64_t* t) {
    return kvio_submit_with(cpu_, &d, &zero, t);
  });
  for (const kvio_transfer_info* info : {&with, &init}) {
    EXPECT_EQ(info->io_backend, KVIO_BACKEND_CPU);
    EXPECT_EQ(info->chosen_backend, KVIO_BACKEND_CPU);
    EXPECT_EQ(info->overlaps_compute, 0);
    EXPECT_EQ(info->bytes, plain.bytes);
    EXPECT_EQ(info->copies, plain.copies);
    EXPECT_EQ(info->num_indices, 5);
    EXPECT_EQ(info->num_layers, 2);
  }
  EXPECT_EQ(plain.bytes, 5u * 2 * 2 * 64);  // pairs x layers x components x row
}

TEST_F(SubmitWith, ALaterCallersLargerStructWithZeroFieldsIsTheFirstVersion) {
  LaterOptions later{};
  later.known = defaults();
  later.known.struct_size = sizeof(LaterOptions);
  later.known.flags = KVIO_SUBMIT_OVERLAPS_COMPUTE;
  const kvio_transfer_info info = moveAndCheck([&](const kvio_transfer_desc& d, uint64_t* t) {
    return kvio_submit_with(cpu_, &d, &later.known, t);
  });
  EXPECT_EQ(info.overlaps_compute, 1);
  // The largest size allowed, all zero past the known fields.
  std::vector<unsigned char> big(KVIO_SUBMIT_OPTIONS_MAX_SIZE, 0);
  kvio_submit_options head = defaults();
  head.struct_size = KVIO_SUBMIT_OPTIONS_MAX_SIZE;
  std::memcpy(big.data(), &head, sizeof head);
  moveAndCheck([&](const kvio_transfer_desc& d, uint64_t* t) {
    return kvio_submit_with(cpu_, &d, reinterpret_cast<const kvio_submit_options*>(big.data()), t);
  });
}

// The pair kvio.h had no single entry point for: the mark is recorded, the shape is within the
// limits (the largest allowed) and ignored by cpu, the rows move.
TEST_F(SubmitWith, TheOverlapMarkAndALaunchShapeTogetherOnCpu) {
  kvio_submit_options o = defaults();
  o.flags = KVIO_SUBMIT_OVERLAPS_COMPUTE;
  o.cta_budget = 65535;
  o.warps_per_cta = 32;
  const kvio_transfer_info info = moveAndCheck(
      [&](const kvio_transfer_desc& d, uint64_t* t) { return kvio_submit_with(cpu_, &d, &o, t); });
  EXPECT_EQ(info.overlaps_compute, 1);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_CPU);
  EXPECT_EQ(info.launches, 0);
  EXPECT_GT(info.copies, 0);
  // <= 0 is the executor's setting, also next to the mark.
  o.cta_budget = -3;
  o.warps_per_cta = 0;
  EXPECT_EQ(moveAndCheck([&](const kvio_transfer_desc& d, uint64_t* t) {
              return kvio_submit_with(cpu_, &d, &o, t);
            }).overlaps_compute,
            1);
  // The check alone agrees, with the pairs and without them.
  TestPool src(kSrc), dst(kDst);
  kvio_transfer_desc d = descOf(src, dst, kFrom, kTo, 1, 0, 2);
  EXPECT_EQ(kvio_check_transfer_with(cpu_, &d, &o), KVIO_STATUS_OK) << kvio_last_error();
  d.num_indices = 0;
  d.src_indices = nullptr;
  d.dst_indices = nullptr;
  EXPECT_EQ(kvio_check_transfer_with(cpu_, &d, &o), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_check_transfer_with(cpu_, &d, nullptr), KVIO_STATUS_OK) << kvio_last_error();
  // ... and still runs the pools' checks without pairs.
  d.num_layers = 3;  // the destination has 2 layers
  EXPECT_REJECTED(kvio_check_transfer_with(cpu_, &d, &o), KVIO_STATUS_OUT_OF_RANGE, "layer range");
  // The host check reads the pairs: an index out of range is found without submitting.
  const std::vector<int64_t> bad{0, 99};
  const std::vector<int64_t> good{0, 1};
  const kvio_transfer_desc outside = descOf(src, dst, bad, good, 1, 0, 2);
  EXPECT_REJECTED(kvio_check_transfer_with(cpu_, &outside, &o), KVIO_STATUS_OUT_OF_RANGE,
                  "src_indices[1] = 99");
}

// 'auto' without a GPU runs the cpu backend: it takes no device indices (with pairs or without,
// in the submit and in the check), and it takes the mark with a launch shape.
TEST(SubmitWithAuto, WithoutAGpuDeviceIndicesAreUnsupportedAndTheMarkWithAShapeRuns) {
  if (kvio_backend_available(KVIO_BACKEND_KERNEL) == KVIO_STATUS_OK) {
    GTEST_SKIP() << "a CUDA device is present: auto takes device indices here";
  }
  uint64_t executor = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_AUTO, 1, &executor), KVIO_STATUS_OK)
      << kvio_last_error();
  TestPool src(kSrc), dst(kDst);
  std::mt19937_64 rng(9);
  const SeededPair pools(src, dst, rng);
  kvio_submit_options o = defaults();
  o.indices_memory = KVIO_INDICES_DEVICE;
  o.flags = KVIO_SUBMIT_OVERLAPS_COMPUTE;
  o.cta_budget = 8;
  kvio_transfer_desc d = descOf(src, dst, kFrom, kTo, 1, 0, 2);
  uint64_t transfer = kUntouched;
  EXPECT_REJECTED(kvio_submit_with(executor, &d, &o, &transfer), KVIO_STATUS_UNSUPPORTED,
                  "device-resident indices need a GPU");
  EXPECT_EQ(transfer, kUntouched);
  EXPECT_REJECTED(kvio_check_transfer_with(executor, &d, &o), KVIO_STATUS_UNSUPPORTED,
                  "device-resident indices need a GPU");
  d.num_indices = 0;
  EXPECT_REJECTED(kvio_check_transfer_with(executor, &d, &o), KVIO_STATUS_UNSUPPORTED,
                  "device-resident indices need a GPU");
  EXPECT_TRUE(pools.check("destination after the refusals", "source after the refusals"));
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_AUTO, 1, &executor), KVIO_STATUS_OK);
  o.indices_memory = KVIO_INDICES_HOST;
  const kvio_transfer_info info = moveAndCheck([&](const kvio_transfer_desc& desc, uint64_t* t) {
    return kvio_submit_with(executor, &desc, &o, t);
  });
  EXPECT_EQ(info.io_backend, KVIO_BACKEND_AUTO);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_CPU);
  EXPECT_EQ(info.overlaps_compute, 1);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

}  // namespace
}  // namespace kvio_test
