// The C ABI's objects behind 64-bit handles: one registry per object type (pools, executors,
// transfers). The entry points (pool_api.cpp, pool_close.cpp, executor_api.cpp,
// transfer_api.cpp and the vendor entry points in the backend folders) look handles up here.
#ifndef KVIO_CORE_HANDLES_HPP_
#define KVIO_CORE_HANDLES_HPP_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "error.hpp"
#include "executor.hpp"
#include "kvio/kvio.h"
#include "pool.hpp"

namespace kvio {

struct ExecutorImpl {
  int32_t backend;
  std::unique_ptr<Executor> executor;
  const uint32_t forkGeneration = kvio::forkGeneration();  // made in this process, not a parent
  // Submissions under way on this executor, and whether kvio_executor_close has begun. A submit
  // that looked the executor up before its handle went can queue after close's drain: close
  // waits for those (SubmitScope counts them), and one that starts after close began is refused.
  std::atomic<int32_t> submitting{0};
  std::atomic<bool> closing{false};
};

// What a handle's object can do in a child of fork(): a pool's memory is the child's copy, but an
// executor's threads (or device stream) and the completion of a transfer in flight at the fork
// stayed in the parent. UNAVAILABLE, saying so, for those; closing them still works.
template <class T>
kvio_status usableHere(const T&, uint64_t, const char*) {  // pools (and tests' objects)
  return KVIO_STATUS_OK;
}
inline kvio_status usableHere(const ExecutorImpl& executor, uint64_t handle, const char* argument) {
  if (executor.forkGeneration == forkGeneration()) return KVIO_STATUS_OK;
  return fail(KVIO_STATUS_UNAVAILABLE,
              "%s 0x%llx was created before this process was forked: its threads (or device "
              "stream) are the parent process's, not this child's; create a new executor here "
              "(closing this one releases its handle only)",
              argument, static_cast<unsigned long long>(handle));
}
inline kvio_status usableHere(const TransferState& state, uint64_t handle, const char* argument) {
  if (state.submittedHere() || state.settled()) return KVIO_STATUS_OK;
  return fail(KVIO_STATUS_UNAVAILABLE,
              "%s 0x%llx was in flight when this process was forked: its executor is the parent "
              "process's, so it never completes in this child; close it here",
              argument, static_cast<unsigned long long>(handle));
}

// Handles carry their object type in the top bits, so a handle of the wrong type is named as
// such instead of being looked up in the wrong table.
enum HandleType : uint64_t {
  kPoolHandle = 0x6b01,
  kExecutorHandle = 0x6b02,
  kTransferHandle = 0x6b03
};

const char* handleTypeName(uint64_t type);
/// What a caller does to free a handle of `type` (close calls), for the refusal when none is left.
const char* handleReleaseAdvice(uint64_t type);

// A handle is (type << 48) | (generation << 24) | slot: the registry keeps its objects in a table
// of slots, and a slot freed by close is handed out again with its generation raised, so the
// entry costs no allocation per handle and a closed handle whose slot now holds another object
// still reads as closed (its generation is not the slot's). A freed slot waits behind at least
// kMinFreeSlots others before its reuse while the table can still grow, and a slot whose
// generation reaches the maximum is retired instead of reused: a handle's number never comes
// back. At most 2^24 handles of one type are open at once (the slot bits); add() refuses the next
// one with a status, since running out of handles means the caller leaked them, not memory.
template <class T>
class Registry {
 public:
  /// `slotLimit`: the most slots the table may hold (2^24, what the handle's slot bits address;
  /// white-box tests lower it). At most 2^24 handles are open at once unless setOpenLimit() lowers
  /// that.
  explicit Registry(HandleType type, size_t slotLimit = kSlotLimit)
      : type_(type), slotLimit_(slotLimit < kSlotLimit ? slotLimit : kSlotLimit) {}

  /// Registers `object` and writes its handle to *handle. OUT_OF_MEMORY when no handle of this
  /// type is left (the open limit reached, or every slot open or retired), naming the type,
  /// the limit and what to close; `object` is then released and *handle left as it was.
  kvio_status add(std::shared_ptr<T> object, uint64_t* handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (live_ >= openLimit_) return full();
    uint32_t slot;
    // When the table is at its limit a freed slot is reused at once: the generation still makes
    // the handle that held it read as closed.
    if (free_.size() > kMinFreeSlots || (slots_.size() >= slotLimit_ && !free_.empty())) {
      slot = free_.front();
      free_.pop_front();
      ++slots_[slot].generation;
    } else {
      if (slots_.size() >= slotLimit_) return full();  // the other slots are retired
      slot = static_cast<uint32_t>(slots_.size());
      slots_.push_back(Slot{nullptr, 1});
    }
    slots_[slot].object = std::move(object);
    ++live_;
    *handle = (static_cast<uint64_t>(type_) << 48) |
              (static_cast<uint64_t>(slots_[slot].generation) << kSlotBits) | slot;
    return KVIO_STATUS_OK;
  }

  /// add()'s refusal, asked before the object is made (a pool's memory allocated or registered,
  /// an executor's streams and threads started), so that a caller who leaked handles is refused
  /// at no cost. A hint only: add() checks again, since another thread may open the last handle
  /// between the two.
  kvio_status checkRoom() {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool slotLeft = slots_.size() < slotLimit_ || !free_.empty();
    return live_ < openLimit_ && slotLeft ? KVIO_STATUS_OK : full();
  }

  /// Lowers the most handles open at once to `limit` (a test hook's, so that tests reach the
  /// limit without opening 2^24 handles); below 0 or above 2^24 restores 2^24. Open handles
  /// stay open.
  void setOpenLimit(int64_t limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto most = static_cast<int64_t>(kSlotLimit);
    openLimit_ = limit < 0 || limit > most ? most : limit;
  }

