// Thread-local error messages for the C ABI (see error.hpp).
#include "error.hpp"

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

kvio_status fail(kvio_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int needed = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::vector<char> buffer(needed > 0 ? static_cast<size_t>(needed) + 1 : 1, '\0');
  if (needed > 0) std::vsnprintf(buffer.data(), buffer.size(), format, args);
  va_end(args);
  tlsLastError.assign(buffer.data());
  tlsLastStatus = status;
  return status;
}

}  // namespace kvio
