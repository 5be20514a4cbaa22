// Every rejection path of the C ABI (kvio.h), one test each: the status code, a message that
// names the problem and the valid range, and, for transfers, that no byte of any pool changed
// (both pools are filled with seeded bytes and compared whole, guard zones included, after
// the executor has drained). Also the name parser, the support rules (rejections and the
// acceptance of every valid cpu configuration) and executor creation.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <initializer_list>
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

// Device: mha layer_first, 4 layers, 8 pages of 4 tokens (32 slots), 2 heads x 16 bytes.
// Host: mha page_first, 2 layers, 6 pages (24 slots). Both wrapped, both filled with seeded
// bytes; TearDown drains the executor and checks that neither changed.
class TransferRejection : public UnchangedPoolsTest {
 protected:
  TransferRejection() : UnchangedPoolsTest(&device_, &host_, 42, "device pool", "host pool") {}

  // The index arrays live in the fixture, so a descriptor stays valid for the whole test.
  kvio_transfer_desc desc(std::vector<int64_t> src, std::vector<int64_t> dst, int64_t srcLayer = 0,
                          int64_t dstLayer = 0, int64_t layers = 2) {
    kept_.push_back(std::move(src));
    const std::vector<int64_t>& s = kept_.back();
    kept_.push_back(std::move(dst));
    const std::vector<int64_t>& d = kept_.back();
    return descOf(device_, host_, s, d, srcLayer, dstLayer, layers);
  }
  kvio_status submit(const kvio_transfer_desc& d) {
    const kvio_status s = submitAndWait(d);
    // The planner entry point validates the same way.
    int64_t count = -1;
    const std::string message = kvio_last_error();
    const kvio_status p = kvio_plan(&d, nullptr, 0, &count);
    EXPECT_EQ(p, s) << "kvio_plan and kvio_submit disagree";
    if (s != KVIO_STATUS_OK) {
      EXPECT_EQ(std::string(kvio_last_error()), message);
    }
    // So does the check that submits nothing, but for the empty transfer it allows and the
    // negative counts it calls out of its own range (EmptyTransferCheckedWithoutIndices).
    if (d.num_indices > 0) {
      const kvio_status c = kvio_check_transfer(executor_, &d, 0);
      EXPECT_EQ(c, s) << "kvio_check_transfer and kvio_submit disagree";
      if (s != KVIO_STATUS_OK) {
        EXPECT_EQ(std::string(kvio_last_error()), message);
      }
    }
    return s;
  }

  TestPool device_{Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 4, 8, 4, 2, 16}};
  TestPool host_{Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 6, 4, 2, 16}};
  std::deque<std::vector<int64_t>> kept_;
};

TEST_F(TransferRejection, NegativeSourceIndex) {
  EXPECT_REJECTED(submit(desc({0, -1, 2}, {0, 1, 2})), KVIO_STATUS_OUT_OF_RANGE,
                  "src_indices[1] = -1 is out of range", "32 token slots", "valid: 0 to 31");
}

TEST_F(TransferRejection, SourceIndexPastTheEnd) {
  EXPECT_REJECTED(submit(desc({32}, {0})), KVIO_STATUS_OUT_OF_RANGE,
                  "src_indices[0] = 32 is out of range", "valid: 0 to 31");
}

TEST_F(TransferRejection, NegativeDestinationIndex) {
  EXPECT_REJECTED(submit(desc({0, 1}, {3, INT64_MIN})), KVIO_STATUS_OUT_OF_RANGE,
                  "dst_indices[1] = " + std::to_string(INT64_MIN) + " is out of range",
                  "valid: 0 to 23");
}

TEST_F(TransferRejection, DestinationIndexPastTheEnd) {
  // 24 is in range for the 32-slot source but past the end of the 24-slot destination.
  EXPECT_REJECTED(submit(desc({24, 25}, {23, 24})), KVIO_STATUS_OUT_OF_RANGE,
                  "dst_indices[1] = 24 is out of range", "24 token slots", "valid: 0 to 23");
}

TEST_F(TransferRejection, LengthMismatch) {
  // The C ABI has one count; the C++ API checks the two vectors before calling it.
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  expectError(
      [&] {
        (void)kvio::transfer(cpu, device_.pool(), host_.pool(), std::vector<int64_t>{0, 1, 2},
                             std::vector<int64_t>{0, 1}, kvio::LayerMap{0, 0, 2});
      },
      KVIO_STATUS_INVALID_ARGUMENT, {"srcIndices has 3 entries but dstIndices has 2"},
      "index vectors of 3 and 2");
}

TEST_F(TransferRejection, EmptyIndexList) {
  EXPECT_REJECTED(submit(desc({}, {})), KVIO_STATUS_INVALID_ARGUMENT,
                  "num_indices must be at least 1, got 0");
  kvio_transfer_desc d = desc({1}, {1});
  d.num_indices = -5;
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT,
                  "num_indices must be at least 1, got -5");
  EXPECT_REJECTED(kvio_check_transfer(executor_, &d, 0), KVIO_STATUS_INVALID_ARGUMENT,
                  "num_indices must be at least 0, got -5");
}

// kvio_check_transfer of a transfer with no pairs (what the Java API's empty index lists are
// checked with): the arrays are not read, every check that needs no index runs; the pools stay
// as they were (TearDown).
TEST_F(TransferRejection, EmptyTransferCheckedWithoutIndices) {
  kvio_transfer_desc d = desc({}, {});
  d.src_indices = nullptr;
  d.dst_indices = nullptr;
  EXPECT_EQ(kvio_check_transfer(executor_, &d, 0), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_check_transfer_args(executor_, d.src_pool, d.dst_pool, nullptr, nullptr, 0, 0, 0,
                                     2, KVIO_SUBMIT_OVERLAPS_COMPUTE),
            KVIO_STATUS_OK)
      << kvio_last_error();
  kvio_transfer_desc bad = d;
  bad.num_layers = 3;  // the host pool has 2 layers
  EXPECT_REJECTED(kvio_check_transfer(executor_, &bad, 0), KVIO_STATUS_OUT_OF_RANGE,
                  "dst layer range [0, 3) is outside");
  bad = d;
  bad.num_indices = -1;  // 0 is valid here: the message gives this entry point's range
  EXPECT_REJECTED(kvio_check_transfer(executor_, &bad, 0), KVIO_STATUS_INVALID_ARGUMENT,
                  "num_indices must be at least 0, got -1",
                  "0 checks every argument but the index arrays");
  EXPECT_EQ(std::string(kvio_last_error()).find("at least 1"), std::string::npos);
  EXPECT_REJECTED(kvio_check_transfer(executor_, &d, 4), KVIO_STATUS_INVALID_ARGUMENT,
                  "flags 0x4 has unknown bits");
  EXPECT_REJECTED(kvio_check_transfer(executor_, nullptr, 0), KVIO_STATUS_INVALID_ARGUMENT,
                  "desc is null");
  const Geometry g = device_.geometry();
  const kvio::Pool alias =
      kvio::Pool::wrap(g.spec(), device_.region(0), static_cast<uint64_t>(g.regionBytes()));
  bad = d;
  bad.dst_pool = alias.handle();
  EXPECT_REJECTED(kvio_check_transfer(executor_, &bad, 0), KVIO_STATUS_INVALID_ARGUMENT,
                  "the source and destination pools share memory");
}

TEST_F(TransferRejection, NullIndexArrays) {
  kvio_transfer_desc d = desc({1}, {1});
  d.dst_indices = nullptr;
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT, "dst_indices is null");
}

