// The C ABI's objects behind 64-bit handles: one registry per object type (pools, executors,
// transfers). The entry points (pool_api.cpp, pool_close.cpp, executor_api.cpp,
// transfer_api.cpp and the vendor entry points in the backend folders) look handles up here.
#ifndef KVIO_CORE_HANDLES_HPP_
#define KVIO_CORE_HANDLES_HPP_

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "error.hpp"
#include "executor.hpp"
#include "kvio/kvio.h"
#include "pool.hpp"

namespace kvio {

struct ExecutorImpl {
  int32_t backend;
  std::unique_ptr<Executor> executor;
};

// Handles carry their object type in the top bits, so a handle of the wrong type is named as
// such instead of being looked up in the wrong table.
enum HandleType : uint64_t {
  kPoolHandle = 0x6b01,
  kExecutorHandle = 0x6b02,
  kTransferHandle = 0x6b03
};

const char* handleTypeName(uint64_t type);

template <class T>
class Registry {
 public:
  explicit Registry(HandleType type) : type_(type) {}

  uint64_t add(std::shared_ptr<T> object) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t handle = (static_cast<uint64_t>(type_) << 48) | next_++;
    objects_.emplace(handle, std::move(object));
    return handle;
  }

  kvio_status get(uint64_t handle, const char* argument, std::shared_ptr<T>* out) {
    KVIO_RETURN_IF_ERROR(checkType(handle, argument));
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = objects_.find(handle);
    if (it == objects_.end()) return closed(handle, argument);
    *out = it->second;
    return KVIO_STATUS_OK;
  }

  int64_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(objects_.size());
  }

  /// True for a handle of this type that this registry handed out (open or closed since).
  bool issued(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t number = handle & ((uint64_t{1} << 48) - 1);
    return (handle >> 48) == type_ && number != 0 && number < next_;
  }

  kvio_status remove(uint64_t handle, const char* argument, std::shared_ptr<T>* out) {
    KVIO_RETURN_IF_ERROR(checkType(handle, argument));
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = objects_.find(handle);
    if (it == objects_.end()) return closed(handle, argument);
    *out = std::move(it->second);
    objects_.erase(it);
    return KVIO_STATUS_OK;
  }

 private:
  kvio_status checkType(uint64_t handle, const char* argument) const {
    if (handle == 0)
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s is 0 (no %s)", argument, handleTypeName(type_));
    const uint64_t type = handle >> 48;
    if (type != type_) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s 0x%llx is not a %s handle (it is a %s handle)",
                  argument, static_cast<unsigned long long>(handle), handleTypeName(type_),
                  handleTypeName(type));
    }
    return KVIO_STATUS_OK;
  }
  kvio_status closed(uint64_t handle, const char* argument) const {
    return fail(KVIO_STATUS_CLOSED, "%s 0x%llx is closed (or was never opened)", argument,
                static_cast<unsigned long long>(handle));
  }

  const HandleType type_;
  std::mutex mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<T>> objects_;
  uint64_t next_ = 1;
};

Registry<PoolImpl>& pools();
Registry<ExecutorImpl>& executors();
Registry<TransferState>& transfers();

}  // namespace kvio

#endif  // KVIO_CORE_HANDLES_HPP_
