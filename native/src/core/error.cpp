// Thread-local error messages for the C ABI (see error.hpp).
#include "error.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <vector>

namespace kvio {
namespace {
thread_local std::string tlsLastError;
thread_local kvio_status tlsLastStatus = KVIO_STATUS_OK;  // the status tlsLastError explains
}  // namespace

void setLastError(std::string message) {
  tlsLastError = std::move(message);
}

const std::string& lastError() {
  return tlsLastError;
}

kvio_status lastStatus() {
  return tlsLastStatus;
}

kvio_status fail(kvio_status status, const char* format, ...) noexcept {
  // Formats into the stack first: fail() runs in guarded()'s out-of-memory handler too, where
  // an allocation that throws again would escape the C ABI (std::terminate).
  char stack[1024];
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int needed = std::vsnprintf(stack, sizeof stack, format, copy);
  va_end(copy);
  const size_t length = needed > 0 ? static_cast<size_t>(needed) : 0;
  tlsLastStatus = status;
  try {
    if (length < sizeof stack) {
      tlsLastError.assign(stack, length);
    } else {
      std::vector<char> buffer(length + 1, '\0');
      std::vsnprintf(buffer.data(), buffer.size(), format, args);
      tlsLastError.assign(buffer.data(), length);
    }
  } catch (...) {
    // No memory for the message: as much of its start as the stored string has room for
    // (an assign within the capacity does not allocate).
    const size_t fits = std::min({length, sizeof stack - 1, tlsLastError.capacity()});
    tlsLastError.assign(stack, fits);
  }
  va_end(args);
  return status;
}

}  // namespace kvio