  kvio_status get(uint64_t handle, const char* argument, std::shared_ptr<T>* out) {
    KVIO_RETURN_IF_ERROR(checkType(handle, argument));
    std::lock_guard<std::mutex> lock(mutex_);
    Slot* slot = find(handle);
    if (slot == nullptr) return closed(handle, argument);
    KVIO_RETURN_IF_ERROR(usableHere(*slot->object, handle, argument));
    *out = slot->object;
    return KVIO_STATUS_OK;
  }

  /// get() of two handles under one lock (a transfer's source and destination pools).
  kvio_status getPair(uint64_t first, const char* firstArgument, uint64_t second,
                      const char* secondArgument, std::shared_ptr<T>* firstOut,
                      std::shared_ptr<T>* secondOut) {
    KVIO_RETURN_IF_ERROR(checkType(first, firstArgument));
    std::lock_guard<std::mutex> lock(mutex_);
    Slot* a = find(first);
    if (a == nullptr) return closed(first, firstArgument);
    KVIO_RETURN_IF_ERROR(checkType(second, secondArgument));  // in get()'s order: first, second
    Slot* b = find(second);
    if (b == nullptr) return closed(second, secondArgument);
    *firstOut = a->object;
    *secondOut = b->object;
    return KVIO_STATUS_OK;
  }

  int64_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_;
  }

  /// True for a handle of this type that this registry handed out (open or closed since).
  bool issued(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t slot = handle & kSlotMask;
    const uint64_t generation = (handle >> kSlotBits) & kSlotMask;
    return (handle >> 48) == type_ && slot < slots_.size() && generation != 0 &&
           generation <= slots_[slot].generation;
  }

  kvio_status remove(uint64_t handle, const char* argument, std::shared_ptr<T>* out) {
    KVIO_RETURN_IF_ERROR(checkType(handle, argument));
    std::lock_guard<std::mutex> lock(mutex_);
    Slot* slot = find(handle);
    if (slot == nullptr) return closed(handle, argument);
    *out = std::move(slot->object);
    slot->object = nullptr;
    --live_;
    // A close never fails for memory: without room on the free list the slot is not reused
    // (its generation still reads the handle as closed).
    if (slot->generation < kSlotMask) {
      try {
        free_.push_back(static_cast<uint32_t>(handle & kSlotMask));
      } catch (const std::bad_alloc&) {
      }
    }
    return KVIO_STATUS_OK;
  }

 private:
  static constexpr int kSlotBits = 24;
  static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
  static constexpr size_t kSlotLimit = size_t{1} << kSlotBits;
  static constexpr size_t kMinFreeSlots = 1024;

  struct Slot {
    std::shared_ptr<T> object;  // null while the slot is free
    uint32_t generation;        // of the handle that holds (or last held) the slot
  };

  /// The open slot `handle` names; nullptr when it is closed or was never handed out.
  Slot* find(uint64_t handle) {
    const uint64_t slot = handle & kSlotMask;
    if (slot >= slots_.size()) return nullptr;
    Slot& s = slots_[slot];
    if (s.object == nullptr || s.generation != ((handle >> kSlotBits) & kSlotMask)) return nullptr;
    return &s;
  }

  kvio_status checkType(uint64_t handle, const char* argument) const {
    if (handle == 0)
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s is 0 (no %s)", argument, handleTypeName(type_));
    const uint64_t type = handle >> 48;
    if (type != type_) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "%s 0x%llx is not a handle of type '%s' (its type is '%s')", argument,
                  static_cast<unsigned long long>(handle), handleTypeName(type_),
                  handleTypeName(type));
    }
    return KVIO_STATUS_OK;
  }
  // The refusal of add(): how many handles of this type are open, the limit, and what frees
  // one. At the limit it is a leak of handles, not a lack of memory (whatever the status says).
  kvio_status full() const {
    const char* name = handleTypeName(type_);
    const int64_t most = std::min(openLimit_, static_cast<int64_t>(slotLimit_));
    const char* verb = live_ == 1 ? "is" : "are";
    if (live_ < most) {  // every slot is open or retired (after 2^24 reuses each)
      return fail(KVIO_STATUS_OUT_OF_MEMORY,
                  "no %s handle left: %lld %s open and the other slots of the %lld handle "
                  "numbers were retired after their last reuse; %s",
                  name, static_cast<long long>(live_), verb, static_cast<long long>(slotLimit_),
                  handleReleaseAdvice(type_));
    }
    return fail(KVIO_STATUS_OUT_OF_MEMORY,
                "too many open %s handles: %lld %s open and at most %lld may be (a leak of "
                "handles, not a lack of host memory); %s",
                name, static_cast<long long>(live_), verb, static_cast<long long>(most),
                handleReleaseAdvice(type_));
  }
  kvio_status closed(uint64_t handle, const char* argument) const {
    return fail(KVIO_STATUS_CLOSED, "%s 0x%llx is closed (or was never opened)", argument,
                static_cast<unsigned long long>(handle));
  }

  const HandleType type_;
  const size_t slotLimit_;
  std::mutex mutex_;
  std::vector<Slot> slots_;
  std::deque<uint32_t> free_;  // freed slots, reused oldest first
  int64_t live_ = 0;
  int64_t openLimit_ = static_cast<int64_t>(kSlotLimit);
};

Registry<PoolImpl>& pools();
Registry<ExecutorImpl>& executors();
Registry<TransferState>& transfers();

}  // namespace kvio

#endif  // KVIO_CORE_HANDLES_HPP_
