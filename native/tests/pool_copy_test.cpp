// kvio_pool_copy (kvio.h): the synchronous copy between a pool's memory and pageable host
// memory, on pageable and Ascend pinned host pools and, through the ACL host emulation
// (acl_host_emulation.hpp), on NPU memory, in pieces larger than the pinned staging buffer. Its
// rejections (region, byte range, host address, direction, closed pool) change no byte, and it
// leaves no stream or staging buffer behind, also when an ACL call fails.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "acl_emulation_test.hpp"
#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "rejection_assertions.hpp"

namespace kvio_test {
namespace {

using kvio::ascend::aclError;

// 2 components x 4 layers x 160 pages x 16 tokens x 2048 bytes: 40 MiB, so an NPU copy of a
// whole component (20 MiB) needs two pieces of the 16 MiB staging buffer.
kvio_pool_spec bigSpec() {
  kvio_pool_spec spec{};
  spec.kind = KVIO_KIND_MHA;
  spec.layout = KVIO_LAYOUT_LAYER_FIRST;
  spec.num_layers = 4;
  spec.num_pages = 160;
  spec.page_size = 16;
  spec.head_num = 8;
  spec.head_bytes = 256;
  return spec;
}

kvio_pool_spec smallSpec() {
  kvio_pool_spec spec = bigSpec();
  spec.num_pages = 2;
  return spec;
}

uint64_t allocate(const kvio_pool_spec& spec, int32_t kind, int32_t device) {
  uint64_t pool = 0;
  EXPECT_EQ(kvio_pool_allocate_memory(&spec, kind, device, &pool), KVIO_STATUS_OK)
      << kvio_last_error();
  return pool;
}

uint64_t regionBytes(uint64_t pool, int64_t region = 0) {
  uint64_t bytes = 0;
  EXPECT_EQ(kvio_pool_region(pool, region, nullptr, &bytes, nullptr), KVIO_STATUS_OK);
  return bytes;
}

std::vector<unsigned char> pattern(size_t bytes, unsigned seed) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed) >> 3);
  return v;
}

