// The per-thread scratch that submit reuses so that a transfer allocates nothing for it (the
// index runs here, validation's intervals and slot bitmap, the planner's run offsets and groups):
// kept for the thread's next transfer up to a bound, released after a transfer that grew it
// beyond, so that one large transfer does not hold its memory for the life of the thread (as the
// plan storage a thread keeps is bounded: executor.cpp).
#ifndef KVIO_CORE_TRANSFER_SCRATCH_HPP_
#define KVIO_CORE_TRANSFER_SCRATCH_HPP_

#include <cstddef>
#include <vector>

namespace kvio {

/// Index runs (planner.hpp) a thread keeps after a submit: up to this many bytes (32768 runs, as
/// many index pairs as the Java API's per-thread index scratch holds).
constexpr size_t kRetainedIndexRunBytes = size_t{1} << 20;

/// Frees `v`'s storage when its capacity is more than `maxBytes`; smaller storage stays.
template <typename T>
void boundRetained(std::vector<T>* v, size_t maxBytes) {
  if (v->capacity() * sizeof(T) > maxBytes) std::vector<T>().swap(*v);
}

/// Each of validation's and the planner's scratch vectors a thread keeps: up to this many bytes.
constexpr size_t kRetainedScratchBytes = size_t{1} << 20;

/// Bounds a thread's reused scratch vector (boundRetained) when the scope that uses it ends, on
/// every way out of it; nothing may refer to the vector's elements after that scope.
template <typename T>
class BoundOnExit {
 public:
  BoundOnExit(std::vector<T>* v, size_t maxBytes) : v_(v), maxBytes_(maxBytes) {}
  BoundOnExit(const BoundOnExit&) = delete;
  BoundOnExit& operator=(const BoundOnExit&) = delete;
  ~BoundOnExit() { boundRetained(v_, maxBytes_); }

 private:
  std::vector<T>* v_;
  size_t maxBytes_;
};

/// The capacity in bytes of the index runs the calling thread keeps for its next submit.
size_t retainedIndexRunBytes();
/// The same for validation's scratch (validate.cpp) and the planner's (planner.cpp), all vectors
/// summed.
size_t retainedValidationScratchBytes();
size_t retainedPlanScratchBytes();

}  // namespace kvio

#endif  // KVIO_CORE_TRANSFER_SCRATCH_HPP_
