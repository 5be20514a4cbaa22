// kvio's registrations of caller host memory (see host_registry.hpp).
#include "host_registry.hpp"

#include <unistd.h>

#include <algorithm>
#include <new>

#include "diagnostics.hpp"
#include "error.hpp"

namespace kvio {

namespace {

unsigned long long ull(uint64_t v) {
  return static_cast<unsigned long long>(v);
}

// Records where a new registration begins inside the region (the region's start is first).
void addPiece(std::vector<uint64_t>* pieces, uint64_t regionStart, uint64_t at) {
  const uint64_t piece = std::max(at, regionStart);
  if (pieces->empty() || piece > pieces->back()) pieces->push_back(piece);
}

// Makes room for one more entry in each list first, so that the push_back after a reference
// is counted or a registration made cannot throw (and leave it with no lease to give it back).
void reserveOneMore(std::vector<uint64_t>* taken, std::vector<uint64_t>* pieces) {
  for (std::vector<uint64_t>* list : {taken, pieces}) {
    if (list->size() == list->capacity()) list->reserve(std::max<size_t>(4, 2 * list->size()));
  }
}

}  // namespace

// Holds one reference per entry start taken; gives them back when the last pool lets go.
class HostRegistry::Lease {
 public:
  explicit Lease(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ~Lease() { release(*state_, starts); }
  std::vector<uint64_t> starts;

 private:
  std::shared_ptr<State> state_;
};

HostRegistry::HostRegistry(const HostRuntime& runtime, uint64_t pageBytes)
    : state_(std::make_shared<State>()) {
  state_->runtime = runtime;
  if (pageBytes == 0) {
    const long system = sysconf(_SC_PAGESIZE);
    pageBytes = system > 0 ? static_cast<uint64_t>(system) : 4096;
  }
  state_->page = pageBytes;
}

void HostRegistry::release(State& state, const std::vector<uint64_t>& starts) {
  // The runtime call stays under the lock: a registration being ended must not be mistaken
  // for the caller's by an adopt running meanwhile.
  std::lock_guard<std::mutex> lock(state.mutex);
  for (uint64_t start : starts) {
    auto it = state.entries.find(start);
    if (it == state.entries.end()) continue;  // cannot happen: leases own their references
    if (--it->second.references > 0) continue;
    const uint64_t bytes = it->second.bytes;
    const bool ended = state.runtime.unregisterRange(state.runtime.context, start);
    state.entries.erase(it);
    if (ended) {
      liveHostRegistrations.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    try {
      state.stale.emplace(start, bytes);
    } catch (const std::bad_alloc&) {
      // Unrecorded: a later wrap there meets it as the caller's (checked by covering) as before.
    }
  }
}

kvio_status HostRegistry::endStale(State& state, size_t index, const MemoryRegion& region,
                                   uint64_t from, uint64_t to) {
  auto it = state.stale.upper_bound(from);
  if (it != state.stale.begin() && std::prev(it)->first + std::prev(it)->second > from) --it;
  while (it != state.stale.end() && it->first < to) {
    if (state.runtime.unregisterRange(state.runtime.context, it->first)) {
      liveHostRegistrations.fetch_sub(1, std::memory_order_relaxed);
      it = state.stale.erase(it);
      continue;
    }
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "host region %zu (%llu bytes at 0x%llx) lies in pages [0x%llx, 0x%llx) that kvio "
                "registered with %s for an earlier pool and could not unregister (refused when "
                "that pool was released, and again now): %s may still hold the pages that were "
                "there then, so kvio neither registers nor uses them. Wrap other memory "
                "(kvio_debug_live_host_registrations counts such registrations)",
                index, ull(region.bytes), ull(region.address), ull(it->first),
                ull(it->first + it->second), state.runtime.name, state.runtime.name);
  }
  return KVIO_STATUS_OK;
}

kvio_status HostRegistry::adoptForeign(State& state, size_t index, const MemoryRegion& region,
                                       uint64_t start, uint64_t end,
                                       std::vector<uint64_t>* pieces) {
  const HostRuntime& rt = state.runtime;
  // Only the region's own bytes need covering (the page margins around it do not).
  const uint64_t from = std::max(start, region.address);
  const uint64_t to = std::min(end, region.address + region.bytes);
  if (rt.covering == nullptr) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "host region %zu (%llu bytes at 0x%llx): %s says [0x%llx, 0x%llx) is registered "
                "already (%s: already registered), and not by kvio; the %s runtime cannot tell "
                "kvio whether that registration covers the whole region, so kvio does not use "
                "it. Unregister it and let kvio register the memory (wrap it as it is), or "
                "allocate the pool with kvio_pool_allocate_memory",
                index, ull(region.bytes), ull(region.address), rt.name, ull(start), ull(end),
                rt.registerCall, rt.name);
  }
  for (uint64_t at = from; at < to;) {
    uint64_t coverStart = 0, coverBytes = 0;
    if (!rt.covering(rt.context, at, &coverStart, &coverBytes) || coverStart > at ||
        coverStart + coverBytes <= at) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "host region %zu (%llu bytes at 0x%llx) is partly registered with %s already, "
                  "not by kvio (%s of [0x%llx, 0x%llx): already registered), but byte 0x%llx is "
                  "not registered: kvio uses a registration it did not make only when it covers "
                  "the whole region. Register the whole buffer yourself in one call, or "
                  "unregister it and let kvio register it",
                  index, ull(region.bytes), ull(region.address), rt.name, rt.registerCall,
                  ull(start), ull(end), ull(at));
    }
    addPiece(pieces, region.address, coverStart);
    at = coverStart + coverBytes;
  }
  return KVIO_STATUS_OK;
}