// Writes a pattern at `offset`, reads the whole region back and checks that only those bytes
// changed (the rest stays zero, as allocated).
void roundTrip(uint64_t pool, uint64_t offset, size_t bytes) {
  const uint64_t total = regionBytes(pool);
  const std::vector<unsigned char> written = pattern(bytes, 7);
  ASSERT_EQ(kvio_pool_copy(pool, 0, offset, reinterpret_cast<uint64_t>(written.data()), bytes,
                           KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OK)
      << kvio_last_error();
  std::vector<unsigned char> image(total, 0xee);
  ASSERT_EQ(kvio_pool_copy(pool, 0, 0, reinterpret_cast<uint64_t>(image.data()), total,
                           KVIO_COPY_POOL_TO_HOST),
            KVIO_STATUS_OK)
      << kvio_last_error();
  std::vector<unsigned char> expected(total, 0);
  std::memcpy(expected.data() + offset, written.data(), bytes);
  EXPECT_TRUE(image == expected);
}

// A host pool holding a pattern (not the zeros it was allocated with) and a host buffer of a
// canary, 16 bytes longer than the region (longer than any range tried): what the refusal tests
// compare afterwards.
struct PatternAndCanary {
  uint64_t pool = 0;
  uint64_t total = 0;                  // the pool's region bytes
  std::vector<unsigned char> content;  // what the pool holds
  std::vector<unsigned char> host;     // the canary
  uint64_t hostAddress() const { return reinterpret_cast<uint64_t>(host.data()); }
  bool hostUnchanged() const { return host == std::vector<unsigned char>(total + 16, 0x5a); }
};

void fillPatternAndCanary(PatternAndCanary* p) {
  p->pool = allocate(smallSpec(), KVIO_MEMORY_HOST, -1);
  p->total = regionBytes(p->pool);
  p->content = pattern(p->total, 3);
  ASSERT_EQ(kvio_pool_copy(p->pool, 0, 0, reinterpret_cast<uint64_t>(p->content.data()), p->total,
                           KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OK);
  p->host.assign(p->total + 16, 0x5a);
}

TEST(PoolCopyTest, HostPoolRoundTrip) {
  const uint64_t pool = allocate(smallSpec(), KVIO_MEMORY_HOST, -1);
  roundTrip(pool, 4096 + 3, 10000);
  uint64_t address = 0;
  ASSERT_EQ(kvio_pool_region(pool, 0, &address, nullptr, nullptr), KVIO_STATUS_OK);
  EXPECT_EQ(reinterpret_cast<unsigned char*>(address)[4096 + 3], pattern(1, 7)[0]);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

// Every refusal, in both directions, with its status and what its message names; the pool holds
// a pattern (not the zeros it was allocated with) and the host buffer a canary, one byte longer
// on each side than any range tried: afterwards both are compared whole.
TEST(PoolCopyTest, RejectionsChangeNothing) {
  PatternAndCanary p;
  ASSERT_NO_FATAL_FAILURE(fillPatternAndCanary(&p));
  const uint64_t pool = p.pool, total = p.total, h = p.hostAddress();
  for (int32_t direction : {KVIO_COPY_HOST_TO_POOL, KVIO_COPY_POOL_TO_HOST}) {
    SCOPED_TRACE(direction);
    EXPECT_REJECTED(kvio_pool_copy(pool, 1, 0, h, 8, direction), KVIO_STATUS_OUT_OF_RANGE,
                    "region 1 is out of range (valid: 0 to 0)");
    EXPECT_REJECTED(kvio_pool_copy(pool, -1, 0, h, 8, direction), KVIO_STATUS_OUT_OF_RANGE,
                    "region -1 is out of range (valid: 0 to 0)");
    EXPECT_REJECTED(kvio_pool_copy(pool, 0, total - 7, h, 8, direction), KVIO_STATUS_OUT_OF_RANGE,
                    "outside region 0", std::to_string(total) + " bytes");
    EXPECT_REJECTED(kvio_pool_copy(pool, 0, total + 1, h, 0, direction), KVIO_STATUS_OUT_OF_RANGE,
                    "outside region 0");
    EXPECT_REJECTED(kvio_pool_copy(pool, 0, 8, h, UINT64_MAX, direction), KVIO_STATUS_OUT_OF_RANGE,
                    "outside region 0");
    EXPECT_REJECTED(kvio_pool_copy(pool, 0, 0, 0, 8, direction), KVIO_STATUS_INVALID_ARGUMENT,
                    "host_address is 0 (null)");
    EXPECT_REJECTED(kvio_pool_copy(pool, 0, 0, UINT64_MAX - 3, 8, direction),
                    KVIO_STATUS_INVALID_ARGUMENT, "host_address", "wraps around the address space");
  }
  EXPECT_REJECTED(kvio_pool_copy(pool, 0, 0, h, 8, 2), KVIO_STATUS_INVALID_ARGUMENT,
                  "direction 2 is not valid");
  EXPECT_EQ(kvio_pool_copy(pool, 0, 0, 0, 0, KVIO_COPY_POOL_TO_HOST), KVIO_STATUS_OK);  // empty
  EXPECT_TRUE(p.hostUnchanged()) << "a refused copy wrote to the host buffer";
  std::vector<unsigned char> image(total, 0xee);
  ASSERT_EQ(kvio_pool_copy(pool, 0, 0, reinterpret_cast<uint64_t>(image.data()), total,
                           KVIO_COPY_POOL_TO_HOST),
            KVIO_STATUS_OK);
  EXPECT_TRUE(image == p.content) << "a refused copy wrote to the pool";
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  for (int32_t direction : {KVIO_COPY_HOST_TO_POOL, KVIO_COPY_POOL_TO_HOST}) {
    EXPECT_REJECTED(kvio_pool_copy(pool, 0, 0, h, 8, direction), KVIO_STATUS_CLOSED, "closed");
  }
  EXPECT_TRUE(p.hostUnchanged()) << "a copy from a closed pool wrote to the host buffer";
}

// A refused copy to the host writes no host byte, also the part of the range that lies inside
// the region (a range that starts 7 bytes before the end, and a negative region).
TEST(PoolCopyTest, RefusedCopiesToTheHostWriteNoHostByte) {
  PatternAndCanary p;
  ASSERT_NO_FATAL_FAILURE(fillPatternAndCanary(&p));
  const uint64_t pool = p.pool, total = p.total, h = p.hostAddress();
  EXPECT_REJECTED(kvio_pool_copy(pool, 0, total - 7, h, 8, KVIO_COPY_POOL_TO_HOST),
                  KVIO_STATUS_OUT_OF_RANGE, "outside region 0");
  EXPECT_REJECTED(kvio_pool_copy(pool, -1, 0, h, 8, KVIO_COPY_POOL_TO_HOST),
                  KVIO_STATUS_OUT_OF_RANGE, "region -1 is out of range");
  EXPECT_TRUE(p.hostUnchanged()) << "a refused copy wrote";
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

TEST(PoolCopyTest, CppApiCopiesAndThrowsTypedErrors) {
  kvio::PoolSpec spec{kvio::PoolKind::Mla, kvio::Layout::LayerFirst, 1, 1, 4, 1, 8};
  kvio::Pool pool = kvio::Pool::allocate(spec);
  const uint64_t in[4] = {1, 2, 3, 4};
  pool.copyFrom(0, 8, in, 24);
  uint64_t out[4] = {9, 9, 9, 9};
  pool.copyTo(0, 0, out, sizeof(out));
  EXPECT_EQ(out[0], 0u);
  EXPECT_EQ(out[1], 1u);
  EXPECT_EQ(out[3], 3u);
  expectError([&] { pool.copyTo(0, 8, out, sizeof(out)); }, KVIO_STATUS_OUT_OF_RANGE,
              {"outside region 0"}, "a range past the region");
  EXPECT_EQ(out[0], 0u);  // the refused copy wrote nothing: out is what the first copy read
  EXPECT_EQ(out[1], 1u);
  EXPECT_EQ(out[2], 2u);
  EXPECT_EQ(out[3], 3u);
}

class PoolCopyAscendTest : public AclEmulationTest {
 protected:
  PoolCopyAscendTest() : AclEmulationTest(false) {}
};

TEST_F(PoolCopyAscendTest, NpuPoolRoundTripInStagedPieces) {
  const uint64_t pool = allocate(bigSpec(), KVIO_MEMORY_ASCEND_DEVICE, 0);
  acl().reset();
  roundTrip(pool, 12345, (20u << 20) + 99);  // pageable host memory on the caller's side
  const AclCallCounts counts = acl().counts();
  EXPECT_EQ(counts.memcpyAsync, 2 + 3);  // 20 MiB + 99 in, 40 MiB out, 16 MiB at a time
  EXPECT_EQ(counts.synchronizeStream, counts.memcpyAsync);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

TEST_F(PoolCopyAscendTest, PinnedHostPoolIsCopiedOnTheHost) {
  const uint64_t pool = allocate(smallSpec(), KVIO_MEMORY_ASCEND_HOST_PINNED, 0);
  acl().reset();
  roundTrip(pool, 0, 4096);
  EXPECT_EQ(acl().counts().copyCalls(), 0);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

TEST_F(PoolCopyAscendTest, FailedAclCallIsReportedAndLeavesNothingBehind) {
  const uint64_t pool = allocate(bigSpec(), KVIO_MEMORY_ASCEND_DEVICE, 0);
  std::vector<unsigned char> host(1 << 20);
  acl().failCall("aclrtMemcpyAsync", 0, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(kvio_pool_copy(pool, 0, 0, reinterpret_cast<uint64_t>(host.data()), host.size(),
                           KVIO_COPY_POOL_TO_HOST),
            KVIO_STATUS_BACKEND_ERROR);
  EXPECT_NE(std::string(kvio_last_error()).find("aclrtMemcpyAsync"), std::string::npos)
      << kvio_last_error();
  acl().failCall("aclrtMallocHost", 0, kvio::ascend::ACL_ERROR_BAD_ALLOC);
  EXPECT_EQ(kvio_pool_copy(pool, 0, 0, reinterpret_cast<uint64_t>(host.data()), host.size(),
                           KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

}  // namespace
}  // namespace kvio_test
