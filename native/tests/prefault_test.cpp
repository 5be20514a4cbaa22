// kvio_pool_prefault (kvio.h): every page of a pool's pageable host memory is backed afterwards,
// as mincore() tells (the kernel's own account, no kvio code), and no byte of the pool or of the
// memory around a wrapped region changes; memory that cannot be written is refused without a
// crash; closed and unknown handles are refused.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "kvio_test_hooks.h"
#include "oracle.hpp"
#include "rejection_assertions.hpp"

namespace kvio_test {
namespace {

// Pages of [address, +bytes) the kernel has backed (mincore), and how many pages it spans.
struct Residency {
  size_t resident = 0;
  size_t pages = 0;
};
Residency residency(uint64_t address, uint64_t bytes) {
  const uint64_t page = hostPageBytes();
  const uint64_t first = address / page * page;
  const uint64_t end = (address + bytes + page - 1) / page * page;
  std::vector<unsigned char> states(static_cast<size_t>((end - first) / page));
  EXPECT_EQ(mincore(reinterpret_cast<void*>(first), end - first, states.data()), 0)
      << std::strerror(errno);
  Residency r;
  r.pages = states.size();
  for (unsigned char s : states) r.resident += s & 1;
  return r;
}

// An anonymous private mapping of whole pages, untouched until the test writes it, and kept
// out of transparent huge pages (with THP "always", touching one byte would back a whole 2 MiB
// page and the pages around a region would not stay unbacked).
class Mapping {
 public:
  Mapping(size_t bytes, int protection)
      : bytes_((bytes + hostPageBytes() - 1) / hostPageBytes() * hostPageBytes()),
        data_(static_cast<uint8_t*>(
            mmap(nullptr, bytes_, protection, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {
    if (data_ != MAP_FAILED) madvise(data_, bytes_, MADV_NOHUGEPAGE);  // advice: may be refused
  }
  ~Mapping() {
    if (data_ != MAP_FAILED) munmap(data_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  bool ok() const { return data_ != MAP_FAILED; }
  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  uint8_t* data_;
};

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

// Whether this kernel has madvise(MADV_POPULATE_WRITE) (Linux 5.14; gVisor and older kernels
// do not), asked here without kvio: caller memory can be prefaulted only where it has.
bool kernelHasPopulateWrite() {
  Mapping page(hostPageBytes(), PROT_READ | PROT_WRITE);
  return page.ok() && madvise(page.data(), page.bytes(), MADV_POPULATE_WRITE) == 0;
}
#define SKIP_WITHOUT_POPULATE_WRITE()                                                           \
  if (!kernelHasPopulateWrite())                                                                \
  GTEST_SKIP() << "this kernel has no madvise(MADV_POPULATE_WRITE) (Linux 5.14); kvio refuses " \
                  "to prefault caller memory here (OnAKernelWithoutPopulate... shows how)"

// Arms KVIO_TEST_FAULT_NO_POPULATE for the next `count` regions; disarmed when it goes, however
// the test ends, so that no later test in this binary sees the fault.
// (ProbeFails: the same for KVIO_TEST_FAULT_POPULATE_PROBE.)
class ArmedFault {
 public:
  ArmedFault(int32_t fault, int64_t count) : fault_(fault) {
    EXPECT_EQ(kvio_test_inject_fault(fault, count), KVIO_STATUS_OK);
  }
  ~ArmedFault() { kvio_test_inject_fault(fault_, 0); }
  ArmedFault(const ArmedFault&) = delete;
  ArmedFault& operator=(const ArmedFault&) = delete;

 private:
  int32_t fault_;
};
struct NoPopulate : ArmedFault {
  explicit NoPopulate(int64_t count) : ArmedFault(KVIO_TEST_FAULT_NO_POPULATE, count) {}
};
struct ProbeFails : ArmedFault {
  explicit ProbeFails(int64_t count) : ArmedFault(KVIO_TEST_FAULT_POPULATE_PROBE, count) {}
};

// 2 components x 4 layers x 64 pages x 16 tokens x 1 KiB: 8 MiB.
kvio_pool_spec spec() {
  kvio_pool_spec s{};
  s.kind = KVIO_KIND_MHA;
  s.layout = KVIO_LAYOUT_LAYER_FIRST;
  s.num_layers = 4;
  s.num_pages = 64;
  s.page_size = 16;
  s.head_num = 4;
  s.head_bytes = 256;
  return s;
}

// Bytes a wrap of spec() takes (its two components, one after the other): 8 MiB.
uint64_t wrapBytes() {
  const kvio_pool_spec s = spec();
  uint64_t component = 0;
  EXPECT_EQ(kvio_pool_component_bytes(&s, &component), KVIO_STATUS_OK);
  return component * 2;
}

// A pool kvio allocated: untouched pages are backed afterwards; bytes written before (a few
// pages) are kept, the rest still reads zero.
TEST(Prefault, APoolKvioAllocatedIsBackedAndKeepsItsBytes) {
  const kvio_pool_spec s = spec();
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_allocate(&s, &pool), KVIO_STATUS_OK) << kvio_last_error();
  uint64_t address = 0, bytes = 0;
  ASSERT_EQ(kvio_pool_region(pool, 0, &address, &bytes, nullptr), KVIO_STATUS_OK);
  const Residency before = residency(address, bytes);
  EXPECT_LT(before.resident, before.pages) << "kvio backed the pool already: nothing to show";
  std::vector<uint8_t> written(3 * 4096);
  std::mt19937_64 rng(1);
  fillRandom(written.data(), written.size(), rng);
  const uint64_t offset = bytes / 2 + 100;
  ASSERT_EQ(kvio_pool_copy(pool, 0, offset, reinterpret_cast<uint64_t>(written.data()),
                           written.size(), KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OK);

  ASSERT_EQ(kvio_pool_prefault(pool), KVIO_STATUS_OK) << kvio_last_error();
  const Residency after = residency(address, bytes);
  EXPECT_EQ(after.resident, after.pages);
  std::vector<uint8_t> expected(static_cast<size_t>(bytes), 0);
  ASSERT_GT(expected.size(), offset + written.size());
  std::copy(written.begin(), written.end(), expected.begin() + static_cast<ptrdiff_t>(offset));
  std::vector<uint8_t> actual(static_cast<size_t>(bytes), kCanary);
  ASSERT_EQ(kvio_pool_copy(pool, 0, 0, reinterpret_cast<uint64_t>(actual.data()), bytes,
                           KVIO_COPY_POOL_TO_HOST),
            KVIO_STATUS_OK);
  EXPECT_TRUE(actual == expected);
  EXPECT_EQ(kvio_pool_prefault(pool), KVIO_STATUS_OK) << "again: nothing left to do";
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

// Caller memory wrapped from inside a page: the pages the region touches are backed, every
// byte of the mapping (the region's and its neighbours' in those pages) is as it was, and the
// pages the region does not touch stay unbacked (nothing outside it was populated but its own
// first and last pages).
TEST(Prefault, WrappedCallerMemoryIsBackedAndKeepsEveryByte) {
  SKIP_WITHOUT_POPULATE_WRITE();
  const kvio_pool_spec s = spec();
  const uint64_t need = wrapBytes();
  const uint64_t page = hostPageBytes();
  Mapping memory(need + 4 * page, PROT_READ | PROT_WRITE);
  ASSERT_TRUE(memory.ok());
  uint8_t* const region = memory.data() + page + 100;  // inside the second page
  std::vector<uint8_t> image(memory.bytes(), 0);
  for (uint64_t at : {uint64_t{0}, page + 50, page + 100 + need / 3, page + 100 + need + 10}) {
    memory.data()[at] = static_cast<uint8_t>(at * 7 + 1);  // before, inside and after the region
    image[at] = memory.data()[at];
  }
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_wrap(&s, reinterpret_cast<uint64_t>(region), need, &pool), KVIO_STATUS_OK)
      << kvio_last_error();
  ASSERT_EQ(kvio_pool_prefault(pool), KVIO_STATUS_OK) << kvio_last_error();
  const Residency inside = residency(reinterpret_cast<uint64_t>(region), need);
  EXPECT_EQ(inside.resident, inside.pages);
  const uint64_t pastRegionPage = (page + 100 + need + page - 1) / page * page + page;
  if (pastRegionPage < memory.bytes()) {
    const Residency past =
        residency(reinterpret_cast<uint64_t>(memory.data()) + pastRegionPage, page);
    EXPECT_EQ(past.resident, 0u) << "a page past the region's pages was backed";
  }
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  EXPECT_EQ(std::memcmp(memory.data(), image.data(), memory.bytes()), 0);
}

// Memory that cannot be written (a read-only mapping, which a pool may wrap as a source) is
// refused with the reason; the process goes on and the memory is unchanged.
TEST(Prefault, ReadOnlyMemoryIsRefusedWithoutACrash) {
  SKIP_WITHOUT_POPULATE_WRITE();
  const kvio_pool_spec s = spec();
  const uint64_t need = wrapBytes();
  Mapping memory(need, PROT_READ);
  ASSERT_TRUE(memory.ok());
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_wrap(&s, reinterpret_cast<uint64_t>(memory.data()), need, &pool),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_REJECTED(kvio_pool_prefault(pool), KVIO_STATUS_INVALID_ARGUMENT, "prefaulting region 0",
                  "cannot be backed for writing", "read-only");
  for (size_t i = 0; i < memory.bytes(); ++i) ASSERT_EQ(memory.data()[i], 0) << i;
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

// A file mapping that runs past the end of its file (a page of file, then a hole a write would
// meet with SIGBUS): refused as out of memory, saying why, and the process goes on; the file's
// page before the hole is as it was.
TEST(Prefault, AMappingPastTheEndOfItsFileIsRefusedWithoutACrash) {
  SKIP_WITHOUT_POPULATE_WRITE();
  const kvio_pool_spec s = spec();
  const uint64_t need = wrapBytes();
  const int file = memfd_create("kvio-prefault-test", 0);
  ASSERT_GE(file, 0) << std::strerror(errno);
  const uint64_t page = hostPageBytes();
  ASSERT_EQ(ftruncate(file, static_cast<off_t>(page)), 0) << std::strerror(errno);
  void* const mapped = mmap(nullptr, need, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
  ASSERT_NE(mapped, MAP_FAILED) << std::strerror(errno);
  auto* const bytes = static_cast<uint8_t*>(mapped);
  bytes[7] = 0x5a;
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_wrap(&s, reinterpret_cast<uint64_t>(mapped), need, &pool), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_REJECTED(kvio_pool_prefault(pool), KVIO_STATUS_OUT_OF_MEMORY, "prefaulting region 0",
                  "SIGBUS", "past the end of its file");
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  for (uint64_t i = 0; i < page; ++i) ASSERT_EQ(bytes[i], i == 7 ? 0x5a : 0) << i;
  munmap(mapped, need);
  close(file);
}

// Without madvise(MADV_POPULATE_WRITE) (a kernel before 5.14, here the test hook): memory kvio
// allocated is touched page by page, every byte kept; caller memory is refused (kvio writes none
// of it), saying what to do, and stays unbacked.
TEST(Prefault, OnAKernelWithoutPopulateKviosMemoryIsTouchedAndCallerMemoryRefused) {
  const kvio_pool_spec s = spec();
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_allocate(&s, &pool), KVIO_STATUS_OK) << kvio_last_error();
  uint64_t address = 0, bytes = 0;
  ASSERT_EQ(kvio_pool_region(pool, 0, &address, &bytes, nullptr), KVIO_STATUS_OK);
  std::vector<uint8_t> written(5000);
  std::mt19937_64 rng(2);
  fillRandom(written.data(), written.size(), rng);
  ASSERT_EQ(kvio_pool_copy(pool, 0, 4000, reinterpret_cast<uint64_t>(written.data()),
                           written.size(), KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OK);
  {
    const NoPopulate once(1);
    ASSERT_EQ(kvio_pool_prefault(pool), KVIO_STATUS_OK) << kvio_last_error();
  }
  const Residency after = residency(address, bytes);
  EXPECT_EQ(after.resident, after.pages);
  std::vector<uint8_t> expected(static_cast<size_t>(bytes), 0);
  ASSERT_GT(expected.size(), 4000 + written.size());
  std::copy(written.begin(), written.end(), expected.begin() + 4000);
  std::vector<uint8_t> actual(static_cast<size_t>(bytes), kCanary);
  ASSERT_EQ(kvio_pool_copy(pool, 0, 0, reinterpret_cast<uint64_t>(actual.data()), bytes,
                           KVIO_COPY_POOL_TO_HOST),
            KVIO_STATUS_OK);
  EXPECT_TRUE(actual == expected);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);

  const uint64_t need = wrapBytes();
  Mapping memory(need, PROT_READ | PROT_WRITE);
  ASSERT_TRUE(memory.ok());
  ASSERT_EQ(kvio_pool_wrap(&s, reinterpret_cast<uint64_t>(memory.data()), need, &pool),
            KVIO_STATUS_OK);
  {
    const NoPopulate once(1);
    EXPECT_REJECTED(kvio_pool_prefault(pool), KVIO_STATUS_UNSUPPORTED, "prefaulting region 0",
                    "MADV_POPULATE_WRITE", "Linux 5.14",
                    "touch a byte of each of its pages yourself");
  }
  EXPECT_EQ(residency(reinterpret_cast<uint64_t>(memory.data()), need).resident, 0u);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

// The probe that asks the kernel for MADV_POPULATE_WRITE can fail for want of a page of its own
// (ENOMEM; here the test hook). That says nothing about the kernel: kvio's own memory is still
// backed (touched page by page, every byte kept), and caller memory, which kvio does not write,
// is refused with OUT_OF_MEMORY naming the probe, and stays unbacked.
TEST(Prefault, AFailedProbeTouchesKviosMemoryAndRefusesCallerMemory) {
  const kvio_pool_spec s = spec();
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_allocate(&s, &pool), KVIO_STATUS_OK) << kvio_last_error();
  uint64_t address = 0, bytes = 0;
  ASSERT_EQ(kvio_pool_region(pool, 0, &address, &bytes, nullptr), KVIO_STATUS_OK);
  std::vector<uint8_t> written(3000);
  std::mt19937_64 rng(3);
  fillRandom(written.data(), written.size(), rng);
  ASSERT_EQ(kvio_pool_copy(pool, 0, 9000, reinterpret_cast<uint64_t>(written.data()),
                           written.size(), KVIO_COPY_HOST_TO_POOL),
            KVIO_STATUS_OK);
  {
    const ProbeFails once(1);
    ASSERT_EQ(kvio_pool_prefault(pool), KVIO_STATUS_OK) << kvio_last_error();
  }
  const Residency after = residency(address, bytes);
  EXPECT_EQ(after.resident, after.pages);
  std::vector<uint8_t> expected(static_cast<size_t>(bytes), 0);
  ASSERT_GT(expected.size(), 9000 + written.size());
  std::copy(written.begin(), written.end(), expected.begin() + 9000);
  std::vector<uint8_t> actual(static_cast<size_t>(bytes), kCanary);
  ASSERT_EQ(kvio_pool_copy(pool, 0, 0, reinterpret_cast<uint64_t>(actual.data()), bytes,
                           KVIO_COPY_POOL_TO_HOST),
            KVIO_STATUS_OK);
  EXPECT_TRUE(actual == expected);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);

  const uint64_t need = wrapBytes();
  Mapping memory(need, PROT_READ | PROT_WRITE);
  ASSERT_TRUE(memory.ok());
  ASSERT_EQ(kvio_pool_wrap(&s, reinterpret_cast<uint64_t>(memory.data()), need, &pool),
            KVIO_STATUS_OK);
  {
    const ProbeFails once(1);
    EXPECT_REJECTED(kvio_pool_prefault(pool), KVIO_STATUS_OUT_OF_MEMORY, "prefaulting region 0",
                    "asking the kernel whether it has madvise(MADV_POPULATE_WRITE) failed",
                    std::strerror(ENOMEM));
  }
  EXPECT_EQ(residency(reinterpret_cast<uint64_t>(memory.data()), need).resident, 0u);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

TEST(Prefault, ClosedAndUnknownPoolsAreRefused) {
  const kvio_pool_spec s = spec();
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_allocate(&s, &pool), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_prefault(pool), KVIO_STATUS_CLOSED);
  EXPECT_EQ(kvio_pool_prefault(0), KVIO_STATUS_INVALID_ARGUMENT);
}

// The C++ form: Pool::prefault() backs the pool; on a closed pool it throws.
TEST(Prefault, CppForm) {
  const kvio_pool_spec c = spec();
  kvio::PoolSpec s;
  s.kind = kvio::PoolKind::Mha;
  s.layout = kvio::Layout::LayerFirst;
  s.numLayers = c.num_layers;
  s.numPages = c.num_pages;
  s.pageSize = c.page_size;
  s.headNum = c.head_num;
  s.headBytes = c.head_bytes;
  kvio::Pool pool = kvio::Pool::allocate(s);
  pool.prefault();
  const Residency r = residency(reinterpret_cast<uint64_t>(pool.data(0)), pool.bytes(0));
  EXPECT_EQ(r.resident, r.pages);
  pool.close();
  EXPECT_THROW(pool.prefault(), kvio::Error);
}

}  // namespace
}  // namespace kvio_test
