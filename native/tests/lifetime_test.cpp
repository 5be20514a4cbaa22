// The lifetime of caller host memory kvio registers (docs/memory-lifetime.md), end to end
// through the C ABI with the kernel_ascend backend on the ACL host emulation, which enforces the
// runtime's rules: registration is page-granular, a range sharing a page with a registration is
// "already registered", aclrtHostUnregister takes only a registered pointer, and the host side
// of a copy must be registered when the copy runs (a held copy over memory unregistered
// meanwhile counts as a device fault). Covers the failure seen on an H200: memory wrapped,
// closed, freed and wrapped again at the same address; closing a pool with a transfer in
// flight, and with a completed transfer nobody waited for; host pages shared by two pools; and
// registrations the caller made itself.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acl_emulation_test.hpp"
#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"
#include "pool_fixtures.hpp"

namespace kvio_test {
namespace {

std::string lastError() {
  return kvio_last_error();
}

constexpr size_t kPage = 4096;

// Host pool: 2 layers x 32 tokens x 2 heads x 64 bytes x K and V = 16 KiB (4 pages).
const Geometry kHost{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 64};
const Geometry kDevice{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerComponent, 2, 8, 4, 2, 64};

/// An anonymous mapping the test can unmap and map again at the same address.
class Mapping {
 public:
  explicit Mapping(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    data_ = static_cast<uint8_t*>(p);
  }
  ~Mapping() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  /// Frees the memory and gets fresh memory at the same address (as a reused heap would).
  void remap() {
    ASSERT_EQ(munmap(data_, bytes_), 0);
    void* p =
        mmap(data_, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    ASSERT_EQ(p, static_cast<void*>(data_)) << "the new mapping is not at the old address";
  }
  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  uint8_t* data_ = nullptr;
  size_t bytes_;
};

uint64_t wrapPinned(uint8_t* data, size_t bytes, kvio_status expected = KVIO_STATUS_OK) {
  return wrapBuffer(kHost, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, data, bytes, expected);
}

std::vector<int64_t> shuffledSlots(std::mt19937_64& rng) {
  std::vector<int64_t> slots;
  for (int64_t t = 0; t < kHost.S(); ++t) slots.push_back(t);
  std::shuffle(slots.begin(), slots.end(), rng);
  return slots;
}

class LifetimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    acl().install();
    ASSERT_EQ(kvio_executor_create_ascend(0, KVIO_ASCEND_OWN_STREAM, &executor_), KVIO_STATUS_OK)
        << lastError();
  }
  void TearDown() override {
    acl().releaseStream();
    kvio_executor_close(executor_);
    std::string fault;
    EXPECT_EQ(acl().faults(&fault), 0) << fault;
    EXPECT_EQ(acl().live().registrations, 0);
    int64_t kvioRegistrations = -1;
    EXPECT_EQ(kvio_debug_live_host_registrations(&kvioRegistrations), KVIO_STATUS_OK);
    EXPECT_EQ(kvioRegistrations, 0);
    acl().uninstall();
  }

  // Submits a load of every host token into the device pool (slots shuffled on both sides).
  uint64_t load(uint64_t host, NpuPool& device, const std::vector<int64_t>& src,
                const std::vector<int64_t>& dst) {
    uint64_t transfer = 0;
    EXPECT_EQ(kvio_submit_args(executor_, host, device.pool.pool().handle(), src.data(), dst.data(),
                               static_cast<int64_t>(src.size()), 0, 0, kHost.L, &transfer),
              KVIO_STATUS_OK)
        << lastError();
    return transfer;
  }

  // A load of host memory into the device pool, prepared: the memory filled with bytes from
  // `rng` and the device pool with the canary (both images kept), slots shuffled on both sides.
  struct Load {
    Image host, before;
    std::vector<int64_t> src, dst;
  };
  static Load prepareLoad(uint8_t* data, size_t bytes, NpuPool& device, std::mt19937_64& rng) {
    Load l;
    fillRandom(data, bytes, rng);
    l.host.buffers.emplace_back(data, data + bytes);
    device.pool.fill(kCanary);
    l.before = device.pool.capture();
    l.src = shuffledSlots(rng);
    l.dst = shuffledSlots(rng);
    return l;
  }
  uint64_t load(uint64_t host, NpuPool& device, const Load& l) {
    return load(host, device, l.src, l.dst);
  }

