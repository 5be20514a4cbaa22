// kvio's registry of host registrations (native/src/core/host_registry.hpp) against a fake
// runtime that enforces CUDA's rules: registration is page-granular, registering a range that
// overlaps any registered page answers "already registered", only a registered base may be
// unregistered, and only registered bytes have a device address. Covers pages shared by two
// pools, overlapping ranges, both release orders, the caller's own registrations (used when they
// cover the region and never unregistered by kvio; refused when partial or unverifiable),
// chunking, failures part-way, and reference counts back to zero.
#include "core/host_registry.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kvio/kvio.h"
#include "rejection_assertions.hpp"

namespace kvio_test {
namespace {

using kvio::HostRegistry;
using kvio::HostRuntime;
using kvio::MemoryRegion;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kBase = 0x7f0000000000ull;  // fake addresses: nothing is dereferenced

/// A fake CUDA host-registration runtime.
struct FakeRuntime {
  struct Registration {
    uint64_t base;   // the pointer registered
    uint64_t bytes;  // as asked (pinned: whole pages)
  };
  std::map<uint64_t, Registration> registrations;  // by first page
  int64_t registerCalls = 0;
  int64_t badUnregisters = 0;
  bool refuseUnregister = false;  // unregisterRange fails (and registers stay)
  int64_t failOnCall = -1;        // the registerCalls value whose call fails (out of memory)

  static uint64_t pageOf(uint64_t a) { return a / kPage * kPage; }
  static uint64_t pageEnd(uint64_t a) { return (a + kPage - 1) / kPage * kPage; }

  /// cudaHostRegister: 0 OK, 1 already registered, 2 out of memory.
  int add(uint64_t address, uint64_t bytes) {
    if (registerCalls++ == failOnCall) return 2;
    const uint64_t first = pageOf(address), end = pageEnd(address + bytes);
    for (const auto& r : registrations) {
      if (r.first < end && r.first + (pageEnd(r.second.base + r.second.bytes) - r.first) > first) {
        return 1;
      }
    }
    registrations[first] = Registration{address, bytes};
    return 0;
  }
  void remove(uint64_t address) {
    auto it = registrations.find(pageOf(address));
    if (it == registrations.end() || it->second.base != address) {
      ++badUnregisters;
      return;
    }
    registrations.erase(it);
  }
  const Registration* holding(uint64_t address) const {
    auto it = registrations.upper_bound(address);
    if (it == registrations.begin()) return nullptr;
    --it;
    return address < pageEnd(it->second.base + it->second.bytes) ? &it->second : nullptr;
  }
  /// True when every byte has a device address (is in some registration's pages).
  bool registered(uint64_t address, uint64_t bytes) const {
    for (uint64_t at = address; at < address + bytes; at += kPage - at % kPage) {
      if (holding(at) == nullptr) return false;
    }
    return true;
  }

  static FakeRuntime& of(void* context) { return *static_cast<FakeRuntime*>(context); }
  static kvio_status registerRange(void* context, uint64_t address, uint64_t bytes,
                                   bool* alreadyRegistered) {
    switch (of(context).add(address, bytes)) {
      case 0: return KVIO_STATUS_OK;
      case 1: *alreadyRegistered = true; return KVIO_STATUS_OK;
      default: return KVIO_STATUS_OUT_OF_MEMORY;
    }
  }
  static bool unregisterRange(void* context, uint64_t address) {
    if (of(context).refuseUnregister) return false;  // the runtime keeps the registration
    of(context).remove(address);
    return true;
  }
  static bool covering(void* context, uint64_t address, uint64_t* start, uint64_t* bytes) {
    const Registration* r = of(context).holding(address);
    if (r == nullptr || address < r->base || address >= r->base + r->bytes) return false;
    *start = r->base;
    *bytes = r->bytes;
    return true;
  }

  HostRuntime table(uint64_t chunkBytes = 0, bool withCovering = true) {
    return HostRuntime{"FAKE",
                       "fakeHostRegister",
                       chunkBytes,
                       this,
                       registerRange,
                       unregisterRange,
                       withCovering ? covering : nullptr};
  }
};

class HostRegistryTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(fake.badUnregisters, 0); }
  kvio_status acquire(HostRegistry& registry, std::vector<MemoryRegion> regions,
                      std::shared_ptr<void>* lease,
                      std::vector<std::vector<uint64_t>>* pieces = nullptr) {
    return registry.acquire(regions.data(), regions.size(), lease, pieces);
  }
  FakeRuntime fake;
};