TEST_F(TransferRejection, DuplicateDestinationSlots) {
  EXPECT_REJECTED(submit(desc({0, 9, 20}, {2, 5, 2})), KVIO_STATUS_INVALID_ARGUMENT,
                  "duplicate destination slot 2", "dst_indices[0] and dst_indices[2]",
                  "written once per transfer");
  // Inside runs: slots 5..7 and 7..8.
  EXPECT_REJECTED(submit(desc({0, 1, 2, 10, 11}, {5, 6, 7, 7, 8})), KVIO_STATUS_INVALID_ARGUMENT,
                  "duplicate destination slot 7", "dst_indices[2] and dst_indices[3]");
}

// More pairs than the destination has slots cannot be valid (each slot is written once), so the
// count is refused before either array is read: a count longer than the caller's arrays (here 4
// readable entries, then a page that faults when touched) gets INVALID_ARGUMENT, not a crash.
TEST_F(TransferRejection, MorePairsThanDestinationSlotsBeforeTheArraysAreRead) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* mapping =
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  char* bytes = static_cast<char*>(mapping);
  ASSERT_EQ(mprotect(bytes + page, page, PROT_NONE), 0);
  int64_t* indices = reinterpret_cast<int64_t*>(bytes + page) - 4;
  for (int64_t i = 0; i < 4; ++i) indices[i] = i;
  kvio_transfer_desc d = desc({0}, {0});
  d.src_indices = indices;
  d.dst_indices = indices;
  for (const int64_t count : {int64_t{25}, int64_t{1} << 40, INT64_MAX}) {
    d.num_indices = count;
    EXPECT_REJECTED(
        submit(d), KVIO_STATUS_INVALID_ARGUMENT,
        std::to_string(count) + " index pairs are more than the 24 token slots of the dst pool",
        "written once per transfer", "at most 24 pairs", "(num_indices, the length");
  }
  d.num_indices = 4;  // the arrays' own length: valid (checked only: the pools stay as they were)
  EXPECT_EQ(kvio_check_transfer(executor_, &d, 0), KVIO_STATUS_OK) << kvio_last_error();
  ASSERT_EQ(munmap(mapping, 2 * page), 0);
}

// Few pairs into a large pool take the other duplicate check (sorted runs instead of a bitmap of
// the destination's slots); it must find the same duplicates and name the same pairs, move no
// byte when it refuses (a random source, a canary destination, both compared whole with their
// guard zones), and accept runs that only touch: slots 70005..70007 then 70008..70009, two runs
// (their sources are apart) that end and begin at the same slot boundary.
TEST(DuplicateCheck, FewPairsIntoALargePool) {
  const Geometry big{KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8192, 16, 1, 8};
  ASSERT_GT(big.S(), 65536);  // 131072 slots: few pairs take the sorted-run check
  TestPool src(big), dst(big);
  std::mt19937_64 rng(11);
  SeededPair pools(src, dst, rng);
  kvio::Executor executor(kvio::IoBackend::Cpu, 1);
  const uint64_t sp = src.pool().handle(), dp = dst.pool().handle();
  const std::vector<int64_t> s{0, 9, 20}, d{100002, 5, 100002};
  const kvio_transfer_desc a{sp, dp, s.data(), d.data(), 3, 0, 0, 2};
  int64_t count = 0;
  EXPECT_REJECTED(kvio_plan(&a, nullptr, 0, &count), KVIO_STATUS_INVALID_ARGUMENT,
                  "duplicate destination slot 100002", "dst_indices[0] and dst_indices[2]");
  const std::vector<int64_t> s2{0, 1, 2, 10, 11}, d2{70005, 70006, 70007, 70007, 70008};
  const kvio_transfer_desc b{sp, dp, s2.data(), d2.data(), 5, 0, 0, 2};
  EXPECT_REJECTED(kvio_plan(&b, nullptr, 0, &count), KVIO_STATUS_INVALID_ARGUMENT,
                  "duplicate destination slot 70007", "dst_indices[2] and dst_indices[3]");
  uint64_t transfer = 0;
  EXPECT_REJECTED(kvio_submit(executor.handle(), &a, &transfer), KVIO_STATUS_INVALID_ARGUMENT,
                  "duplicate destination slot 100002");
  EXPECT_REJECTED(kvio_submit(executor.handle(), &b, &transfer), KVIO_STATUS_INVALID_ARGUMENT,
                  "duplicate destination slot 70007");
  EXPECT_EQ(transfer, 0u);
  EXPECT_TRUE(pools.check("destination after the refusals", "source after the refusals"));
  const std::vector<int64_t> d3{70005, 70006, 70007, 70008, 70009};
  const kvio_transfer_desc c{sp, dp, s2.data(), d3.data(), 5, 0, 0, 2};
  ASSERT_EQ(kvio_submit(executor.handle(), &c, &transfer), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  pools.expect(s2, d3, 0, 0, 2);
  EXPECT_TRUE(pools.check());
}

TEST_F(TransferRejection, OverlappingSourceAndDestinationInOnePool) {
  kvio_transfer_desc d = desc({0, 1, 2}, {2, 3, 4}, 0, 0, 4);
  d.dst_pool = d.src_pool;
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT, "source and destination overlap",
                  "slot 2", "src_indices[2]", "dst_indices[0]");
  // Overlapping layer ranges [0, 2) and [1, 3) count as the same layers.
  d = desc({10}, {10}, 0, 1, 2);
  d.dst_pool = d.src_pool;
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT, "source and destination overlap",
                  "slot 10");
}

// Two handles over the same memory: the slot check of one pool cannot see the aliasing, so
// the transfer is refused whatever the indices. A pool over the bytes right after the device
// pool's memory is not aliasing and is accepted.
TEST_F(TransferRejection, PoolsThatWrapTheSameMemory) {
  const Geometry g = device_.geometry();
  const kvio::Pool alias =
      kvio::Pool::wrap(g.spec(), device_.region(0), static_cast<uint64_t>(g.regionBytes()));
  kvio_transfer_desc d = desc({0}, {1}, 0, 0, 1);
  d.dst_pool = alias.handle();
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT,
                  "the source and destination pools share memory", "use one pool for both sides");
  // A partial overlap: a one-layer view that starts in the device pool's last layer.
  Geometry oneLayer = g;
  oneLayer.L = 1;
  const uint64_t layerBytes = static_cast<uint64_t>(oneLayer.regionBytes());
  uint8_t* lastLayer = device_.region(0) + (g.regionBytes() - static_cast<int64_t>(layerBytes));
  const kvio::Pool tail = kvio::Pool::wrap(oneLayer.spec(), lastLayer + 1, layerBytes);
  d = desc({5}, {6}, 0, 0, 1);
  d.src_pool = tail.handle();
  d.dst_pool = device_.pool().handle();
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT,
                  "the source and destination pools share memory");
}