kvio_status HostRegistry::adoptRegion(State& state, size_t index, const MemoryRegion& region,
                                      std::vector<uint64_t>* taken, std::vector<uint64_t>* pieces) {
  const HostRuntime& rt = state.runtime;
  const uint64_t page = state.page;
  const uint64_t first = region.address / page * page;
  const uint64_t last = region.address + region.bytes;
  const uint64_t end = (last + page - 1) / page * page;
  if (region.bytes == 0 || last < region.address || end < last) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "host region %zu (%llu bytes at 0x%llx) is empty "
                "or wraps around the address space",
                index, ull(region.bytes), ull(region.address));
  }
  pieces->push_back(region.address);
  // A page the region shares with the memory around it (its first page when it starts inside one,
  // its last when it ends inside one) is registered on its own: a later region touching that page
  // shares that page's registration only, never the rest of this region's pages. Otherwise a
  // neighbour would keep all of them registered after this region's pools are closed and its
  // memory freed, and a new buffer the allocator maps there would be taken for kvio's (the
  // registration pinning the old pages).
  const uint64_t headEnd = region.address != first ? first + page : first;
  const uint64_t tailStart = last != end ? end - page : end;
  for (uint64_t at = first; at < end;) {
    auto next = state.entries.upper_bound(at);
    if (next != state.entries.begin()) {
      auto holder = std::prev(next);
      if (holder->first + holder->second.bytes > at) {  // kvio's own: share it
        reserveOneMore(taken, pieces);  // so that nothing throws once the reference is counted
        ++holder->second.references;
        taken->push_back(holder->first);
        addPiece(pieces, region.address, holder->first);
        at = holder->first + holder->second.bytes;
        continue;
      }
    }
    const uint64_t gapEnd = next != state.entries.end() && next->first < end ? next->first : end;
    while (at < gapEnd) {
      uint64_t chunkEnd = gapEnd;
      if (rt.chunkBytes != 0) chunkEnd = std::min(gapEnd, (at / rt.chunkBytes + 1) * rt.chunkBytes);
      if (at < headEnd) {
        chunkEnd = std::min(chunkEnd, headEnd);
      } else if (at < tailStart) {
        chunkEnd = std::min(chunkEnd, tailStart);
      }
      KVIO_RETURN_IF_ERROR(endStale(state, index, region, at, chunkEnd));
      bool already = false;
      reserveOneMore(taken, pieces);
      const kvio_status status = rt.registerRange(rt.context, at, chunkEnd - at, &already);
      if (already) {
        KVIO_RETURN_IF_ERROR(adoptForeign(state, index, region, at, chunkEnd, pieces));
      } else {
        KVIO_RETURN_IF_ERROR(status);
        try {
          state.entries.emplace(at, Entry{chunkEnd - at, 1});
        } catch (...) {  // no memory for the entry: the registration would have no owner
          (void)rt.unregisterRange(rt.context, at);  // not counted yet either way
          throw;
        }
        liveHostRegistrations.fetch_add(1, std::memory_order_relaxed);
        taken->push_back(at);
        addPiece(pieces, region.address, at);
      }
      at = chunkEnd;
    }
  }
  return KVIO_STATUS_OK;
}

kvio_status HostRegistry::acquire(const MemoryRegion* regions, size_t count,
                                  std::shared_ptr<void>* lease,
                                  std::vector<std::vector<uint64_t>>* pieces) {
  auto held = std::make_shared<Lease>(state_);  // released after the lock below on failure
  std::vector<std::vector<uint64_t>> starts(count);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (size_t r = 0; r < count; ++r) {
      KVIO_RETURN_IF_ERROR(adoptRegion(*state_, r, regions[r], &held->starts, &starts[r]));
    }
  }
  if (pieces != nullptr) *pieces = std::move(starts);
  *lease = std::move(held);
  return KVIO_STATUS_OK;
}

std::vector<MemoryRegion> HostRegistry::piecesOf(const MemoryRegion* regions, size_t count,
                                                 const std::vector<std::vector<uint64_t>>& pieces) {
  std::vector<MemoryRegion> out;
  bool cut = false;
  for (size_t r = 0; r < count && !cut; ++r) cut = pieces[r].size() > 1;
  if (!cut) return out;
  for (size_t r = 0; r < count; ++r) {
    const uint64_t end = regions[r].address + regions[r].bytes;
    const std::vector<uint64_t>& starts = pieces[r];
    for (size_t k = 0; k < starts.size(); ++k) {
      const uint64_t pieceEnd = k + 1 < starts.size() ? starts[k + 1] : end;
      out.push_back({starts[k], pieceEnd - starts[k]});
    }
  }
  return out;
}

int64_t HostRegistry::registrations() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return static_cast<int64_t>(state_->entries.size());
}

int64_t HostRegistry::staleRegistrations() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return static_cast<int64_t>(state_->stale.size());
}

int64_t HostRegistry::references() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  int64_t total = 0;
  for (const auto& entry : state_->entries) total += entry.second.references;
  return total;
}

}  // namespace kvio