  // What the device pool holds after a load of `host` (captured before) into `before`.
  Image expectedLoad(const Image& host, const Image& before, const std::vector<int64_t>& src,
                     const std::vector<int64_t>& dst) {
    Image expected = before;
    applyTransfer(kHost, host, kDevice, &expected, src, dst, 0, 0, kHost.L);
    return expected;
  }

  // A load in flight: host memory (filled, then wrapped as pinned) loaded into an NPU pool with
  // the stream held, so the transfer is not done before acl().releaseStream().
  struct HeldLoad {
    HeldLoad(LifetimeTest& test, uint64_t seed)
        : rng(seed),
          memory(static_cast<size_t>(kHost.regionBytes())),
          l(prepareLoad(memory.data(), memory.bytes(), device, rng)),
          pool(wrapPinned(memory.data(), memory.bytes())) {
      acl().holdStream();
      transfer = test.load(pool, device, l);
    }
    std::mt19937_64 rng;
    Mapping memory;
    NpuPool device{kDevice};
    Load l;
    uint64_t pool;
    uint64_t transfer = 0;
  };

  // Waits for the load, closes it and checks the device pool holds what the oracle says.
  void expectLoaded(uint64_t transfer, NpuPool& device, const Load& l) {
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << lastError();
    kvio_transfer_close(transfer);
    EXPECT_TRUE(
        sameImage(expectedLoad(l.host, l.before, l.src, l.dst), device.pool.capture(), "device"));
  }

  uint64_t executor_ = 0;
};

// The H200 failure: caller memory wrapped as pinned, used, closed, freed, and memory at the same
// address wrapped again. Each close must end kvio's registration, so the second wrap registers
// the new memory itself and its transfer copies the new bytes.
TEST_F(LifetimeTest, WrapCloseFreeAndWrapAgainAtTheSameAddress) {
  std::mt19937_64 rng(7);
  Mapping memory(static_cast<size_t>(kHost.regionBytes()));
  NpuPool device{kDevice};
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round > 0) memory.remap();
    const Load l = prepareLoad(memory.data(), memory.bytes(), device, rng);
    const uint64_t pool = wrapPinned(memory.data(), memory.bytes());
    EXPECT_EQ(acl().live().registrations, 1);
    const uint64_t transfer = load(pool, device, l);
    expectLoaded(transfer, device, l);
    EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
    EXPECT_EQ(acl().live().registrations, 0) << "kvio's registration outlived the closed pool";
  }
}

// A transfer that completed but that nobody waited for does not keep the registration alive:
// closing the pool finds it complete and releases the memory before close returns.
TEST_F(LifetimeTest, CompletedTransferNobodyWaitedForDoesNotDelayTheRelease) {
  std::mt19937_64 rng(8);
  Mapping memory(static_cast<size_t>(kHost.regionBytes()));
  NpuPool device{kDevice};
  const Load l = prepareLoad(memory.data(), memory.bytes(), device, rng);
  const uint64_t pool = wrapPinned(memory.data(), memory.bytes());
  const uint64_t transfer = load(pool, device, l);  // done at once in the emulation
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().registrations, 0);
  expectLoaded(transfer, device, l);
}

// With a transfer in flight, closing the pool keeps the registration until the transfer has
// completed; observing its completion (kvio_transfer_wait) then ends it.
TEST_F(LifetimeTest, CloseWithATransferInFlightReleasesWhenItCompletes) {
  HeldLoad h(*this, 9);
  EXPECT_EQ(kvio_transfer_is_done(h.transfer), 0);
  EXPECT_EQ(kvio_pool_close(h.pool), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().registrations, 1) << "released under a transfer in flight";
  EXPECT_TRUE(sameImage(h.l.before, h.device.pool.capture(), "device before the stream ran"));
  acl().releaseStream();
  EXPECT_EQ(kvio_transfer_wait(h.transfer, -1), KVIO_STATUS_OK) << lastError();
  EXPECT_EQ(acl().live().registrations, 0);
  kvio_transfer_close(h.transfer);
  EXPECT_TRUE(sameImage(expectedLoad(h.l.host, h.l.before, h.l.src, h.l.dst),
                        h.device.pool.capture(), "device"));
}

