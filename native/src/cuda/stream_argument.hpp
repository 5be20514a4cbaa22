// What a `stream` value given to kvio_executor_create_cuda means (kvio.h), with no CUDA header:
// compiled in every build (cuda_api.cpp checks arguments there) and checked by host tests.
#ifndef KVIO_CUDA_STREAM_ARGUMENT_HPP_
#define KVIO_CUDA_STREAM_ARGUMENT_HPP_

#include <cstdint>

#include "kvio/kvio.h"

namespace kvio {
namespace cuda {

enum class StreamArgument {
  kOwnMarker,      // KVIO_CUDA_OWN_STREAM: kvio creates a non-blocking stream
  kLegacyDefault,  // 0 or cudaStreamLegacy (0x1): the legacy default stream
  kPerThread,      // cudaStreamPerThread (0x2): refused (another stream on each thread)
  kHandle,         // a cudaStream_t the caller (or kvio) created
};

/// The kind of `stream`: a kvio_executor_create_cuda argument, or an executor's actual stream
/// (never the own-stream marker). The batch copy API takes only kHandle streams.
inline StreamArgument classifyStream(uint64_t stream) {
  if (stream == KVIO_CUDA_OWN_STREAM) return StreamArgument::kOwnMarker;
  if (stream == 0 || stream == 0x1) return StreamArgument::kLegacyDefault;
  if (stream == 0x2) return StreamArgument::kPerThread;
  return StreamArgument::kHandle;
}

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_STREAM_ARGUMENT_HPP_
