// The failing allocator (failing_allocator.hpp): the test binary's global operator new and
// delete, on malloc and free.
#include "failing_allocator.hpp"

#include <cstdlib>
#include <new>

namespace {

// Allocations of this thread left before the one that fails; < 0: none fails.
thread_local int64_t tAllocationsLeft = -1;
thread_local bool tPersist = false;  // after the first failure, every allocation fails
thread_local int64_t tFailures = 0;  // injected failures since the test last looked

void* allocate(std::size_t bytes, std::size_t alignment) {
  if (tAllocationsLeft == 0) {
    ++tFailures;
    if (!tPersist) tAllocationsLeft = -1;
    throw std::bad_alloc();
  }
  if (tAllocationsLeft > 0) --tAllocationsLeft;
  if (bytes == 0) bytes = 1;
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(bytes);
  } else if (posix_memalign(&p, alignment, bytes) != 0) {
    p = nullptr;
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* allocateNothrow(std::size_t bytes, std::size_t alignment) noexcept {
  try {
    return allocate(bytes, alignment);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

}  // namespace

void* operator new(std::size_t n) {
  return allocate(n, 0);
}
void* operator new[](std::size_t n) {
  return allocate(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocateNothrow(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocateNothrow(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocateNothrow(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocateNothrow(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace kvio_test {

void armAllocations(int64_t failAt, bool persist) {
  tFailures = 0;
  tPersist = persist;
  tAllocationsLeft = failAt;
}

void disarmAllocations(int64_t* left, int64_t* failures) {
  *left = tAllocationsLeft;
  *failures = tFailures;
  tAllocationsLeft = -1;
}

}  // namespace kvio_test