// Two pools whose buffers share a host page both work: kvio registers the shared page once,
// and releases each registration only when no pool uses any of its pages.
TEST_F(LifetimeTest, PoolsSharingAHostPageBothWork) {
  std::mt19937_64 rng(10);
  const size_t bytes = static_cast<size_t>(kHost.regionBytes());  // 4 pages
  Mapping memory(2 * bytes + kPage);
  uint8_t* first = memory.data() + kPage / 2;  // pages 0-4
  uint8_t* second = first + bytes;             // pages 4-8: page 4 is shared
  NpuPool device{kDevice};
  const uint64_t a = wrapPinned(first, bytes);
  const uint64_t b = wrapPinned(second, bytes);
  // With 4 KiB pages, first: page 0 (it starts inside it), 1-3, 4 (it ends inside it); second:
  // 5-7, 8 (5 registrations, then 3); with larger pages both lie in fewer.
  const Buffer bufferA{reinterpret_cast<uint64_t>(first), bytes};
  const Buffer bufferB{reinterpret_cast<uint64_t>(second), bytes};
  EXPECT_EQ(acl().live().registrations, registrationsFor({bufferA, bufferB}));
  for (uint64_t pool : {a, b}) {
    uint8_t* data = pool == a ? first : second;
    const Load l = prepareLoad(data, bytes, device, rng);
    const uint64_t transfer = load(pool, device, l);
    expectLoaded(transfer, device, l);
  }
  EXPECT_EQ(kvio_pool_close(a), KVIO_STATUS_OK);
  // The shared page is still used by the other pool; the first's other pages are not.
  EXPECT_EQ(acl().live().registrations, registrationsFor({bufferB}));
  EXPECT_EQ(kvio_pool_close(b), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().registrations, 0);
}

