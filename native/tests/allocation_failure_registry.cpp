// Out of host memory at every allocation of kvio's registry of host registrations
// (core/host_registry.hpp), with a fake page-granular runtime and the failing allocator
// (failing_allocator.hpp): three pools acquired (pages shared between them, registrations in
// chunks) with the Nth allocation failing, for every N. After a failed acquire kvio's count of
// registrations is what the runtime holds (nothing registered without an owner, no reference
// counted without a lease to give it back), and once every lease is gone nothing is registered.
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/host_registry.hpp"
#include "failing_allocator.hpp"

namespace kvio_test {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kBase = 0x7f0000000000ull;  // fake addresses: nothing is dereferenced

/// Registrations as a page-granular runtime keeps them (by first page; no overlap allowed).
struct FakeRuntime {
  std::map<uint64_t, uint64_t> registered;  // start -> bytes (whole pages)
  int64_t badUnregisters = 0;

  static FakeRuntime& of(void* c) { return *static_cast<FakeRuntime*>(c); }
  static kvio_status add(void* c, uint64_t address, uint64_t bytes, bool* already) {
    FakeRuntime& f = of(c);
    auto next = f.registered.lower_bound(address + bytes);
    if (next != f.registered.begin() &&
        std::prev(next)->first + std::prev(next)->second > address) {
      *already = true;
      return KVIO_STATUS_OK;
    }
    f.registered.emplace(address, bytes);  // may throw: nothing registered then
    return KVIO_STATUS_OK;
  }
  static bool remove(void* c, uint64_t address) {
    FakeRuntime& f = of(c);
    if (f.registered.erase(address) == 0) ++f.badUnregisters;
    return true;
  }
  kvio::HostRuntime table() {
    // Chunks of 4 pages: one region takes several registrations.
    return kvio::HostRuntime{"FAKE", "fakeHostRegister", 4 * kPage, this, add, remove, nullptr};
  }
};

TEST(AllocationFailure, EveryAllocationOfTheHostRegistry) {
  for (const bool persist : {false, true}) {
    int64_t n = 0;
    for (; n < 5000; ++n) {
      SCOPED_TRACE("allocation " + std::to_string(n) + (persist ? " and after" : " only"));
      FakeRuntime fake;
      bool injected = false;
      {
        kvio::HostRegistry registry(fake.table(), kPage);
        // Three pools: the second shares pages with the first, the third spans both and more.
        const std::vector<std::vector<kvio::MemoryRegion>> pools = {
            {{kBase, 10 * kPage}},
            {{kBase + 8 * kPage + 100, 6 * kPage}, {kBase + 40 * kPage, kPage}},
            {{kBase + 2 * kPage, 30 * kPage}}};
        std::vector<std::shared_ptr<void>> leases;
        AllocationBudget budget(n, persist);
        for (const auto& regions : pools) {
          std::shared_ptr<void> lease;
          std::vector<std::vector<uint64_t>> pieces;
          const kvio_status status = budget.run("acquire", [&] {
            try {
              return registry.acquire(regions.data(), regions.size(), &lease, &pieces);
            } catch (const std::bad_alloc&) {  // the C ABI's guarded() turns this into a status
              return kvio::fail(KVIO_STATUS_OUT_OF_MEMORY, "out of host memory");
            }
          });
          if (status == KVIO_STATUS_OK) {
            ASSERT_NE(lease, nullptr);
            leases.push_back(std::move(lease));
          } else {
            EXPECT_EQ(lease, nullptr);
          }
          // What kvio counts is what the runtime holds, after a failure too.
          EXPECT_EQ(registry.registrations(), static_cast<int64_t>(fake.registered.size()));
        }
        injected = budget.injected();
        leases.clear();
        EXPECT_EQ(registry.registrations(), 0);
        EXPECT_EQ(registry.references(), 0);
      }
      EXPECT_TRUE(fake.registered.empty()) << fake.registered.size() << " registrations left";
      EXPECT_EQ(fake.badUnregisters, 0);
      if (::testing::Test::HasFailure() || !injected) break;
    }
    EXPECT_LT(n, 5000);
    EXPECT_GT(n, 3) << "fewer allocations than expected: is operator new replaced?";
  }
}

}  // namespace
}  // namespace kvio_test
