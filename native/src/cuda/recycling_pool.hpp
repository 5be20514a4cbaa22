// A bounded free list of handles that are costly to create and destroy (CUDA events): the
// kernel and direct executors take a transfer's event from it and the transfer's completion
// gives the event back when it is destroyed (the event completed, and the caller has closed the
// transfer, so nothing uses it any more). The staged executor keeps its reused plans in one. At
// most `capacity` handles wait in the list; one given back to a full list is destroyed. Shared
// (std::shared_ptr) between an executor and its completions, so a completion that outlives its
// executor still has somewhere to return to. Free of CUDA headers:
// native/tests/cuda_recycling_pool_test.cpp tests it with plain integers.
#ifndef KVIO_CUDA_RECYCLING_POOL_HPP_
#define KVIO_CUDA_RECYCLING_POOL_HPP_

#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace kvio {
namespace cuda {

template <class Handle>
class RecyclingPool {
 public:
  RecyclingPool(size_t capacity, std::function<void(Handle)> destroy)
      : capacity_(capacity), destroy_(std::move(destroy)) {
    free_.reserve(capacity);
  }
  ~RecyclingPool() {
    for (Handle h : free_) destroy_(h);
  }
  RecyclingPool(const RecyclingPool&) = delete;
  RecyclingPool& operator=(const RecyclingPool&) = delete;

  /// A handle given back earlier (the most recent one), or false when none waits.
  bool take(Handle* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return false;
    *out = free_.back();
    free_.pop_back();
    return true;
  }

  /// Keeps `h` for a later take, or destroys it when `capacity` handles wait already.
  void give(Handle h) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (free_.size() < capacity_) {
        free_.push_back(h);
        return;
      }
    }
    destroy_(h);
  }

  size_t waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return free_.size();
  }

 private:
  const size_t capacity_;
  const std::function<void(Handle)> destroy_;
  mutable std::mutex mutex_;
  std::vector<Handle> free_;
};

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_RECYCLING_POOL_HPP_