TEST(PoolAliasing, AdjacentPoolsDoNotAlias) {
  // One buffer split into two pools back to back: [0, n) and [n, 2n), guard bytes after them.
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 4, 4, 2, 16};
  const size_t n = static_cast<size_t>(g.regionBytes());
  std::vector<uint8_t> buffer(2 * n + kGuard, kGuardByte);
  std::mt19937_64 rng(7);
  fillRandom(buffer.data(), n, rng);
  std::fill(buffer.begin() + static_cast<std::ptrdiff_t>(n),
            buffer.begin() + static_cast<std::ptrdiff_t>(2 * n), kCanary);
  const std::vector<uint8_t> source(buffer.begin(),
                                    buffer.begin() + static_cast<std::ptrdiff_t>(n));
  kvio::Pool a = kvio::Pool::wrap(g.spec(), buffer.data(), n);
  kvio::Pool b = kvio::Pool::wrap(g.spec(), buffer.data() + n, n);
  kvio::Executor executor(kvio::IoBackend::Cpu, 1);
  std::vector<int64_t> all(static_cast<size_t>(g.S()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  kvio::transfer(executor, a, b, all, all, kvio::LayerMap{0, 0, g.L}).wait();
  EXPECT_TRUE(
      std::equal(source.begin(), source.end(), buffer.begin() + static_cast<std::ptrdiff_t>(n)));
  EXPECT_TRUE(std::equal(source.begin(), source.end(), buffer.begin())) << "the source changed";
  EXPECT_TRUE(std::all_of(buffer.begin() + static_cast<std::ptrdiff_t>(2 * n), buffer.end(),
                          [](uint8_t byte) { return byte == kGuardByte; }))
      << "a write past the second pool";
}

// Pools whose buffers are several regions. Two layer tables carved out of one block, their
// buffers alternating back to back, share no byte: a transfer between them is accepted and moves
// what the oracle says. A third table whose last entry is one of the first pool's buffers shares
// memory with it: refused whatever the indices, and no byte of the block moves.
TEST(PoolAliasing, InterleavedLayerTablesAndALaterSharedEntry) {
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 4, 4, 2, 16};
  const size_t n = static_cast<size_t>(g.regionBytes());
  const size_t entries = static_cast<size_t>(g.C() * g.L);
  std::vector<uint8_t> block(2 * entries * n + 2 * kGuard, kGuardByte);
  uint8_t* base = block.data() + kGuard;
  std::vector<uint64_t> a, b;
  std::mt19937_64 rng(5);
  for (size_t i = 0; i < entries; ++i) {
    a.push_back(reinterpret_cast<uint64_t>(base + 2 * i * n));
    b.push_back(reinterpret_cast<uint64_t>(base + (2 * i + 1) * n));
    fillRandom(base + 2 * i * n, n, rng);
    std::memset(base + (2 * i + 1) * n, kCanary, n);
  }
  const kvio_pool_spec spec = g.spec().toC();
  uint64_t pa = 0, pb = 0, pc = 0, executor = 0;
  ASSERT_EQ(kvio_pool_wrap_layer_table(&spec, a.data(), entries, n, &pa), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_wrap_layer_table(&spec, b.data(), entries, n, &pb), KVIO_STATUS_OK);
  std::vector<uint64_t> c = b;
  c.back() = a.back();  // only the last (component 1, layer 1) buffer is shared
  ASSERT_EQ(kvio_pool_wrap_layer_table(&spec, c.data(), entries, n, &pc), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), KVIO_STATUS_OK);
  const std::vector<uint8_t> before = block;
  const std::vector<int64_t> one{0};
  const kvio_transfer_desc shared{pa, pc, one.data(), one.data(), 1, 0, 0, 1};
  uint64_t t = 0;
  EXPECT_REJECTED(kvio_submit(executor, &shared, &t), KVIO_STATUS_INVALID_ARGUMENT,
                  "the source and destination pools share memory");
  if (t != 0) {
    kvio_transfer_wait(t, -1);
    kvio_transfer_close(t);
  }
  EXPECT_TRUE(block == before) << "a refused transfer changed the block";
  std::vector<int64_t> all(static_cast<size_t>(g.S()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const kvio_transfer_desc apart{pa, pb, all.data(), all.data(), g.S(), 0, 0, g.L};
  t = 0;
  ASSERT_EQ(kvio_submit(executor, &apart, &t), KVIO_STATUS_OK) << kvio_last_error();
  ASSERT_EQ(kvio_transfer_wait(t, -1), KVIO_STATUS_OK);
  kvio_transfer_close(t);
  std::vector<uint8_t> expected = before;  // every B buffer is its A buffer; guards unchanged
  for (size_t i = 0; i < entries; ++i)
    std::memcpy(expected.data() + kGuard + (2 * i + 1) * n, before.data() + kGuard + 2 * i * n, n);
  EXPECT_TRUE(block == expected);
  kvio_executor_close(executor);
  for (uint64_t p : {pa, pb, pc}) kvio_pool_close(p);
}

TEST_F(TransferRejection, SourceLayerRangeNegative) {
  EXPECT_REJECTED(submit(desc({0}, {0}, -1, 0, 1)), KVIO_STATUS_OUT_OF_RANGE,
                  "src layer range [-1, 0) is outside the src pool's 4 layers",
                  "src_layer_start >= 0 and src_layer_start + num_layers <= 4");
}

TEST_F(TransferRejection, SourceLayerRangePastTheEnd) {
  EXPECT_REJECTED(submit(desc({0}, {0}, 3, 0, 2)), KVIO_STATUS_OUT_OF_RANGE,
                  "src layer range [3, 5)", "src_layer_start + num_layers <= 4");
}

TEST_F(TransferRejection, DestinationLayerRangeNegative) {
  EXPECT_REJECTED(submit(desc({0}, {0}, 0, -2, 1)), KVIO_STATUS_OUT_OF_RANGE,
                  "dst layer range [-2, -1) is outside the dst pool's 2 layers",
                  "dst_layer_start >= 0");
}

TEST_F(TransferRejection, DestinationLayerRangePastTheEnd) {
  // An all-layer backup of the 4-layer device into the 2-layer host.
  EXPECT_REJECTED(submit(desc({0}, {0}, 0, 0, 4)), KVIO_STATUS_OUT_OF_RANGE,
                  "dst layer range [0, 4) is outside the dst pool's 2 layers",
                  "dst_layer_start + num_layers <= 2");
}

TEST_F(TransferRejection, ExtremeLayerRanges) {
  // An end past int64 is written as a sum, not capped (a capped one reads as an empty range).
  EXPECT_REJECTED(submit(desc({0}, {0}, INT64_MAX, 0, 1)), KVIO_STATUS_OUT_OF_RANGE,
                  "src layer range [9223372036854775807, 9223372036854775807 + 1) is outside",
                  "src_layer_start + num_layers <= 4");
  EXPECT_REJECTED(submit(desc({0}, {0}, 3, 0, 2)), KVIO_STATUS_OUT_OF_RANGE,
                  "src layer range [3, 5) is outside the src pool's 4 layers");
  EXPECT_REJECTED(submit(desc({0}, {0}, 0, 0, INT64_MAX)), KVIO_STATUS_OUT_OF_RANGE,
                  "src layer range", "outside the src pool's 4 layers");
  EXPECT_REJECTED(submit(desc({0}, {0}, 0, INT64_MIN, 1)), KVIO_STATUS_OUT_OF_RANGE,
                  "dst layer range", "dst_layer_start >= 0");
}

TEST_F(TransferRejection, ZeroLayers) {
  EXPECT_REJECTED(submit(desc({0}, {0}, 0, 0, 0)), KVIO_STATUS_INVALID_ARGUMENT,
                  "num_layers must be at least 1, got 0");
  EXPECT_REJECTED(submit(desc({0}, {0}, 0, 0, -3)), KVIO_STATUS_INVALID_ARGUMENT,
                  "num_layers must be at least 1, got -3");
}

TEST_F(TransferRejection, KindMismatch) {
  // An mla pool whose rows have the same bytes (1 x 32) as the mha device's rows (2 x 16).
  TestPool mla1(Geometry{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 6, 4, 1, 32});
  mla1.fill(kCanary);
  const Image before = mla1.capture();
  kvio_transfer_desc d = desc({0}, {0}, 0, 0, 1);
  d.dst_pool = mla1.pool().handle();
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT,
                  "the src pool is mha and the dst pool is mla", "both must be the same kind");
  EXPECT_TRUE(sameImage(before, mla1.capture(), "mla pool"));
}

