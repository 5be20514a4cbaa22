// The interface between the core and the backends. The core validates and plans; an
// Executor runs plans in submission order and reports completion through a TransferState.
// Backends register a BackendOps table (backends.cpp); the core never includes a backend's
// headers.
#ifndef KVIO_CORE_EXECUTOR_HPP_
#define KVIO_CORE_EXECUTOR_HPP_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kvio/kvio.h"

namespace kvio {

/// Completion of one submitted transfer: a one-shot event with a status and a message.
class TransferState {
 public:
  explicit TransferState(uint64_t bytes) : bytes_(bytes) {}
  void complete(kvio_status status, std::string message = {});
  bool isDone() const;
  /// Waits up to timeoutNs (< 0: forever). Returns false on timeout.
  bool wait(int64_t timeoutNs) const;
  kvio_status status() const;
  std::string message() const;
  uint64_t bytes() const { return bytes_; }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable done_;
  bool isDone_ = false;
  kvio_status status_ = KVIO_STATUS_OK;
  std::string message_;
  const uint64_t bytes_;
};

/// Everything an executor needs to run one transfer. keepAlive holds the pools' memory so it
/// outlives a pool closed while the transfer is in flight.
struct Job {
  std::vector<kvio_copy2d> plan;
  std::vector<std::shared_ptr<void>> keepAlive;
  std::shared_ptr<TransferState> state;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual int32_t threads() const = 0;
  /// Enqueues the job; runs after every job submitted before it on this executor.
  virtual void submit(std::shared_ptr<Job> job) = 0;
  /// Blocks until every submitted job has completed.
  virtual void drain() = 0;
};

struct BackendOps {
  int32_t id;
  /// KVIO_STATUS_OK, or UNAVAILABLE with the cause in kvio_last_error().
  kvio_status (*available)();
  kvio_status (*create)(int32_t threads, std::unique_ptr<Executor>* out);
};

/// The backend table for an io backend id, or nullptr for an unknown id.
const BackendOps* backendOps(int32_t ioBackend);

}  // namespace kvio

#endif  // KVIO_CORE_EXECUTOR_HPP_
