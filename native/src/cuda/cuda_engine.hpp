// The CUDA copy engine as the shared copy-engine issuer drives it (engine/copy_engine.hpp): the
// calls' context, the engine table and an issuer, set up by direct_executor.cpp for the 'direct'
// executor and for the 'staged' executor's host copies.
#ifndef KVIO_CUDA_CUDA_ENGINE_HPP_
#define KVIO_CUDA_CUDA_ENGINE_HPP_

#include <cuda_runtime.h>

#include <vector>

#include "../engine/copy_engine.hpp"
#include "direct_copies.hpp"

namespace kvio {
namespace cuda {

/// cuMemcpyBatchAsync as resolved for this driver (direct_copies.hpp: the ABI choice).
struct BatchEntry {
  BatchAbi abi = BatchAbi::None;
  void* function = nullptr;
};

struct EngineContext {
  cudaStream_t stream = nullptr;
  int32_t device = 0;
  BatchEntry batch;
  std::vector<cudaMemcpy3DBatchOp> ops3d;  // reused by batch3d
};

/// Not copyable or movable: ops.context points at context.
struct CudaEngine {
  CudaEngine() = default;
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;
  EngineContext context;
  engine::EngineOps ops;
  engine::CopyIssuer issuer;  // batch switches and arrays, reused across jobs
};

/// Sets up *engine to issue on `stream` of `device` (direct_executor.cpp).
kvio_status setUpCudaEngine(cudaStream_t stream, int32_t device, CudaEngine* engine);

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_CUDA_ENGINE_HPP_