TEST_F(TransferRejection, RowGeometryMismatch) {
  TestPool a(Geometry{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 2, 4, 1, 576});
  TestPool b(Geometry{KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 2, 4, 1, 656});
  std::mt19937_64 rng(7);
  const SeededPair pools(a, b, rng);
  kvio_transfer_desc d = desc({0, 1}, {0, 1}, 0, 0, 2);
  d.src_pool = a.pool().handle();
  d.dst_pool = b.pool().handle();
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT, "row geometry differs",
                  "the src pool's rows are 1 heads x 576 bytes",
                  "the dst pool's rows are 1 heads x 656 bytes", "same head_num and head_bytes");
  EXPECT_TRUE(pools.check("656-byte pool", "576-byte pool"));
}

TEST_F(TransferRejection, ClosedPoolHandle) {
  const uint64_t handle = host_.pool().handle();
  host_.pool().close();  // the memory is the test's; the handle is gone
  kvio_transfer_desc d = desc({0}, {0});
  d.dst_pool = handle;
  EXPECT_REJECTED(submit(d), KVIO_STATUS_CLOSED, "dst_pool 0x", "is closed");
  EXPECT_REJECTED(kvio_pool_close(handle), KVIO_STATUS_CLOSED, "is closed");
  kvio_pool_spec spec;
  EXPECT_REJECTED(kvio_pool_get_spec(handle, &spec), KVIO_STATUS_CLOSED, "is closed");
}

TEST_F(TransferRejection, ForeignHandle) {
  kvio_transfer_desc d = desc({0}, {0});
  d.src_pool = executor_;  // an executor handle where a pool handle belongs
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT, "src_pool 0x",
                  "is not a handle of type 'pool' (its type is 'executor')");
  uint64_t transfer = 0;
  d = desc({0}, {0});
  EXPECT_REJECTED(kvio_submit(device_.pool().handle(), &d, &transfer), KVIO_STATUS_INVALID_ARGUMENT,
                  "executor 0x", "is not a handle of type 'executor' (its type is 'pool')");
  EXPECT_REJECTED(kvio_transfer_wait(device_.pool().handle(), 0), KVIO_STATUS_INVALID_ARGUMENT,
                  "is not a handle of type 'transfer' (its type is 'pool')");
  EXPECT_EQ(kvio_transfer_is_done(executor_), -KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_REJECTED(kvio_pool_close(0x1234), KVIO_STATUS_INVALID_ARGUMENT,
                  "is not a handle of type 'pool' (its type is 'unknown')");
}

TEST_F(TransferRejection, HandleZero) {
  kvio_transfer_desc d = desc({0}, {0});
  d.dst_pool = 0;
  EXPECT_REJECTED(submit(d), KVIO_STATUS_INVALID_ARGUMENT, "dst_pool is 0 (no pool)");
  uint64_t transfer = 0;
  d = desc({0}, {0});
  EXPECT_REJECTED(kvio_submit(0, &d, &transfer), KVIO_STATUS_INVALID_ARGUMENT,
                  "executor is 0 (no executor)");
  EXPECT_REJECTED(kvio_transfer_wait(0, -1), KVIO_STATUS_INVALID_ARGUMENT, "transfer is 0");
  EXPECT_EQ(kvio_transfer_is_done(0), -KVIO_STATUS_INVALID_ARGUMENT);
}

TEST_F(TransferRejection, ClosedTransferAndExecutorHandles) {
  kvio_transfer_desc d = desc({0}, {0});
  TestPool scratch(Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 4, 8, 4, 2, 16});
  d.dst_pool = scratch.pool().handle();
  uint64_t transfer = 0;
  ASSERT_EQ(kvio_submit(executor_, &d, &transfer), KVIO_STATUS_OK) << kvio_last_error();
  ASSERT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  EXPECT_REJECTED(kvio_transfer_wait(transfer, -1), KVIO_STATUS_CLOSED, "transfer 0x", "is closed");
  EXPECT_EQ(kvio_transfer_is_done(transfer), -KVIO_STATUS_CLOSED);
  ASSERT_EQ(kvio_executor_close(executor_), KVIO_STATUS_OK);
  const uint64_t closed = executor_;
  executor_ = 0;
  d = desc({0}, {0});
  EXPECT_REJECTED(kvio_submit(closed, &d, &transfer), KVIO_STATUS_CLOSED, "executor 0x",
                  "is closed");
  int32_t threads = 0;
  EXPECT_REJECTED(kvio_executor_threads(closed, &threads), KVIO_STATUS_CLOSED, "is closed");
  int32_t backend = -7;
  EXPECT_REJECTED(kvio_executor_backend(closed, &backend), KVIO_STATUS_CLOSED, "is closed");
  EXPECT_EQ(backend, -7) << "a refused query writes nothing";
}

// ---- pool creation ----

kvio_pool_spec smallSpec(int32_t kind, int32_t layout) {
  return kvio_pool_spec{kind, layout, 3, 2, 4, kind == KVIO_KIND_MHA ? 2 : 1, 8};
}