// kvio_pool_close_wait: closes the handle, then waits until no transfer uses the memory and
// kvio's registration has ended. A timeout leaves the memory in use (TIMEOUT; wait again with
// the same handle); a wait without a deadline lets the transfer finish.
TEST_F(LifetimeTest, CloseWaitReleasesOnceTheTransferInFlightCompletes) {
  HeldLoad h(*this, 11);
  EXPECT_EQ(kvio_pool_close_wait(h.pool, 0), KVIO_STATUS_TIMEOUT);
  EXPECT_NE(lastError().find("wait again (kvio_pool_close_wait) before freeing it"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(kvio_pool_close_wait(h.pool, 2000000), KVIO_STATUS_TIMEOUT);  // 2 ms
  EXPECT_EQ(acl().live().registrations, 1);
  uint64_t address = 0;
  EXPECT_EQ(kvio_pool_region(h.pool, 0, &address, nullptr, nullptr), KVIO_STATUS_CLOSED);
  EXPECT_EQ(kvio_pool_close_wait(h.pool, -1), KVIO_STATUS_OK) << lastError();
  EXPECT_EQ(acl().live().registrations, 0);
  EXPECT_EQ(kvio_transfer_is_done(h.transfer), 1);
  expectLoaded(h.transfer, h.device, h.l);
  // Waiting again for a released pool is OK at once (other handles: the next test).
  EXPECT_EQ(kvio_pool_close_wait(h.pool, 0), KVIO_STATUS_OK);
}

// Handles as the registry lays them out (core/handles.hpp; kvio.h promises only that a closed or
// foreign handle is refused, not this layout): (type << 48) | (generation << 24) | slot. White-box
// by intent: the test reads the fields of real handles and builds others from them by that
// layout alone, to reach a closed slot's old generation, a reused slot and a never-opened one.
constexpr uint64_t kFieldMask = (uint64_t{1} << 24) - 1;
uint64_t typeOf(uint64_t handle) {
  return handle >> 48;
}
uint64_t generationOf(uint64_t handle) {
  return (handle >> 24) & kFieldMask;
}
uint64_t slotOf(uint64_t handle) {
  return handle & kFieldMask;
}
uint64_t handleOf(uint64_t type, uint64_t generation, uint64_t slot) {
  return (type << 48) | (generation << 24) | slot;
}

// kvio_pool_close_wait tells handles apart as kvio.h says: a pool closed earlier (its slot, its
// generation) is OK at once, also after its slot went to another pool (which stays open);
// CLOSED only for a handle never opened (a generation its slot never had, a slot never used);
// INVALID_ARGUMENT for a handle of another type, naming both types.
TEST_F(LifetimeTest, CloseWaitTellsClosedAndReusedHandlesFromNeverOpenedAndForeignOnes) {
  const kvio_pool_spec spec{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1, 4, 1, 1, 64};
  uint64_t first = 0;
  ASSERT_EQ(kvio_pool_allocate(&spec, &first), KVIO_STATUS_OK) << lastError();
  const uint64_t type = typeOf(first), generation = generationOf(first), slot = slotOf(first);
  ASSERT_GE(generation, 1u);
  ASSERT_EQ(kvio_pool_close(first), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(first, 0), KVIO_STATUS_OK) << lastError();
  const uint64_t nextGeneration = handleOf(type, generation + 1, slot);  // not handed out yet
  EXPECT_EQ(kvio_pool_close_wait(nextGeneration, 0), KVIO_STATUS_CLOSED);
  EXPECT_NE(lastError().find("was never opened"), std::string::npos) << lastError();

  // Freed slots go out again oldest first, behind 1024 others: open and close pools until one
  // lands in `first`'s slot, and keep that one open.
  uint64_t reused = 0;
  for (int i = 0; i < (1 << 16) && reused == 0; ++i) {
    uint64_t pool = 0;
    ASSERT_EQ(kvio_pool_allocate(&spec, &pool), KVIO_STATUS_OK) << lastError();
    if (slotOf(pool) == slot) {
      reused = pool;
    } else {
      ASSERT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
    }
  }
  ASSERT_NE(reused, 0u) << "slot " << slot << " was not handed out again";
  EXPECT_EQ(typeOf(reused), type);
  EXPECT_GT(generationOf(reused), generation);
  EXPECT_EQ(kvio_pool_close_wait(first, 0), KVIO_STATUS_OK) << lastError();
  uint64_t address = 0;
  EXPECT_EQ(kvio_pool_region(reused, 0, &address, nullptr, nullptr), KVIO_STATUS_OK)
      << "waiting for the old handle closed the pool now in its slot: " << lastError();
  const uint64_t aboveReused = handleOf(type, generationOf(reused) + 1, slot);
  EXPECT_EQ(kvio_pool_close_wait(aboveReused, 0), KVIO_STATUS_CLOSED);
  EXPECT_NE(lastError().find("was never opened"), std::string::npos) << lastError();
  const uint64_t neverUsedSlot = handleOf(type, 1, kFieldMask);
  EXPECT_EQ(kvio_pool_close_wait(neverUsedSlot, 0), KVIO_STATUS_CLOSED);
  EXPECT_NE(lastError().find("was never opened"), std::string::npos) << lastError();

  // The reused pool's slot and generation under the executor's type: not a pool handle.
  const uint64_t asExecutor = handleOf(typeOf(executor_), generationOf(reused), slot);
  ASSERT_NE(typeOf(executor_), type);
  EXPECT_EQ(kvio_pool_close_wait(asExecutor, 0), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("is not a handle of type 'pool' (its type is 'executor')"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(kvio_pool_close_wait(executor_, 0), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kvio_pool_close_wait(0, 0), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kvio_pool_region(reused, 0, &address, nullptr, nullptr), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(reused, 0), KVIO_STATUS_OK) << lastError();
  EXPECT_EQ(kvio_pool_region(reused, 0, &address, nullptr, nullptr), KVIO_STATUS_CLOSED);
}

// kvio_pool_close, then kvio_pool_close_wait with the closed handle; and the C++ form.
TEST_F(LifetimeTest, CloseThenWaitAndTheCppForm) {
  std::mt19937_64 rng(12);
  Mapping memory(static_cast<size_t>(kHost.regionBytes()));
  NpuPool device{kDevice};
  const uint64_t pool = wrapPinned(memory.data(), memory.bytes());
  acl().holdStream();
  const std::vector<int64_t> src = shuffledSlots(rng), dst = shuffledSlots(rng);
  const uint64_t transfer = load(pool, device, src, dst);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_CLOSED);
  EXPECT_EQ(acl().live().registrations, 1);
  acl().releaseStream();
  EXPECT_EQ(kvio_pool_close_wait(pool, -1), KVIO_STATUS_OK) << lastError();
  EXPECT_EQ(acl().live().registrations, 0);
  kvio_transfer_close(transfer);

  kvio::Pool wrapped = kvio::Pool::wrap(kHost.spec(), memory.data(), memory.bytes(),
                                        kvio::MemoryKind::AscendHostPinned, 0);
  kvio::Executor ascend(kvio::IoBackend::KernelAscend);
  acl().holdStream();
  kvio::Transfer t = kvio::transferAllLayers(ascend, wrapped, device.pool.pool(), src, dst);
  EXPECT_FALSE(wrapped.closeAndWait(std::chrono::nanoseconds(0)));
  // A deadline already passed (closeAndWait(deadline - now())) only checks, as waitFor does.
  EXPECT_FALSE(wrapped.closeAndWait(std::chrono::milliseconds(-5)));
  int64_t regions = 0;  // closed, its handle kept: use of it answers CLOSED
  EXPECT_EQ(kvio_pool_region(wrapped.handle(), 0, nullptr, nullptr, &regions), KVIO_STATUS_CLOSED);
  EXPECT_EQ(acl().live().registrations, 1);
  acl().releaseStream();
  EXPECT_TRUE(wrapped.closeAndWait());
  EXPECT_EQ(acl().live().registrations, 0);
  EXPECT_TRUE(wrapped.closeAndWait());  // nothing left to wait for
}

// Several threads see a transfer complete at once: none of them returns before the closed
// pool's registration has ended (whoever drops the pools, the others wait for it).
TEST_F(LifetimeTest, NoWaiterReturnsBeforeTheReleaseHasHappened) {
  std::mt19937_64 rng(14);
  Mapping memory(static_cast<size_t>(kHost.regionBytes()));
  NpuPool device{kDevice};
  for (int round = 0; round < 50; ++round) {
    const uint64_t pool = wrapPinned(memory.data(), memory.bytes());
    acl().holdStream();
    const std::vector<int64_t> src = shuffledSlots(rng), dst = shuffledSlots(rng);
    const uint64_t transfer = load(pool, device, src, dst);
    EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
    std::atomic<int> early{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        const bool done = t % 2 == 0 ? kvio_transfer_wait(transfer, -1) == KVIO_STATUS_OK
                                     : kvio_pool_close_wait(pool, -1) == KVIO_STATUS_OK;
        if (!done || acl().live().registrations != 0) ++early;
      });
    }
    acl().releaseStream();
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(early.load(), 0) << "round " << round;
    kvio_transfer_close(transfer);
    if (HasFailure()) return;
  }
}

// A pool used by many transfers (its list of them is pruned as it grows), some waited for and
// some not, still ends its registration when it is closed.
// NPU memory kvio allocated, wrapped as another NPU pool of the same device: the wrap holds it
// when the allocating pool closes (the emulation's live device allocations say when it is
// freed). The same address wrapped as host memory, or as NPU memory of another device, is
// another address space: it holds nothing.
TEST_F(LifetimeTest, AWrapOfKviosNpuAllocationHoldsItInItsAddressSpaceOnly) {
  const kvio_pool_spec spec{kDevice.kind, kDevice.layout, kDevice.L, kDevice.P,
                            kDevice.ps,   kDevice.H,      kDevice.hb};
  uint64_t owner = 0, wrap = 0, address = 0, bytes = 0;
  const int64_t before = acl().live().deviceAllocations;
  ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 0, &owner), KVIO_STATUS_OK)
      << lastError();
  ASSERT_EQ(acl().live().deviceAllocations, before + 1);
  ASSERT_EQ(kvio_pool_region(owner, 0, &address, &bytes, nullptr), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 0, address, bytes, &wrap),
            KVIO_STATUS_OK)
      << lastError();
  EXPECT_EQ(kvio_pool_close_wait(owner, -1), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().deviceAllocations, before + 1) << "held by the wrap";
  EXPECT_EQ(kvio_pool_close_wait(wrap, -1), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().deviceAllocations, before) << "freed with the wrap";

  // The same numbers in another address space (host memory: the emulation's NPU addresses are
  // host addresses, so a real NPU's could be too) are other memory: such a wrap holds nothing,
  // and is never used here.
  ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 0, &owner), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_region(owner, 0, &address, &bytes, nullptr), KVIO_STATUS_OK);
  uint64_t hostWrap = 0;
  ASSERT_EQ(kvio_pool_wrap(&spec, address, bytes, &hostWrap), KVIO_STATUS_OK) << lastError();
  EXPECT_EQ(kvio_pool_close_wait(owner, -1), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().deviceAllocations, before) << "a host wrap holds no NPU memory";
  EXPECT_EQ(kvio_pool_close(hostWrap), KVIO_STATUS_OK);
}

TEST_F(LifetimeTest, APoolUsedManyTimesReleasesAtClose) {
  std::mt19937_64 rng(13);
  Mapping memory(static_cast<size_t>(kHost.regionBytes()));
  NpuPool device{kDevice};
  const uint64_t pool = wrapPinned(memory.data(), memory.bytes());
  const std::vector<int64_t> src = shuffledSlots(rng), dst = shuffledSlots(rng);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t transfer = load(pool, device, src, dst);
    if (i % 3 == 0) {
      EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK);
    }
    kvio_transfer_close(transfer);
  }
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().registrations, 0);
}

}  // namespace
}  // namespace kvio_test
