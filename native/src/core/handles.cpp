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
