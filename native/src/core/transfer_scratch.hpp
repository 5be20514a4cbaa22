// The per-thread scratch that submit reuses so that a transfer allocates nothing for it: kept for
// the thread's next transfer up to a bound, released after a transfer that grew it beyond, so
// that one large transfer does not hold its memory for the life of the thread (as the plan
// storage a thread keeps is bounded: executor.cpp).
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

/// The capacity in bytes of the index runs the calling thread keeps for its next submit.
size_t retainedIndexRunBytes();

}  // namespace kvio

#endif  // KVIO_CORE_TRANSFER_SCRATCH_HPP_
