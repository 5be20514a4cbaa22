// The fake CUDA runtime's kernels (fake_cuda.hpp): the copy and staged kernels' host entries
// (copy_kernel.hpp, staged_kernel.hpp) and the GPU test's busy kernel (cuda_gpu_busy.hpp),
// compiled with the host compiler. A launch checks its configuration as the device would, then
// queues on the stream: first every range the kernel will touch is checked against the memory
// its device can reach (tables, indices, status words, each row), then every thread of the grid
// is replayed in turn (runThread, runStagedThread: the routines the device kernels run).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cuda/copy_kernel.hpp"
#include "cuda/staged_kernel.hpp"
#include "cuda_gpu_busy.hpp"
#include "fake_cuda.hpp"

namespace kvio {
namespace cuda {
namespace {

using kvio_fake_cuda::Reachability;

bool badConfiguration(int32_t blocks, int32_t threadsPerBlock) {
  return blocks < 1 || threadsPerBlock < 1 || threadsPerBlock > 1024;
}

// Every range a copy launch reads or writes. Tables and indices of an inline launch lie in the
// kernel parameter (always readable).
std::string checkCopy(const CopyLaunch& p, bool parameterTables, const Reachability& reach) {
  std::string problem;
  auto check = [&](const char* what, uint64_t address, uint64_t bytes) {
    if (problem.empty()) problem = reach.check(what, address, bytes);
    return problem.empty();
  };
  if (!parameterTables) {
    const uint64_t srcTable = static_cast<uint64_t>(p.src.components * p.src.numLayers) * 8;
    const uint64_t dstTable = static_cast<uint64_t>(p.dst.components * p.dst.numLayers) * 8;
    const uint64_t indexBytes = static_cast<uint64_t>(p.count) * 8;
    if (!check("the source layer table", reinterpret_cast<uint64_t>(p.src.layerBase), srcTable) ||
        !check("the destination layer table", reinterpret_cast<uint64_t>(p.dst.layerBase),
               dstTable) ||
        !check("the source indices", reinterpret_cast<uint64_t>(p.srcIndices), indexBytes) ||
        !check("the destination indices", reinterpret_cast<uint64_t>(p.dstIndices), indexBytes)) {
      return problem;
    }
    if (p.checkIndices != 0 &&
        !check("the status words", reinterpret_cast<uint64_t>(p.badPairs), 16)) {
      return problem;
    }
  }
  const CopyUnit unit = copyUnit(p.src, p.dst);
  for (int64_t i = 0; i < p.count; ++i) {
    const int64_t s = p.srcIndices[i];
    const int64_t d = p.dstIndices[i];
    if (p.checkIndices != 0 && (s < 0 || s >= p.src.tokens || d < 0 || d >= p.dst.tokens)) {
      continue;  // the kernel skips and reports the pair
    }
    const uint64_t srcOffset = static_cast<uint64_t>(p.src.tokenOffset(s));
    const uint64_t dstOffset = static_cast<uint64_t>(p.dst.tokenOffset(d));
    for (int64_t j = 0; j < p.numLayers; ++j) {
      for (int32_t c = 0; c < p.src.components; ++c) {
        for (int64_t h = 0; h < unit.heads; ++h) {
          if (!check("a source row", p.src.rowAddress(c, p.srcLayerStart + j, srcOffset, h),
                     static_cast<uint64_t>(unit.bytes)) ||
              !check("a destination row", p.dst.rowAddress(c, p.dstLayerStart + j, dstOffset, h),
                     static_cast<uint64_t>(unit.bytes))) {
            return problem;
          }
        }
      }
    }
  }
  return problem;
}

void replayCopy(const CopyLaunch& p, int32_t blocks, int32_t threadsPerBlock) {
  const int64_t threads = static_cast<int64_t>(blocks) * threadsPerBlock;
  for (int64_t t = 0; t < threads; ++t) runThread(p, t, threads);
}

cudaError_t copyConfiguration(const CopyLaunch& launch, int32_t blocks, int32_t threadsPerBlock) {
  if (badConfiguration(blocks, threadsPerBlock)) return cudaErrorInvalidConfiguration;
  // The tiled kernel with eight words per lane is built for at most 512 threads (copy_kernel.cu).
  if (launch.wordBytes != 0 && launch.tileChunks == 8 && threadsPerBlock > 512) {
    return cudaErrorInvalidConfiguration;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t launchCopyKernel(const CopyLaunch& launch, int32_t blocks, int32_t threadsPerBlock,
                             cudaStream_t stream) {
  (void)cudaGetLastError();
  const cudaError_t error = copyConfiguration(launch, blocks, threadsPerBlock);
  if (error != cudaSuccess) return error;
  kvio_fake_cuda::launch(
      stream, "copy",
      [launch](const Reachability& reach) { return checkCopy(launch, false, reach); },
      [launch, blocks, threadsPerBlock] { replayCopy(launch, blocks, threadsPerBlock); });
  return cudaGetLastError();
}

cudaError_t launchInlineCopyKernel(const InlineCopyLaunch& params, int32_t blocks,
                                   int32_t threadsPerBlock, cudaStream_t stream) {
  (void)cudaGetLastError();
  const cudaError_t error = copyConfiguration(params.launch, blocks, threadsPerBlock);
  if (error != cudaSuccess) return error;
  // The parameter is copied at the launch, as the device's parameter space is: the kernel reads
  // this copy, wherever the caller's goes.
  auto copied = std::make_shared<InlineCopyLaunch>(params);
  kvio_fake_cuda::launch(
      stream, "inline copy",
      [copied](const Reachability& reach) { return checkCopy(inlineLaunch(*copied), true, reach); },
      [copied, blocks, threadsPerBlock] {
        replayCopy(inlineLaunch(*copied), blocks, threadsPerBlock);
      });
  return cudaGetLastError();
}

cudaError_t launchStagedKernel(const StagedLaunch& launch, int32_t blocks, int32_t threadsPerBlock,
                               cudaStream_t stream) {
  (void)cudaGetLastError();
  if (badConfiguration(blocks, threadsPerBlock) || threadsPerBlock % 32 != 0) {
    return cudaErrorInvalidConfiguration;
  }
  kvio_fake_cuda::launch(
      stream, "staged",
      [launch](const Reachability& reach) {
        std::string problem =
            reach.check("the segment table", reinterpret_cast<uint64_t>(launch.segments),
                        launch.count * sizeof(StagedSegment));
        for (uint64_t s = 0; s < launch.count && problem.empty(); ++s) {
          const StagedSegment g = launch.segments[s];
          problem = reach.check("a segment's staged bytes",
                                reinterpret_cast<uint64_t>(launch.data) + g.staging,
                                static_cast<uint64_t>(g.width) * g.height);
          for (uint32_t r = 0; r < g.height && problem.empty(); ++r) {
            problem = reach.check("a segment's device row", g.device + r * g.devicePitch, g.width);
          }
        }
        return problem;
      },
      [launch, blocks, threadsPerBlock] {
        for (int32_t b = 0; b < blocks; ++b) {
          for (int32_t t = 0; t < threadsPerBlock; ++t) {
            runStagedThread(launch, b, blocks, t, threadsPerBlock);
          }
        }
      });
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kvio

// The busy kernel keeps the stream busy for a while (about 30 ms per 2^18 iterations, at most
// 200 ms) and writes each element, rather than computing blocks x threads x iterations steps.
cudaError_t kvioTestLaunchBusy(cudaStream_t stream, float* data, int blocks, int threads,
                               int iterations) {
  (void)cudaGetLastError();
  if (kvio::cuda::badConfiguration(blocks, threads)) return cudaErrorInvalidConfiguration;
  const uint64_t count = static_cast<uint64_t>(blocks) * static_cast<uint64_t>(threads);
  kvio_fake_cuda::launch(
      stream, "busy",
      [data, count](const kvio_fake_cuda::Reachability& reach) {
        return reach.check("the busy kernel's data", reinterpret_cast<uint64_t>(data),
                           count * sizeof(float));
      },
      [data, count, iterations] {
        const long long ms = std::min<long long>(200, 30LL * iterations / (1 << 18) + 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        for (uint64_t i = 0; i < count; ++i) data[i] = data[i] * 0.999999f + 1.0e-7f;
      });
  return cudaGetLastError();
}