TEST(PoolRejection, WrapTooSmall) {
  const kvio_pool_spec spec = smallSpec(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST);  // 2 x 384 bytes
  std::vector<uint8_t> memory(768, kCanary);
  uint64_t pool = 0;
  EXPECT_REJECTED(kvio_pool_wrap(&spec, reinterpret_cast<uint64_t>(memory.data()), 767, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "size_bytes 767 is too small",
                  "this spec needs 768 bytes (2 components x 384)");
  EXPECT_EQ(pool, 0u);
  EXPECT_REJECTED(kvio_pool_wrap(&spec, 0, 768, &pool), KVIO_STATUS_INVALID_ARGUMENT,
                  "address is 0 (null)");
  EXPECT_REJECTED(kvio_pool_wrap(&spec, UINT64_MAX - 10, 768, &pool), KVIO_STATUS_INVALID_ARGUMENT,
                  "wraps around the address space");
  EXPECT_EQ(memory, std::vector<uint8_t>(768, kCanary));
}

TEST(PoolRejection, WrapComponentsTooSmallOrWrongCount) {
  const kvio_pool_spec spec = smallSpec(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST);
  std::vector<uint8_t> k(384, kCanary), v(384, kCanary);
  const uint64_t addresses[2] = {reinterpret_cast<uint64_t>(k.data()),
                                 reinterpret_cast<uint64_t>(v.data())};
  uint64_t pool = 0;
  EXPECT_REJECTED(kvio_pool_wrap_components(&spec, addresses, 2, 383, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "bytes_each 383 is too small",
                  "each component needs 384 bytes");
  EXPECT_REJECTED(kvio_pool_wrap_components(&spec, addresses, 1, 384, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "num_components is 1 but a mha pool has 2");
  const kvio_pool_spec mla = smallSpec(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST);
  EXPECT_REJECTED(kvio_pool_wrap_components(&mla, addresses, 2, 384, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "num_components is 2 but a mla pool has 1");
  const uint64_t withNull[2] = {addresses[0], 0};
  EXPECT_REJECTED(kvio_pool_wrap_components(&spec, withNull, 2, 384, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "component_addresses[1] is 0 (null)");
  EXPECT_EQ(pool, 0u);
  EXPECT_EQ(k, std::vector<uint8_t>(384, kCanary));
  EXPECT_EQ(v, std::vector<uint8_t>(384, kCanary));
}

// The addresses of the 128-byte layer buffers that `memory` holds, one after the other.
std::vector<uint64_t> layerTable(std::vector<uint8_t>& memory) {
  std::vector<uint64_t> table;
  for (size_t at = 0; at < memory.size(); at += 128) {
    table.push_back(reinterpret_cast<uint64_t>(memory.data() + at));
  }
  return table;
}

TEST(PoolRejection, WrapLayerTableNeedsLayerFirst) {
  const kvio_pool_spec spec = smallSpec(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST);
  std::vector<uint8_t> memory(6 * 128, kCanary);
  const std::vector<uint64_t> table = layerTable(memory);
  uint64_t pool = 0;
  EXPECT_REJECTED(kvio_pool_wrap_layer_table(&spec, table.data(), 6, 128, &pool),
                  KVIO_STATUS_UNSUPPORTED, "layout must be layer_first, got page_first");
  EXPECT_EQ(pool, 0u);
  EXPECT_EQ(memory, std::vector<uint8_t>(6 * 128, kCanary));
}

TEST(PoolRejection, WrapLayerTableWrongEntryCount) {
  const kvio_pool_spec spec = smallSpec(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST);
  std::vector<uint8_t> memory(6 * 128, kCanary);
  std::vector<uint64_t> table = layerTable(memory);
  uint64_t pool = 0;
  EXPECT_REJECTED(kvio_pool_wrap_layer_table(&spec, table.data(), 5, 128, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT,
                  "num_entries is 5 but the table needs 2 components x 3 layers = 6");
  EXPECT_REJECTED(kvio_pool_wrap_layer_table(&spec, table.data(), 6, 127, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "bytes_each 127 is too small",
                  "each layer buffer needs 128 bytes");
  table[4] = 0;
  EXPECT_REJECTED(kvio_pool_wrap_layer_table(&spec, table.data(), 6, 128, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "layer_addresses[4] is 0 (null)");
  EXPECT_EQ(pool, 0u);
  EXPECT_EQ(memory, std::vector<uint8_t>(6 * 128, kCanary));
}

std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  return text;
}

// A pool's buffers are distinct memory: a layer table or component list whose buffers overlap
// (the same buffer twice, one starting inside another, in either order) is refused, naming both
// entries, before any pool exists; buffers back to back are accepted. Otherwise a transfer
// between two layers of the pool read bytes it had written (the slot check sees distinct layers).
TEST(PoolRejection, WrapBuffersThatOverlapEachOther) {
  const kvio_pool_spec spec = smallSpec(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST);
  std::vector<uint8_t> memory(6 * 128, kCanary);
  std::vector<uint64_t> table = layerTable(memory);
  uint64_t pool = 0;
  table[3] = table[2] + 4;
  EXPECT_REJECTED(
      kvio_pool_wrap_layer_table(&spec, table.data(), 6, 128, &pool), KVIO_STATUS_INVALID_ARGUMENT,
      "layer_addresses[3] (" + hex(memory.data() + 260) +
          ", 128 bytes) overlaps layer_addresses[2] (" + hex(memory.data() + 256) + ", 128 bytes)",
      "distinct memory");
  table = layerTable(memory);
  table[5] = table[0];
  EXPECT_REJECTED(kvio_pool_wrap_layer_table(&spec, table.data(), 6, 128, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "layer_addresses[5] (" + hex(memory.data()),
                  "overlaps layer_addresses[0]");
  table = layerTable(memory);
  EXPECT_REJECTED(kvio_pool_wrap_layer_table(&spec, table.data(), 6, 129, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "layer_addresses[1]",
                  "overlaps layer_addresses[0]");
  EXPECT_EQ(pool, 0u);
  const uint8_t* k = memory.data();
  const uint64_t vInsideK[2] = {reinterpret_cast<uint64_t>(k), reinterpret_cast<uint64_t>(k + 100)};
  EXPECT_REJECTED(kvio_pool_wrap_components(&spec, vInsideK, 2, 384, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT,
                  "component_addresses[1] (" + hex(k + 100) +
                      ", 384 bytes) overlaps component_addresses[0] (" + hex(k) + ", 384 bytes)");
  const uint64_t kInsideV[2] = {reinterpret_cast<uint64_t>(k + 383), reinterpret_cast<uint64_t>(k)};
  EXPECT_REJECTED(kvio_pool_wrap_components(&spec, kInsideV, 2, 384, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "component_addresses[1]",
                  "overlaps component_addresses[0]");
  EXPECT_EQ(pool, 0u);
  EXPECT_EQ(memory, std::vector<uint8_t>(6 * 128, kCanary));
  // Back to back, in any order: accepted.
  table = layerTable(memory);
  std::reverse(table.begin(), table.end());
  ASSERT_EQ(kvio_pool_wrap_layer_table(&spec, table.data(), 6, 128, &pool), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  const uint64_t adjacent[2] = {reinterpret_cast<uint64_t>(k + 384), reinterpret_cast<uint64_t>(k)};
  ASSERT_EQ(kvio_pool_wrap_components(&spec, adjacent, 2, 384, &pool), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

// The same-pool transfer of the review's repro: layer 1 four bytes after layer 0, rows moved
// from layer 0 to layer 1. The wrap is refused, so no pool exists to move with.
TEST(PoolRejection, LayersThatShareBytesCannotBeMovedBetween) {
  const kvio_pool_spec spec{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 2, 1, 8, 1, 4};
  std::vector<uint8_t> memory(64, kCanary);
  const uint64_t base = reinterpret_cast<uint64_t>(memory.data());
  const uint64_t table[2] = {base, base + 4};
  uint64_t pool = 0;
  EXPECT_REJECTED(kvio_pool_wrap_layer_table(&spec, table, 2, 32, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "layer_addresses[1]",
                  "overlaps layer_addresses[0]");
  EXPECT_EQ(pool, 0u);
  EXPECT_EQ(memory, std::vector<uint8_t>(64, kCanary));
}

TEST(PoolRejection, AllocateBadSpec) {
  kvio_pool_spec spec = smallSpec(KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_HEAD);
  uint64_t pool = 0;
  EXPECT_REJECTED(kvio_pool_allocate(&spec, &pool), KVIO_STATUS_UNSUPPORTED, "needs an mha pool");
  spec = smallSpec(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST);
  spec.page_size = 0;
  EXPECT_REJECTED(kvio_pool_allocate(&spec, &pool), KVIO_STATUS_INVALID_ARGUMENT,
                  "page_size must be at least 1, got 0");
  EXPECT_REJECTED(kvio_pool_allocate(nullptr, &pool), KVIO_STATUS_INVALID_ARGUMENT, "spec is null");
  spec.page_size = 4;
  EXPECT_REJECTED(kvio_pool_allocate(&spec, nullptr), KVIO_STATUS_INVALID_ARGUMENT,
                  "pool_out is null");
}

TEST(PoolRejection, AllocateBadEnumerationValues) {
  // Every enumeration argument is checked by one helper: argument, value, names in value order.
  kvio_pool_spec spec = smallSpec(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST);
  uint64_t pool = 0;
  spec.kind = KVIO_KIND_COUNT;
  EXPECT_REJECTED(kvio_pool_allocate(&spec, &pool), KVIO_STATUS_INVALID_ARGUMENT,
                  "spec.kind: pool kind 2 is not valid; valid values: mha, mla (0 to 1 in that "
                  "order)");
  spec.kind = KVIO_KIND_MHA;
  spec.layout = -1;
  EXPECT_REJECTED(kvio_pool_allocate(&spec, &pool), KVIO_STATUS_INVALID_ARGUMENT,
                  "spec.layout: layout -1 is not valid; valid values: layer_first, page_first, "
                  "page_first_direct, page_head (0 to 3 in that order)");
  spec.layout = KVIO_LAYOUT_LAYER_FIRST;
  EXPECT_REJECTED(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_COUNT, 0, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT,
                  "memory_kind: memory kind 5 is not valid; valid values: host, host_pinned, "
                  "cuda_device, ascend_device, ascend_host_pinned (0 to 4 in that order)");
  // The C++ wrapper's default device (-1) is for host memory only: the message says what to pass.
  EXPECT_REJECTED(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_HOST_PINNED, -1, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT,
                  "device -1 is not a device ordinal (>= 0): memory of kind 'host_pinned' belongs "
                  "to a device; pass its ordinal (0 for the first)");
  EXPECT_EQ(pool, 0u);
}

TEST(PoolRejection, AllocateTooLarge) {
  // 2^52 bytes (4 PiB) fits the 2^62 spec limit but no address space.
  const kvio_pool_spec spec{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1024, 1 << 20, 1, 1, 4096};
  uint64_t pool = 0;
  EXPECT_REJECTED(kvio_pool_allocate(&spec, &pool), KVIO_STATUS_OUT_OF_MEMORY, "mmap of", "failed");
  EXPECT_EQ(pool, 0u);
}

TEST(PoolRejection, RegionOutOfRange) {
  kvio::Pool pool = kvio::Pool::allocate(kvio::PoolSpec{});
  for (const int64_t region : {int64_t{1}, int64_t{-1}, INT64_MAX}) {
    uint64_t address = 7;
    uint64_t bytes = 7;
    int64_t regions = 7;
    EXPECT_REJECTED(kvio_pool_region(pool.handle(), region, &address, &bytes, &regions),
                    KVIO_STATUS_OUT_OF_RANGE, "is out of range (valid: 0 to 0)");
    EXPECT_EQ(address, 7u);  // a refused query writes no output, the count included
    EXPECT_EQ(bytes, 7u);
    EXPECT_EQ(regions, 7);
  }
}

// ---- names ----

TEST(NameRejection, MisspelledBackendSuggestsNearest) {
  int32_t value = -1;
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_BACKEND, "kernel_ascned", &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "unknown io backend 'kernel_ascned'",
                  "valid values: cpu, kernel, direct, kernel_ascend",
                  "did you mean 'kernel_ascend'");
  EXPECT_EQ(value, -1);
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_LAYOUT, "Page_First", &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "did you mean 'page_first'");
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_LAYOUT, "layer-first", &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "did you mean 'layer_first'");
}

// Names from the reference that kvio spells otherwise get what to use instead, not a nearest
// match ('npu' is one edit from 'cpu', which would be wrong for an NPU).
TEST(NameRejection, ReferenceNamesSayWhatKvioUses) {
  int32_t value = -1;
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_LAYOUT, "page_first_kv_split", &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "unknown layout 'page_first_kv_split'",
                  "valid values: layer_first, page_first, page_first_direct, page_head",
                  "an mla pool of its own", "'page_first_direct' on the host", "docs/ascend.md");
  EXPECT_EQ(value, -1);
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_BACKEND, "NPU", &value), KVIO_STATUS_INVALID_ARGUMENT,
                  "unknown io backend 'NPU'", "the io backend is 'kernel_ascend'");
  EXPECT_EQ(std::string(kvio_last_error()).find("did you mean 'cpu'"), std::string::npos)
      << kvio_last_error();
  EXPECT_EQ(value, -1);
  for (const char* gpu : {"gpu", "CUDA", "nvidia"}) {
    EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_BACKEND, gpu, &value), KVIO_STATUS_INVALID_ARGUMENT,
                    "for an NVIDIA GPU the io backends are 'kernel'", "'direct'", "'staged'",
                    "'auto'");
    EXPECT_EQ(std::string(kvio_last_error()).find("did you mean"), std::string::npos)
        << kvio_last_error();
    EXPECT_EQ(value, -1);
  }
}

TEST(NameRejection, NoneListsValidValues) {
  int32_t value = -1;
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_BACKEND, "None", &value), KVIO_STATUS_INVALID_ARGUMENT,
                  "unknown io backend 'None'", "valid values: cpu, kernel, direct, kernel_ascend");
  EXPECT_EQ(std::string(kvio_last_error()).find("did you mean"), std::string::npos)
      << kvio_last_error();
}

TEST(NameRejection, EmptyAndNullListValidValues) {
  int32_t value = -1;
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_LAYOUT, "", &value), KVIO_STATUS_INVALID_ARGUMENT,
                  "unknown layout ''",
                  "valid values: layer_first, page_first, page_first_direct, page_head");
  EXPECT_EQ(std::string(kvio_last_error()).find("did you mean"), std::string::npos);
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_GRANULARITY, nullptr, &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "granularity is missing (null)",
                  "valid values: per_layer, all_layer");
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_KIND, "gqa", &value), KVIO_STATUS_INVALID_ARGUMENT,
                  "valid values: mha, mla");
  EXPECT_REJECTED(
      kvio_parse_name(7, "cpu", &value), KVIO_STATUS_INVALID_ARGUMENT,
      "table: name table 7 is not valid",
      "valid values: pool kind, layout, io backend, granularity, memory kind (0 to 4 in that "
      "order)");
}

