// The backend registry's names for what only a vendor knows: the kinds of native handle
// (streams, events) that executors and device completions hand out through
// Executor::nativeHandle and DeviceCompletion::nativeHandle. The vendor folders
// (native/src/cuda, native/src/ascend) answer and ask for them; the generic core never does.
#ifndef KVIO_CORE_BACKENDS_HPP_
#define KVIO_CORE_BACKENDS_HPP_

#include "executor.hpp"

namespace kvio {

enum class NativeHandle : int32_t {
  kCudaStream,  // cudaStream_t (kernel, direct)
  kCudaEvent,   // cudaEvent_t
  kAclStream,   // aclrtStream (kernel_ascend)
  kAclEvent,    // aclrtEvent
};

}  // namespace kvio

#endif  // KVIO_CORE_BACKENDS_HPP_
