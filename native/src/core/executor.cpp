// TransferState (see executor.hpp).
#include "executor.hpp"

#include <chrono>

namespace kvio {

void TransferState::complete(kvio_status status, std::string message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = status;
    message_ = std::move(message);
    isDone_ = true;
  }
  done_.notify_all();
}

bool TransferState::isDone() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return isDone_;
}

bool TransferState::wait(int64_t timeoutNs) const {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeoutNs < 0) {
    done_.wait(lock, [this] { return isDone_; });
    return true;
  }
  return done_.wait_for(lock, std::chrono::nanoseconds(timeoutNs), [this] { return isDone_; });
}

kvio_status TransferState::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::string TransferState::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

}  // namespace kvio
