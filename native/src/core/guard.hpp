// The exception firewall of the C ABI: every extern "C" entry point runs its body inside
// guarded(), so no exception (a bad_alloc, a std::system_error from a thread or a mutex)
// crosses into C or JNI callers; it becomes a status with the reason in kvio_last_error().
// Entry points returning a value instead of a status use guardedValue() with a fallback.
#ifndef KVIO_CORE_GUARD_HPP_
#define KVIO_CORE_GUARD_HPP_

#include <exception>
#include <new>

#include "error.hpp"
#include "kvio/kvio.h"

namespace kvio {

/// Runs `body` (returning a kvio_status); an exception becomes OUT_OF_MEMORY or INTERNAL.
template <class F>
kvio_status guarded(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(KVIO_STATUS_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(KVIO_STATUS_INTERNAL, "internal error: %s", e.what());
  } catch (...) {
    return fail(KVIO_STATUS_INTERNAL, "internal error (unknown exception)");
  }
}

/// Runs `body` (returning a T); on an exception sets the last error as guarded() does and
/// returns `fallback`.
template <class T, class F>
T guardedValue(T fallback, F&& body) {
  T value = fallback;
  const kvio_status status = guarded([&]() -> kvio_status {
    value = body();
    return KVIO_STATUS_OK;
  });
  return status == KVIO_STATUS_OK ? value : fallback;
}

/// INVALID_ARGUMENT when a required pointer argument `name` is null.
inline kvio_status checkOut(const void* out, const char* name) {
  if (out == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s is null", name);
  return KVIO_STATUS_OK;
}

}  // namespace kvio

#endif  // KVIO_CORE_GUARD_HPP_
