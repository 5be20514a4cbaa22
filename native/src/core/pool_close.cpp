// Closing pools (kvio_pool_close, kvio_pool_close_wait): a closed pool's memory goes with the
// last transfer that uses it, and kvio_pool_close_wait waits until that has happened, so the
// caller may free wrapped memory right after it returns.
#include <algorithm>
#include <chrono>
#include <iterator>
#include <mutex>
#include <new>
#include <unordered_map>

#include "guard.hpp"
#include "handles.hpp"

namespace kvio {
namespace {

// Closed pools whose memory may still be in use, until kvio_pool_close_wait reports it released
// or the close finds it released (entries whose memory was released are also pruned as the
// table grows). Open pools are listed too, with no usage yet (listForClose, when the pool is
// opened), so that a close only fills in its entry: it never needs memory.
class ClosingPools {
 public:
  void list(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    pools_.try_emplace(handle);
  }

  // Takes pool `handle` out of the registry and lists its usage, in one step under this table's
  // lock: a kvio_pool_close_wait that finds the handle closed then finds the usage here (find
  // takes the lock), never a gap in which it would answer "released" for a pool still in use.
  kvio_status remove(uint64_t handle, std::shared_ptr<PoolImpl>* pool) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pools_.size() >= pruneAt_) {
      for (auto it = pools_.begin(); it != pools_.end();) {
        const bool released = it->second != nullptr && it->second->released();
        it = released ? pools_.erase(it) : std::next(it);
      }
      pruneAt_ = std::max<size_t>(64, 2 * pools_.size());
    }
    // Every open pool was listed when it opened: a handle not listed is no open pool's, and the
    // registry says what it is (closed, of another type, never opened) without a map node
    // allocated first, so a bad handle is never answered OUT_OF_MEMORY.
    if (pools_.find(handle) == pools_.end()) {
      std::shared_ptr<PoolImpl> open;
      KVIO_RETURN_IF_ERROR(pools().get(handle, "pool", &open));
    }
    // The entry first (listed when the pool opened, so nothing here allocates then; else the one
    // step that can fail, for memory), the handle's removal after: a closed handle is always
    // listed.
    const auto [entry, inserted] = pools_.try_emplace(handle);
    const kvio_status removed = pools().remove(handle, "pool", pool);
    if (removed != KVIO_STATUS_OK) {
      if (inserted) pools_.erase(entry);
      return removed;
    }
    entry->second = (*pool)->usage();
    return KVIO_STATUS_OK;
  }
  std::shared_ptr<PoolUsage> find(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pools_.find(handle);
    return it == pools_.end() ? nullptr : it->second;
  }
  void erase(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    pools_.erase(handle);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<PoolUsage>> pools_;
  size_t pruneAt_ = 64;
};

ClosingPools& closingPools() {
  static ClosingPools* c = new ClosingPools();  // lives until exit
  return *c;
}

// After closingPools().remove: transfers found done drop their references, and when none uses
// the pool any more, dropping `pool` releases its memory (and ends kvio's registration) here;
// then the entry goes (a later close_wait finds none: released).
void closePool(uint64_t handle, std::shared_ptr<PoolImpl> pool) {
  const std::shared_ptr<PoolUsage> usage = pool->usage();
  try {
    usage->pending();
  } catch (const std::bad_alloc&) {
    // No memory to poll them now: the transfers drop their references when they complete.
  }
  pool.reset();
  if (usage->released()) closingPools().erase(handle);
}

// Waits until the memory of closed pool `handle` is released, or until the deadline.
kvio_status waitReleased(uint64_t handle, int64_t timeoutNs) {
  timeoutNs = boundedTimeoutNs(timeoutNs);
  const std::shared_ptr<PoolUsage> usage = closingPools().find(handle);
  if (usage == nullptr) return KVIO_STATUS_OK;  // released when it was closed, or reported
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::nanoseconds(timeoutNs < 0 ? 0 : timeoutNs);
  for (;;) {
    if (usage->released()) {
      closingPools().erase(handle);
      return KVIO_STATUS_OK;
    }
    // Out of memory to list them: wait as for "none left" below (polling the release every
    // millisecond) rather than fail: an error here would read as "released" to a caller that
    // only checks for OK, and the memory could be freed under a copy.
    std::vector<std::shared_ptr<TransferState>> pending;
    bool listed = true;
    try {
      pending = usage->pending();
    } catch (const std::bad_alloc&) {
      listed = false;
    }
    const auto now = std::chrono::steady_clock::now();
    if (usage->released()) continue;
    for (const std::shared_ptr<TransferState>& transfer : pending) {
      if (!transfer->submittedHere()) {
        return fail(KVIO_STATUS_UNAVAILABLE,
                    "pool 0x%llx is closed but a transfer submitted with it was in flight when "
                    "this process was forked; its executor is the parent process's, so it never "
                    "completes in this child and kvio's use of the memory does not end here",
                    static_cast<unsigned long long>(handle));
      }
    }
    if (timeoutNs >= 0 && now >= deadline) {
      if (!listed) {
        return fail(KVIO_STATUS_TIMEOUT,
                    "pool 0x%llx is closed but kvio still used its memory after %lld ns (out of "
                    "host memory to list its transfers); wait again (kvio_pool_close_wait) "
                    "before freeing it",
                    static_cast<unsigned long long>(handle), static_cast<long long>(timeoutNs));
      }
      if (pending.empty()) {  // held by a call in progress on another thread, not a transfer
        return fail(KVIO_STATUS_TIMEOUT,
                    "pool 0x%llx is closed but kvio still used its memory after %lld ns: no "
                    "transfer submitted with it is running, but a kvio call made with it before "
                    "the close (a submit being checked, a kvio_pool_copy) had not returned; wait "
                    "again (kvio_pool_close_wait) before freeing it",
                    static_cast<unsigned long long>(handle), static_cast<long long>(timeoutNs));
      }
      return fail(KVIO_STATUS_TIMEOUT,
                  "pool 0x%llx is closed but %zu transfer(s) submitted with it were still running "
                  "after %lld ns, so kvio still uses its memory; wait again "
                  "(kvio_pool_close_wait) before freeing it",
                  static_cast<unsigned long long>(handle), pending.size(),
                  static_cast<long long>(timeoutNs));
    }
    if (pending.empty()) {
      // No transfer left, but the memory is being released by another thread (or a submit
      // racing with the close still holds the pool): wait for the release briefly.
      auto until = now + std::chrono::milliseconds(1);
      if (timeoutNs >= 0 && deadline < until) until = deadline;
      usage->waitReleased(until);
      continue;
    }
    const int64_t left =
        timeoutNs < 0
            ? -1
            : std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
    pending.front()->wait(left);
  }
}

}  // namespace

void listForClose(uint64_t handle) {
  closingPools().list(handle);
}

}  // namespace kvio

using namespace kvio;

extern "C" {

kvio_status kvio_pool_close(uint64_t pool_handle) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<PoolImpl> pool;
    KVIO_RETURN_IF_ERROR(closingPools().remove(pool_handle, &pool));
    closePool(pool_handle, std::move(pool));  // memory goes with the last transfer using it
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_close_wait(uint64_t pool_handle, int64_t timeout_ns) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<PoolImpl> pool;
    const kvio_status removed = closingPools().remove(pool_handle, &pool);
    if (removed == KVIO_STATUS_OK) {
      closePool(pool_handle, std::move(pool));
    } else if (removed != KVIO_STATUS_CLOSED) {
      return removed;  // not a pool handle
    } else if (!pools().issued(pool_handle)) {
      return fail(KVIO_STATUS_CLOSED, "pool 0x%llx was never opened",
                  static_cast<unsigned long long>(pool_handle));
    }
    return waitReleased(pool_handle, timeout_ns);
  });
}

}  // extern "C"