// A very long input (a file read by mistake) is quoted in part, with its length, and gets no
// suggestion: the message stays short and the parse costs no memory in proportion to the
// input's length times a name's (the edit distance keeps rows, not a table). 64 characters are
// still quoted whole.
TEST(NameRejection, LongInputIsQuotedInPartWithoutSuggestion) {
  int32_t value = -1;
  const std::string huge = "page_first" + std::string(1000000 - 10, 'x');
  struct rusage before {};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &before), 0);
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_LAYOUT, huge.c_str(), &value),
                  KVIO_STATUS_INVALID_ARGUMENT,
                  "unknown layout '" + huge.substr(0, 64) + "...' (1000000 characters)",
                  "valid values: layer_first, page_first, page_first_direct, page_head");
  struct rusage after {};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &after), 0);
  EXPECT_LT(std::string(kvio_last_error()).size(), 200u) << kvio_last_error();
  EXPECT_EQ(std::string(kvio_last_error()).find("did you mean"), std::string::npos);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 32 * 1024) << "KiB more peak memory";
  EXPECT_EQ(value, -1);
  const std::string long64 = "page_first" + std::string(54, 'x');
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_LAYOUT, long64.c_str(), &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "unknown layout '" + long64 + "'; valid values");
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_LAYOUT, (long64 + "x").c_str(), &value),
                  KVIO_STATUS_INVALID_ARGUMENT,
                  "unknown layout '" + long64 + "...' (65 characters); valid values");
  // Transpositions still count one (the rows kept reach back two).
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_LAYOUT, "paeg_first", &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "did you mean 'page_first'");
}

