// Error reporting of the native core: a thread-local detail message beside each returned
// kvio_status (the C ABI's contract). fail() formats the message and returns the status, so
// call sites read `return fail(KVIO_STATUS_OUT_OF_RANGE, "...", ...)`.
#ifndef KVIO_CORE_ERROR_HPP_
#define KVIO_CORE_ERROR_HPP_

#include <cstdint>
#include <string>

#include "kvio/kvio.h"

namespace kvio {

/// The thread's last-error message (a copy: executors build other messages from it).
std::string lastError();
/// The same as kvio_last_error() returns it: valid until the thread's next failing call.
const char* lastErrorText() noexcept;
/// The status of the failure lastError() describes (fail() sets both); OK before any.
kvio_status lastStatus();

/// printf-style message; returns status. Never throws: without memory for the message it keeps
/// what fits in the thread's stored one (so guarded()'s out-of-memory handler can call it).
kvio_status fail(kvio_status status, const char* format, ...) noexcept
    __attribute__((format(printf, 2, 3)));

/// a + b clamped to the int64 range: for messages that echo absurd caller values.
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return a < 0 ? INT64_MIN : INT64_MAX;
  return sum;
}

/// Propagates a non-OK status from an expression.
#define KVIO_RETURN_IF_ERROR(expr)                           \
  do {                                                       \
    const kvio_status kvio_status_ = (expr);                 \
    if (kvio_status_ != KVIO_STATUS_OK) return kvio_status_; \
  } while (0)

}  // namespace kvio

#endif  // KVIO_CORE_ERROR_HPP_
