// The backend registry (backends.cpp): the BackendOps table of each io backend, and what only
// a vendor knows: how its executors are created on a device and stream, and the kinds of native
// handle (streams, events) that executors and device completions hand out through
// Executor::nativeHandle and DeviceCompletion::nativeHandle. The vendor folders
// (native/src/cuda, native/src/ascend) answer and ask for them; the generic core never does.
#ifndef KVIO_CORE_BACKENDS_HPP_
#define KVIO_CORE_BACKENDS_HPP_

#include <string>
#include <vector>

#include "executor.hpp"
#include "pool.hpp"

namespace kvio {

enum class NativeHandle : int32_t {
  kCudaStream,  // cudaStream_t (kernel, direct, staged, auto on a GPU)
  kCudaEvent,   // cudaEvent_t
  kAclStream,   // aclrtStream (kernel_ascend)
  kAclEvent,    // aclrtEvent
};

/// The most io threads a cpu executor (and auto's cpu candidate) runs: kvio_executor_create
/// refuses more for every io backend (checkThreadCount), so that the answer does not depend on
/// whether the machine makes auto a GPU or a cpu executor.
constexpr int32_t kMostCpuThreads = 1024;
/// INVALID_ARGUMENT (with the valid range) for a `threads` argument above kMostCpuThreads.
kvio_status checkThreadCount(int32_t threads);

/// Launch settings of a CUDA executor (kvio_executor_create_cuda).
struct CudaExecutorConfig {
  int32_t device = 0;
  uint64_t stream = KVIO_CUDA_OWN_STREAM;
  int32_t ctaBudget = 0;
  int32_t warpsPerCta = 0;
};

struct BackendOps {
  int32_t id;
  /// KVIO_STATUS_OK, or UNAVAILABLE with the cause in kvio_last_error().
  kvio_status (*available)();
  kvio_status (*create)(int32_t threads, std::unique_ptr<Executor>* out);
  /// CUDA backends only (nullptr otherwise).
  kvio_status (*createCuda)(const CudaExecutorConfig& config, std::unique_ptr<Executor>* out);
  /// The Ascend backend only (nullptr otherwise): an executor on NPU `device` ordering its
  /// work on `stream` (an aclrtStream; KVIO_ASCEND_OWN_STREAM: its own).
  kvio_status (*createAscend)(int32_t device, uint64_t stream, std::unique_ptr<Executor>* out);
  /// Whether its executors take device-resident index arrays (kvio_submit_device_indices);
  /// they check the arrays in Executor::checkDeviceIndices.
  bool deviceIndices = false;
  /// Its launch settings, on one of its executors (kvio_executor_set_launch); nullptr: it has
  /// none.
  kvio_status (*setLaunch)(Executor& executor, int32_t ctaBudget, int32_t warpsPerCta) = nullptr;
};

const MemoryOps& cudaMemoryOps();    // backends.cpp (stubs) or native/src/cuda/cuda_memory.cpp
const MemoryOps& ascendMemoryOps();  // native/src/ascend/ascend_memory.cpp

/// The backend table for an io backend id, or nullptr for an unknown id.
const BackendOps* backendOps(int32_t ioBackend);

/// The names of the io backends whose tables say `has`, quoted and joined with "or" (for
/// messages: "'kernel'"); "no" when none does.
std::string ioBackendsWhere(bool (*has)(const BackendOps& ops));

}  // namespace kvio

#endif  // KVIO_CORE_BACKENDS_HPP_