// Bytes that are not printable ASCII (a newline, a control character, non-UTF-8) are quoted as
// \xNN: the message stays one line of text.
TEST(NameRejection, UnprintableBytesAreQuotedEscaped) {
  int32_t value = -1;
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_BACKEND, "cpu\n", &value), KVIO_STATUS_INVALID_ARGUMENT,
                  "unknown io backend 'cpu\\x0a'", "did you mean 'cpu'");
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_BACKEND, "\xff\xfe\x01", &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "'\\xff\\xfe\\x01'");
  // A backslash typed as such is doubled: it does not read as an escaped byte.
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_BACKEND, "cpu\\x0a", &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "'cpu\\\\x0a'");
  const std::string longOne = std::string(70, 'a') + "\t";
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_BACKEND, ("\x1b" + longOne).c_str(), &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "'\\x1b" + std::string(63, 'a') + "...'");
  EXPECT_EQ(std::string(kvio_last_error()).find_first_of("\n\t\x1b\xff"), std::string::npos)
      << kvio_last_error();
  EXPECT_EQ(value, -1);
}

TEST(NameRejection, CppParseThrows) {
  expectError([&] { kvio::parseIoBackend("kernel_ascned"); }, KVIO_STATUS_INVALID_ARGUMENT,
              {"did you mean 'kernel_ascend'"}, "'kernel_ascned'");
  EXPECT_EQ(kvio::parseLayout("page_first_direct"), kvio::Layout::PageFirstDirect);
}

TEST(NameAcceptance, EveryNameRoundTrips) {
  const int32_t counts[] = {KVIO_KIND_COUNT, KVIO_LAYOUT_COUNT, KVIO_BACKEND_COUNT,
                            KVIO_GRANULARITY_COUNT, KVIO_MEMORY_COUNT};
  static_assert(sizeof counts / sizeof counts[0] == KVIO_NAME_COUNT, "a count per name table");
  for (int32_t table = 0; table < KVIO_NAME_COUNT; ++table) {
    for (int32_t v = 0; v < counts[table]; ++v) {
      const char* name = kvio_name(table, v);
      ASSERT_NE(name, nullptr);
      int32_t parsed = -1;
      EXPECT_EQ(kvio_parse_name(table, name, &parsed), KVIO_STATUS_OK);
      EXPECT_EQ(parsed, v);
    }
    EXPECT_EQ(kvio_name(table, counts[table]), nullptr);
    EXPECT_EQ(kvio_name(table, -1), nullptr);
  }
  EXPECT_EQ(kvio_name(KVIO_NAME_COUNT, 0), nullptr);  // no such table
  EXPECT_EQ(kvio_name(-1, 0), nullptr);
}

// Memory kinds have names as the other enumerations do, spelt as kvio.h documents them.
TEST(NameAcceptance, MemoryKindsHaveTheirNames) {
  EXPECT_STREQ(kvio_name(KVIO_NAME_MEMORY, KVIO_MEMORY_HOST), "host");
  EXPECT_STREQ(kvio_name(KVIO_NAME_MEMORY, KVIO_MEMORY_HOST_PINNED), "host_pinned");
  EXPECT_STREQ(kvio_name(KVIO_NAME_MEMORY, KVIO_MEMORY_CUDA_DEVICE), "cuda_device");
  EXPECT_STREQ(kvio_name(KVIO_NAME_MEMORY, KVIO_MEMORY_ASCEND_DEVICE), "ascend_device");
  EXPECT_STREQ(kvio_name(KVIO_NAME_MEMORY, KVIO_MEMORY_ASCEND_HOST_PINNED), "ascend_host_pinned");
  int32_t value = -1;
  EXPECT_REJECTED(kvio_parse_name(KVIO_NAME_MEMORY, "cuda_devcie", &value),
                  KVIO_STATUS_INVALID_ARGUMENT, "unknown memory kind 'cuda_devcie'",
                  "did you mean 'cuda_device'");
  EXPECT_EQ(value, -1);
}

// kvio_name's NULL is explained by kvio_last_status / kvio_last_error (kvio.h), not left to
// describe an earlier, unrelated failure of the thread.
TEST(NameAcceptance, AnUnknownValueSaysWhyInTheLastError) {
  uint64_t executor = 0;  // an unrelated failure first: a closed executor's thread count
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  int32_t threads = 0;
  EXPECT_EQ(kvio_executor_threads(executor, &threads), KVIO_STATUS_CLOSED);
  EXPECT_EQ(kvio_name(KVIO_NAME_LAYOUT, 9), nullptr);
  EXPECT_EQ(kvio_last_status(), KVIO_STATUS_INVALID_ARGUMENT);
  const std::string layout = kvio_last_error();
  EXPECT_NE(layout.find("value"), std::string::npos) << layout;
  EXPECT_NE(layout.find("page_head"), std::string::npos) << layout;  // the valid values
  EXPECT_EQ(kvio_name(7, 0), nullptr);
  EXPECT_EQ(kvio_last_status(), KVIO_STATUS_INVALID_ARGUMENT);
  const std::string table = kvio_last_error();
  EXPECT_NE(table.find("table"), std::string::npos) << table;
}

// ---- support rules ----

kvio_support_query cpuQuery(int32_t kind, int32_t layout, int32_t granularity) {
  return kvio_support_query{kind,
                            layout,
                            KVIO_BACKEND_CPU,
                            granularity,
                            kind == KVIO_KIND_MHA ? 8 : 1,
                            kind == KVIO_KIND_MHA ? 256 : 1152,
                            64,
                            61,
                            61,
                            0};
}

TEST(SupportRejection, MlaPageHeadUnsupported) {
  const kvio_support_query q =
      cpuQuery(KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_HEAD, KVIO_GRANULARITY_ALL_LAYER);
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_UNSUPPORTED, "page_head", "needs an mha pool",
                  "Valid layouts for mla: layer_first, page_first, page_first_direct");
}

TEST(SupportRejection, HostLayersOutsideDevice) {
  kvio_support_query q =
      cpuQuery(KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, KVIO_GRANULARITY_ALL_LAYER);
  q.host_num_layers = 16;
  q.device_layer_start = 48;  // [48, 64) of 61 layers
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_OUT_OF_RANGE,
                  "device_layer_start 48 + host_num_layers 16 > device_num_layers 61; valid "
                  "device_layer_start: 0 to 45");
  q.device_layer_start = 46;  // the first start past the last valid one
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_OUT_OF_RANGE,
                  "valid device_layer_start: 0 to 45");
  q.device_layer_start = 45;
  EXPECT_EQ(kvio_check_support(&q), KVIO_STATUS_OK) << kvio_last_error();
  q.device_layer_start = -1;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_OUT_OF_RANGE,
                  "device_layer_start -1 is negative; valid device_layer_start: 0 to 45");
  q.device_layer_start = INT64_MAX;  // the range's end past int64: written as the sum
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_OUT_OF_RANGE,
                  "device layers [9223372036854775807, 9223372036854775807 + 16)");
  q.device_layer_start = INT64_MAX;  // the message must not overflow computing the range end
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_OUT_OF_RANGE,
                  "device_layer_start 9223372036854775807 + host_num_layers 16 > "
                  "device_num_layers 61");
  q.device_layer_start = 0;
  q.host_num_layers = 62;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_OUT_OF_RANGE,
                  "host_num_layers 62 > device_num_layers 61", "valid host_num_layers: 1 to 61");
  q.host_num_layers = 16;
  q.device_num_layers = 0;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT,
                  "device_num_layers must be at least 1, got 0");
}