// Two pools whose buffers share a page: a region's first and last pages, where it starts and
// ends inside a page, are registered on their own, so the second pool shares kvio's registration
// of the shared page only and registers the pages no registration holds. Each registration ends
// when no pool uses its pages, in either release order; the first pool's other pages are
// unregistered when it goes, whatever the second does (its memory may be freed then, and pages
// a neighbour kept registered would be taken for kvio's when the allocator maps them again).
TEST_F(HostRegistryTest, PoolsSharingAPageShareThatPagesRegistrationOnly) {
  for (bool firstGoesFirst : {true, false}) {
    SCOPED_TRACE(firstGoesFirst ? "first released first" : "second released first");
    HostRegistry registry(fake.table(), kPage);
    const MemoryRegion a{kBase + kPage / 2, 2 * kPage};        // pages 0-2
    const MemoryRegion b{kBase + 2 * kPage + 512, 2 * kPage};  // pages 2-4: page 2 shared
    const auto page = [](int k) { return kBase + static_cast<uint64_t>(k) * kPage; };
    std::shared_ptr<void> leaseA, leaseB;
    ASSERT_EQ(acquire(registry, {a}, &leaseA), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(fake.registrations.size(), 3u);  // page 0 (its head), page 1, page 2 (its tail)
    ASSERT_EQ(acquire(registry, {b}, &leaseB), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_TRUE(fake.registered(a.address, a.bytes));
    EXPECT_TRUE(fake.registered(b.address, b.bytes));
    EXPECT_EQ(fake.registrations.size(), 5u);  // b: page 3 (its middle), page 4 (its tail)
    EXPECT_EQ(registry.registrations(), 5);
    EXPECT_EQ(registry.references(), 6);  // a: its three; b: a's page 2 and its own two
    (firstGoesFirst ? leaseA : leaseB).reset();
    if (firstGoesFirst) {  // only page 2, which b uses, stays of a's pages
      EXPECT_FALSE(fake.registered(page(0), 2 * kPage));
      EXPECT_TRUE(fake.registered(b.address, b.bytes));
    } else {  // b's own pages go with it; page 2 stays a's
      EXPECT_FALSE(fake.registered(page(3), 2 * kPage));
      EXPECT_TRUE(fake.registered(a.address, a.bytes));
    }
    EXPECT_EQ(fake.registrations.size(), 3u);
    (firstGoesFirst ? leaseB : leaseA).reset();
    EXPECT_EQ(fake.registrations.size(), 0u);
    EXPECT_EQ(registry.registrations(), 0);
    EXPECT_EQ(registry.references(), 0);
  }
}

// An unregistration the runtime refuses: the registry forgets the registration (its pool is
// gone, the memory may be freed), but kvio_debug_live_host_registrations keeps counting it, so
// a leftover registration shows where tests and users look for one.
TEST_F(HostRegistryTest, ARefusedUnregistrationStaysCounted) {
  int64_t before = -1;
  ASSERT_EQ(kvio_debug_live_host_registrations(&before), KVIO_STATUS_OK);
  HostRegistry registry(fake.table(), kPage);
  std::shared_ptr<void> kept, refused;
  ASSERT_EQ(acquire(registry, {{kBase, 2 * kPage}}, &kept), KVIO_STATUS_OK);
  ASSERT_EQ(acquire(registry, {{kBase + 8 * kPage, 2 * kPage}}, &refused), KVIO_STATUS_OK);
  int64_t live = -1;
  ASSERT_EQ(kvio_debug_live_host_registrations(&live), KVIO_STATUS_OK);
  EXPECT_EQ(live, before + 2);
  fake.refuseUnregister = true;
  refused.reset();
  EXPECT_EQ(registry.registrations(), 1);    // forgotten by the registry
  EXPECT_EQ(fake.registrations.size(), 2u);  // still held by the runtime
  ASSERT_EQ(kvio_debug_live_host_registrations(&live), KVIO_STATUS_OK);
  EXPECT_EQ(live, before + 2) << "a registration the runtime may still hold was uncounted";
  fake.refuseUnregister = false;
  kept.reset();  // one that ends is uncounted as before
  ASSERT_EQ(kvio_debug_live_host_registrations(&live), KVIO_STATUS_OK);
  EXPECT_EQ(live, before + 1);
  fake.remove(kBase + 8 * kPage);  // what the runtime kept; the count stays (process-wide)
}

// A registration whose unregistration was refused may describe pages that were freed and mapped
// again since: a later wrap over any of its pages retries the unregistration first, and is
// refused while that still fails (the runtime would say "already registered", and the stale
// registration would pass for the caller's, covering the new region). Once the retry succeeds
// the pages are registered afresh and the stale one is uncounted.
TEST_F(HostRegistryTest, AStaleRegistrationIsEndedBeforeItsPagesAreWrappedAgain) {
  int64_t before = -1;
  ASSERT_EQ(kvio_debug_live_host_registrations(&before), KVIO_STATUS_OK);
  HostRegistry registry(fake.table(), kPage);
  std::shared_ptr<void> first;
  ASSERT_EQ(acquire(registry, {{kBase, 4 * kPage}}, &first), KVIO_STATUS_OK);
  fake.refuseUnregister = true;
  first.reset();
  EXPECT_EQ(registry.staleRegistrations(), 1);
  EXPECT_EQ(fake.registrations.size(), 1u);
  // A region over its last page and beyond: refused while the runtime still refuses.
  std::shared_ptr<void> again;
  const std::vector<MemoryRegion> over = {{kBase + 3 * kPage + 100, 2 * kPage}};
  const int64_t calls = fake.registerCalls;
  EXPECT_REJECTED(acquire(registry, over, &again), KVIO_STATUS_INVALID_ARGUMENT, "host region 0",
                  "could not unregister", "[0x7f0000000000, 0x7f0000004000)",
                  "FAKE may still hold the pages");
  EXPECT_EQ(again, nullptr);
  EXPECT_EQ(fake.registerCalls, calls) << "registered over a stale registration";
  EXPECT_EQ(registry.registrations(), 0);
  // Memory beside it is unaffected.
  std::shared_ptr<void> beside;
  ASSERT_EQ(acquire(registry, {{kBase + 4 * kPage, kPage}}, &beside), KVIO_STATUS_OK)
      << kvio_last_error();
  beside.reset();  // refused too: stale as well (its own page)
  EXPECT_EQ(registry.staleRegistrations(), 2);
  // The runtime lets go now: the retry ends both stale registrations the region touches.
  fake.refuseUnregister = false;
  ASSERT_EQ(acquire(registry, over, &again), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(registry.staleRegistrations(), 0);
  EXPECT_EQ(registry.registrations(), 3);  // pages 3 (its head), 4 and 5 (its tail)
  ASSERT_EQ(fake.registrations.size(), 3u);
  EXPECT_EQ(fake.registrations.begin()->second.base, kBase + 3 * kPage);  // kvio's, afresh
  int64_t live = -1;
  ASSERT_EQ(kvio_debug_live_host_registrations(&live), KVIO_STATUS_OK);
  EXPECT_EQ(live, before + 3);
  again.reset();
  ASSERT_EQ(kvio_debug_live_host_registrations(&live), KVIO_STATUS_OK);
  EXPECT_EQ(live, before);
  EXPECT_TRUE(fake.registrations.empty());
}

// A region inside kvio's registration only takes a reference; one overlapping it and more
// registers the rest; several regions of one pool may share pages too.
TEST_F(HostRegistryTest, OverlappingRangesTakeReferences) {
  HostRegistry registry(fake.table(), kPage);
  std::shared_ptr<void> outer, inner, overlapping, both;
  ASSERT_EQ(acquire(registry, {{kBase, 4 * kPage}}, &outer), KVIO_STATUS_OK);
  const int64_t calls = fake.registerCalls;
  ASSERT_EQ(acquire(registry, {{kBase + 100, kPage}}, &inner), KVIO_STATUS_OK);
  EXPECT_EQ(fake.registerCalls, calls) << "pages kvio registered are never registered again";
  ASSERT_EQ(acquire(registry, {{kBase + 3 * kPage, 3 * kPage}}, &overlapping), KVIO_STATUS_OK);
  EXPECT_EQ(fake.registrations.size(), 2u);
  ASSERT_EQ(acquire(registry, {{kBase + 10, 10}, {kBase + 20, 5 * kPage}}, &both), KVIO_STATUS_OK);
  EXPECT_EQ(registry.registrations(), 2);
  outer.reset();
  overlapping.reset();
  EXPECT_EQ(fake.registrations.size(), 2u);
  both.reset();
  EXPECT_EQ(fake.registrations.size(), 1u);  // `inner` still holds the first
  EXPECT_TRUE(fake.registered(kBase + 100, kPage));
  inner.reset();
  EXPECT_EQ(fake.registrations.size(), 0u);
  EXPECT_EQ(registry.references(), 0);
}

// The caller's own registration covering the whole region is used as it is and never
// unregistered by kvio.
TEST_F(HostRegistryTest, CallersFullRegistrationIsUsedAndLeftAlone) {
  HostRegistry registry(fake.table(), kPage);
  ASSERT_EQ(fake.add(kBase, 8 * kPage), 0);  // the caller's cudaHostRegister
  std::shared_ptr<void> lease;
  std::vector<std::vector<uint64_t>> pieces;
  ASSERT_EQ(acquire(registry, {{kBase + kPage, 2 * kPage}}, &lease, &pieces), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(registry.registrations(), 0);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0], (std::vector<uint64_t>{kBase + kPage}));
  lease.reset();
  EXPECT_EQ(fake.registrations.size(), 1u) << "kvio unregistered the caller's registration";
  fake.remove(kBase);
}

// Registrations of the caller that cover a region only together are used too.
TEST_F(HostRegistryTest, CallersAdjacentRegistrationsCoveringTheRegionAreUsed) {
  HostRegistry registry(fake.table(), kPage);
  ASSERT_EQ(fake.add(kBase, 2 * kPage), 0);
  ASSERT_EQ(fake.add(kBase + 2 * kPage, 2 * kPage), 0);
  std::shared_ptr<void> lease;
  std::vector<std::vector<uint64_t>> pieces;
  ASSERT_EQ(acquire(registry, {{kBase + 100, 3 * kPage}}, &lease, &pieces), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(pieces[0], (std::vector<uint64_t>{kBase + 100, kBase + 2 * kPage}));
  lease.reset();
  EXPECT_EQ(fake.registrations.size(), 2u);
  fake.remove(kBase);
  fake.remove(kBase + 2 * kPage);
}

// A registration of the caller that covers part of the region is refused with a message saying
// what is registered and what to do; kvio keeps nothing of the attempt.
TEST_F(HostRegistryTest, CallersPartialRegistrationIsRefused) {
  HostRegistry registry(fake.table(), kPage);
  ASSERT_EQ(fake.add(kBase + 2 * kPage, kPage), 0);
  std::shared_ptr<void> lease;
  EXPECT_EQ(acquire(registry, {{kBase, 4 * kPage}}, &lease), KVIO_STATUS_INVALID_ARGUMENT);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("partly registered with FAKE already"), std::string::npos) << message;
  EXPECT_NE(message.find("Register the whole buffer yourself"), std::string::npos) << message;
  EXPECT_EQ(lease, nullptr);
  EXPECT_EQ(registry.registrations(), 0);
  EXPECT_EQ(fake.registrations.size(), 1u);
  // A caller registration ending inside the region's first page is no cover either.
  fake.remove(kBase + 2 * kPage);
  ASSERT_EQ(fake.add(kBase, 100), 0);
  EXPECT_EQ(acquire(registry, {{kBase + 50, kPage}}, &lease), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(fake.registrations.size(), 1u);
  fake.remove(kBase);
}

// A runtime that cannot say what a registration covers (ACL) has every registration that is
// not kvio's refused, with the reason.
TEST_F(HostRegistryTest, UnverifiableRegistrationIsRefused) {
  HostRegistry registry(fake.table(0, false), kPage);
  ASSERT_EQ(fake.add(kBase, 8 * kPage), 0);
  std::shared_ptr<void> lease;
  EXPECT_EQ(acquire(registry, {{kBase, kPage}}, &lease), KVIO_STATUS_INVALID_ARGUMENT);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("cannot tell kvio whether that registration covers"), std::string::npos)
      << message;
  fake.remove(kBase);
  // kvio's own registrations are shared without asking the runtime.
  std::shared_ptr<void> a, b;
  ASSERT_EQ(acquire(registry, {{kBase, kPage + 1}}, &a), KVIO_STATUS_OK);
  ASSERT_EQ(acquire(registry, {{kBase + kPage, kPage}}, &b), KVIO_STATUS_OK) << kvio_last_error();
  a.reset();
  b.reset();
  EXPECT_EQ(fake.registrations.size(), 0u);
}

// Registrations never cross a multiple of the chunk size; the pieces say where each begins.
TEST_F(HostRegistryTest, ChunksEndAtChunkMultiples) {
  HostRegistry registry(fake.table(4 * kPage), kPage);
  std::shared_ptr<void> lease;
  std::vector<std::vector<uint64_t>> pieces;
  ASSERT_EQ(acquire(registry, {{kBase + 2 * kPage + 8, 7 * kPage}}, &lease, &pieces),
            KVIO_STATUS_OK);
  // Pages 2-9: page 2 (the region starts inside it), 3 (up to the chunk multiple), 4-7, 8 and
  // 9 (the region ends inside it).
  EXPECT_EQ(fake.registrations.size(), 5u);
  EXPECT_EQ(pieces[0],
            (std::vector<uint64_t>{kBase + 2 * kPage + 8, kBase + 3 * kPage, kBase + 4 * kPage,
                                   kBase + 8 * kPage, kBase + 9 * kPage}));
  lease.reset();
  EXPECT_EQ(fake.registrations.size(), 0u);
}

// piecesOf: each region cut where a registration begins inside it, every part inside one
// registration (what a copy engine may span in one call), the parts of a region abutting and
// covering it exactly; nothing when every region lies in one registration.
TEST_F(HostRegistryTest, PiecesCutRegionsAtRegistrationStarts) {
  HostRegistry registry(fake.table(4 * kPage), kPage);
  std::shared_ptr<void> lease;
  std::vector<std::vector<uint64_t>> pieces;
  const std::vector<MemoryRegion> regions{{kBase + 2 * kPage + 8, 7 * kPage},
                                          {kBase + 16 * kPage + 100, kPage - 200}};
  ASSERT_EQ(acquire(registry, regions, &lease, &pieces), KVIO_STATUS_OK);
  const std::vector<MemoryRegion> parts = HostRegistry::piecesOf(regions.data(), 2, pieces);
  const std::vector<std::pair<uint64_t, uint64_t>> expected{
      {kBase + 2 * kPage + 8, kPage - 8},        // page 2, where the region starts
      {kBase + 3 * kPage, kPage},                // page 3, up to the chunk multiple
      {kBase + 4 * kPage, 4 * kPage},            // pages 4-7
      {kBase + 8 * kPage, kPage},                // page 8
      {kBase + 9 * kPage, 8},                    // page 9 up to the region's end
      {kBase + 16 * kPage + 100, kPage - 200}};  // the second: inside one page, whole
  ASSERT_EQ(parts.size(), expected.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].address, expected[i].first) << i;
    EXPECT_EQ(parts[i].bytes, expected[i].second) << i;
    EXPECT_NE(fake.holding(parts[i].address), nullptr) << i;
    EXPECT_EQ(fake.holding(parts[i].address), fake.holding(parts[i].address + parts[i].bytes - 1))
        << i;
  }
  lease.reset();
  std::shared_ptr<void> whole;
  ASSERT_EQ(acquire(registry, {regions[1]}, &whole, &pieces), KVIO_STATUS_OK);
  EXPECT_TRUE(HostRegistry::piecesOf(&regions[1], 1, pieces).empty());
}

// A runtime failure part-way releases what the attempt registered.
TEST_F(HostRegistryTest, FailurePartWayKeepsNothing) {
  HostRegistry registry(fake.table(2 * kPage), kPage);
  std::shared_ptr<void> held;
  ASSERT_EQ(acquire(registry, {{kBase, kPage}}, &held), KVIO_STATUS_OK);
  fake.failOnCall = fake.registerCalls + 1;  // the second chunk of the next region
  std::shared_ptr<void> lease;
  EXPECT_EQ(acquire(registry, {{kBase, 6 * kPage}}, &lease), KVIO_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(registry.registrations(), 1);
  EXPECT_EQ(registry.references(), 1);
  EXPECT_EQ(fake.registrations.size(), 1u);
  held.reset();
  EXPECT_EQ(fake.registrations.size(), 0u);
}

}  // namespace
}  // namespace kvio_test
