// Thread-local error messages for the C ABI (see error.hpp).
#include "error.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

#include "thread_object.hpp"

namespace kvio {
namespace {
// The thread's last message, in a string reached through a ThreadObject (thread_object.hpp). A
// failure while the thread exits, once that string is gone (or when there is no memory to make
// it), keeps the start of its message in `exitMessage` instead: storage that needs no
// destruction, usable until the thread's own storage goes.
struct LastErrorTag;
using ThreadMessage = ThreadObject<std::string, LastErrorTag>;
thread_local char exitMessage[512];
thread_local bool inExitMessage = false;                  // the last message is exitMessage
thread_local kvio_status tlsLastStatus = KVIO_STATUS_OK;  // the status the last message explains
}  // namespace

std::string lastError() {
  return lastErrorText();
}

const char* lastErrorText() noexcept {
  if (inExitMessage) return exitMessage;
  const std::string* message = ThreadMessage::existing();
  return message == nullptr ? "" : message->c_str();
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
  std::string* message = nullptr;
  try {
    message = ThreadMessage::get();
  } catch (...) {
  }
  if (message == nullptr) {  // the thread is exiting, or no memory for its string
    const size_t fits = std::min(length, sizeof exitMessage - 1);
    std::memcpy(exitMessage, stack, fits);
    exitMessage[fits] = '\0';
    inExitMessage = true;
    va_end(args);
    return status;
  }
  inExitMessage = false;
  try {
    if (length < sizeof stack) {
      message->assign(stack, length);
    } else {
      std::vector<char> buffer(length + 1, '\0');
      std::vsnprintf(buffer.data(), buffer.size(), format, args);
      message->assign(buffer.data(), length);
    }
  } catch (...) {
    // No memory for the message: as much of its start as the stored string has room for
    // (an assign within the capacity does not allocate).
    const size_t fits = std::min({length, sizeof stack - 1, message->capacity()});
    message->assign(stack, fits);
  }
  va_end(args);
  return status;
}

}  // namespace kvio
