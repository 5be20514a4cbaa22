// kvio's own registrations of caller host memory with a device runtime (its host-register
// call), reference-counted by page range, so that pools sharing a host page share
// its registration and a registration ends only when no pool uses any of its pages. One
// registry per runtime; the runtime is a small table of functions (register, unregister, what
// registration covers an address), so this file includes no vendor header and the logic is
// tested on any machine with a fake runtime (host_registry_test.cpp). The device backends
// adopt caller host memory through it.
//
// Rules. kvio registers whole host pages (the runtimes pin pages). Pages already in one of
// kvio's registrations are shared, never registered again. A range the runtime reports as
// "already registered" that is not kvio's is the caller's: it is used as it is (and never
// unregistered by kvio) only when the runtime's query proves that registrations cover every
// byte of it; otherwise adopting fails with a message saying what is registered and what to do.
#ifndef KVIO_CORE_HOST_REGISTRY_HPP_
#define KVIO_CORE_HOST_REGISTRY_HPP_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kvio/kvio.h"
#include "pool.hpp"

namespace kvio {

/// The device runtime's side of host registration.
struct HostRuntime {
  const char* name;          // the runtime's name (messages)
  const char* registerCall;  // its host-register call (messages)
  /// Registrations are made in chunks that never cross a multiple of chunkBytes (0: none).
  uint64_t chunkBytes;
  void* context;  // handed to the functions (a fake runtime's state)
  /// Registers [address, address + bytes) (whole pages). OK; or *alreadyRegistered = true when
  /// the runtime says part or all of it is registered already; or an error (kvio_last_error).
  kvio_status (*registerRange)(void* context, uint64_t address, uint64_t bytes,
                               bool* alreadyRegistered);
  /// Ends the registration made at `address` by registerRange: true (also when the runtime
  /// answers that nothing is registered there: it is gone already); false when the runtime
  /// refused, and may still hold it. kvio then keeps it as stale (its pool is gone, and the
  /// caller may free or remap the memory, so the runtime's registration may describe pages no
  /// longer there) and counted in liveHostRegistrations, so kvio_debug_live_host_registrations
  /// never reads 0 while one may be left behind. A later wrap over its pages first retries the
  /// unregistration, and is refused while that still fails: the runtime would answer "already
  /// registered", and the stale registration must not be taken for the caller's.
  bool (*unregisterRange)(void* context, uint64_t address);
  /// The registration holding `address`: true and its range [*start, *start + *bytes), or false
  /// when none does or the runtime cannot tell. nullptr: the runtime has no such query.
  bool (*covering)(void* context, uint64_t address, uint64_t* start, uint64_t* bytes);
};

class HostRegistry {
 public:
  /// pageBytes: the host page size (0: the system's).
  explicit HostRegistry(const HostRuntime& runtime, uint64_t pageBytes = 0);

  /// Makes every region usable by the device: shares kvio's registrations of its pages,
  /// registers the pages no registration holds, and accepts the caller's own registrations only
  /// where they provably cover it. *lease holds kvio's registrations until it is destroyed.
  /// pieces (optional): per region, the addresses inside it where another registration begins
  /// (the region's start first), for callers that check device addresses across registrations.
  kvio_status acquire(const MemoryRegion* regions, size_t count, std::shared_ptr<void>* lease,
                      std::vector<std::vector<uint64_t>>* pieces = nullptr);

  /// The regions cut at acquire()'s pieces, each part inside one registration (a copy engine
  /// resolves one registration per call); empty when no region spans two registrations.
  static std::vector<MemoryRegion> piecesOf(const MemoryRegion* regions, size_t count,
                                            const std::vector<std::vector<uint64_t>>& pieces);

  /// kvio's live registrations in this registry, and the references pools hold on them.
  int64_t registrations() const;
  int64_t references() const;
  /// kvio's registrations whose unregistration the runtime refused, not yet ended by a retry.
  int64_t staleRegistrations() const;

 private:
  struct Entry {
    uint64_t bytes;
    int64_t references;
  };
  struct State {
    HostRuntime runtime;
    uint64_t page;
    mutable std::mutex mutex;
    std::map<uint64_t, Entry> entries;   // kvio's registrations by start address
    std::map<uint64_t, uint64_t> stale;  // unregistrations refused: start -> bytes
  };
  class Lease;
  static void release(State& state, const std::vector<uint64_t>& starts);
  static kvio_status adoptRegion(State& state, size_t index, const MemoryRegion& region,
                                 std::vector<uint64_t>* taken, std::vector<uint64_t>* pieces);
  static kvio_status adoptForeign(State& state, size_t index, const MemoryRegion& region,
                                  uint64_t start, uint64_t end, std::vector<uint64_t>* pieces);
  static kvio_status endStale(State& state, size_t index, const MemoryRegion& region, uint64_t from,
                              uint64_t to);

  std::shared_ptr<State> state_;
};

}  // namespace kvio

#endif  // KVIO_CORE_HOST_REGISTRY_HPP_
