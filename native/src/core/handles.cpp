// The three handle registries (handles.hpp). They live until exit: handles may be closed by
// threads that outlive static destruction.
#include "handles.hpp"

#include "diagnostics.hpp"

namespace kvio {

const char* handleTypeName(uint64_t type) {
  switch (type) {
    case kPoolHandle: return "pool";
    case kExecutorHandle: return "executor";
    case kTransferHandle: return "transfer";
    default: return "unknown";
  }
}

const char* handleReleaseAdvice(uint64_t type) {
  switch (type) {
    case kPoolHandle: return "close the pools no longer needed (kvio_pool_close)";
    case kExecutorHandle: return "close the executors no longer needed (kvio_executor_close)";
    case kTransferHandle:
      return "close every transfer once it has completed (kvio_transfer_close after "
             "kvio_transfer_wait or kvio_transfer_is_done; Java: await() or close() each "
             "Transfer)";
    default: return "close the handles no longer needed";
  }
}

Registry<PoolImpl>& pools() {
  static Registry<PoolImpl>* r = new Registry<PoolImpl>(kPoolHandle);  // lives until exit
  return *r;
}
Registry<ExecutorImpl>& executors() {
  static Registry<ExecutorImpl>* r = new Registry<ExecutorImpl>(kExecutorHandle);
  return *r;
}
Registry<TransferState>& transfers() {
  static Registry<TransferState>* r = new Registry<TransferState>(kTransferHandle);
  return *r;
}

void liveHandles(int64_t* pools_, int64_t* executors_, int64_t* transfers_) {
  *pools_ = pools().size();
  *executors_ = executors().size();
  *transfers_ = transfers().size();
}

}  // namespace kvio