// device_num_layers has the bound host_num_layers has (a pool of more layers cannot exist, so
// a host pool configured for one would fail at every transfer).
TEST(SupportRejection, DeviceLayersBounded) {
  kvio_support_query q = cpuQuery(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 0);
  q.device_num_layers = int64_t{1} << 40;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT,
                  "device_num_layers 1099511627776 is more than kvio supports",
                  "valid: 1 to 1048576");
  q.device_num_layers = (int64_t{1} << 20) + 1;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT,
                  "device_num_layers 1048577 is more than kvio supports");
  q.device_num_layers = int64_t{1} << 20;
  EXPECT_EQ(kvio_check_support(&q), KVIO_STATUS_OK) << kvio_last_error();
}

TEST(SupportRejection, BadEnumsListValidValues) {
  kvio_support_query q = cpuQuery(KVIO_KIND_MHA, 9, KVIO_GRANULARITY_PER_LAYER);
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT,
                  "query.layout: layout 9 is not valid",
                  "layer_first, page_first, page_first_direct, page_head (0 to 3 in that order)");
  q = cpuQuery(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 2);
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT, "granularity 2",
                  "per_layer, all_layer");
  q = cpuQuery(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 0);
  q.io_backend = -1;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT, "io backend -1",
                  "cpu, kernel, direct, kernel_ascend");
  q = cpuQuery(3, KVIO_LAYOUT_PAGE_FIRST, 0);
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT, "pool kind 3", "mha, mla");
  q = cpuQuery(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 0);
  q.head_bytes = 0;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT,
                  "head_bytes must be at least 1");
  EXPECT_REJECTED(kvio_check_support(nullptr), KVIO_STATUS_INVALID_ARGUMENT, "query is null");
}

// The geometry checks of a support query name the query's fields (host_num_layers, not the pool
// spec's num_layers) and never num_pages, which the query does not have.
TEST(SupportRejection, GeometryMessagesNameTheQueryFields) {
  kvio_support_query q = cpuQuery(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 0);
  q.host_num_layers = 0;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT,
                  "host_num_layers must be at least 1, got 0");
  q.host_num_layers = (int64_t{1} << 20) + 1;
  q.device_num_layers = int64_t{1} << 22;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT,
                  "host_num_layers 1048577 is more than kvio supports", "valid: 1 to 1048576");
  q = cpuQuery(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 0);
  q.page_size = int64_t{1} << 40;
  q.head_bytes = int64_t{1} << 20;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT,
                  "pool too large: one page of host_num_layers 61 x page_size 1099511627776 x "
                  "head_num 8 x head_bytes 1048576 does not fit in 2^62 bytes");
  EXPECT_EQ(std::string(kvio_last_error()).find("pages"), std::string::npos) << kvio_last_error();
  q.page_size = 0;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_INVALID_ARGUMENT,
                  "page_size must be at least 1, got 0");
}

TEST(SupportRejection, CudaBackendsUnavailableWithCause) {
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT}) {
    kvio_support_query q =
        cpuQuery(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, KVIO_GRANULARITY_PER_LAYER);
    q.io_backend = backend;
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_UNAVAILABLE,
                    std::string("io backend '") + kvio_name(KVIO_NAME_BACKEND, backend) +
                        "' is not available here",
                    "CUDA", "Available here: cpu");
  }
}

TEST(SupportRejection, AscendBackendUnavailableWithCause) {
  kvio_support_query q =
      cpuQuery(KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST_DIRECT, KVIO_GRANULARITY_ALL_LAYER);
  q.io_backend = KVIO_BACKEND_KERNEL_ASCEND;
  EXPECT_REJECTED(kvio_check_support(&q), KVIO_STATUS_UNAVAILABLE,
                  "io backend 'kernel_ascend' is not available here", "Ascend",
                  "Available here: cpu");
}

TEST(SupportAcceptance, CpuEveryLayoutAndGranularity) {
  for (int32_t kind : {KVIO_KIND_MHA, KVIO_KIND_MLA})
    for (int32_t layout = 0; layout < KVIO_LAYOUT_COUNT; ++layout) {
      if (kind == KVIO_KIND_MLA && layout == KVIO_LAYOUT_PAGE_HEAD) continue;
      for (int32_t g = 0; g < KVIO_GRANULARITY_COUNT; ++g) {
        SCOPED_TRACE(std::string(kvio_name(KVIO_NAME_KIND, kind)) + " " +
                     kvio_name(KVIO_NAME_LAYOUT, layout) + " " +
                     kvio_name(KVIO_NAME_GRANULARITY, g));
        kvio_support_query q = cpuQuery(kind, layout, g);
        EXPECT_EQ(kvio_check_support(&q), KVIO_STATUS_OK) << kvio_last_error();
        // Layer-sharded host pools: the last 16 of 61 device layers, and one layer.
        q.host_num_layers = 16;
        q.device_layer_start = 45;
        EXPECT_EQ(kvio_check_support(&q), KVIO_STATUS_OK) << kvio_last_error();
        q.host_num_layers = 1;
        q.device_layer_start = 60;
        EXPECT_EQ(kvio_check_support(&q), KVIO_STATUS_OK) << kvio_last_error();
      }
    }
  EXPECT_EQ(kvio_backend_available(KVIO_BACKEND_CPU), KVIO_STATUS_OK);
}

// ---- executors ----

TEST(ExecutorRejection, UnavailableBackends) {
  uint64_t executor = 0;
  EXPECT_REJECTED(kvio_executor_create(KVIO_BACKEND_KERNEL, 0, &executor), KVIO_STATUS_UNAVAILABLE,
                  "CUDA");
  EXPECT_REJECTED(kvio_executor_create(KVIO_BACKEND_DIRECT, 0, &executor), KVIO_STATUS_UNAVAILABLE,
                  "CUDA");
  EXPECT_REJECTED(kvio_executor_create(KVIO_BACKEND_STAGED, 0, &executor), KVIO_STATUS_UNAVAILABLE,
                  "CUDA");
  EXPECT_REJECTED(kvio_executor_create(KVIO_BACKEND_KERNEL_ASCEND, 0, &executor),
                  KVIO_STATUS_UNAVAILABLE, "Ascend");
  EXPECT_REJECTED(kvio_executor_create(KVIO_BACKEND_COUNT, 0, &executor),
                  KVIO_STATUS_INVALID_ARGUMENT, "io backend 6 is not valid",
                  "cpu, kernel, direct, kernel_ascend, auto, staged");
  EXPECT_EQ(executor, 0u);
  expectError([&] { kvio::Executor e(kvio::IoBackend::Direct); }, KVIO_STATUS_UNAVAILABLE, {},
              "a direct executor without CUDA");
}

// Refused for every io backend, before its availability: the answer does not depend on the
// machine (auto on a GPU, which has no io threads, accepted it; kernel without CUDA said
// UNAVAILABLE).
TEST(ExecutorRejection, TooManyThreads) {
  uint64_t executor = 0;
  for (int32_t backend = 0; backend < KVIO_BACKEND_COUNT; ++backend) {
    EXPECT_REJECTED(kvio_executor_create(backend, 1025, &executor), KVIO_STATUS_INVALID_ARGUMENT,
                    "threads must be 1 to 1024", "<= 0 for one per online core", "got 1025")
        << kvio_name(KVIO_NAME_BACKEND, backend);
    EXPECT_EQ(executor, 0u);
  }
  EXPECT_REJECTED(kvio_executor_create(KVIO_BACKEND_CPU, 1, nullptr), KVIO_STATUS_INVALID_ARGUMENT,
                  "executor_out is null");
}

}  // namespace
}  // namespace kvio_test
