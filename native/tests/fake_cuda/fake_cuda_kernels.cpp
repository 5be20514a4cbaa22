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

using kvio_fake_cuda::Fault;
using kvio_fake_cuda::Reachability;

bool badConfiguration(int32_t blocks, int32_t threadsPerBlock) {
  return blocks < 1 || threadsPerBlock < 1 || threadsPerBlock > 1024;
}

// Every range a copy launch reads or writes, and the alignment of every word access: the layer
// tables, indices and status words are read as 8-byte words, the tiled routine's rows as words of
// wordBytes. An inline launch's tables and indices must lie in its parameter (`parameter`, the
// launch's copy), anything else in memory the device reaches. The status words are touched only
// for a skipped pair.
Fault checkCopy(const CopyLaunch& p, const uint8_t* parameter, const Reachability& reach) {
  Fault fault;
  // `staged`: tables and indices, which an inline launch carries in its parameter.
  auto reachable = [&](const char* what, uint64_t address, uint64_t bytes, bool staged = false) {
    if (fault.error != cudaSuccess) return false;
    if (staged && parameter != nullptr) {
      const uint64_t begin = reinterpret_cast<uint64_t>(parameter);
      if (address < begin || bytes > kInlineStagingBytes ||
          address - begin > kInlineStagingBytes - bytes) {
        fault = {cudaErrorIllegalAddress, std::string(what) + " lie outside the kernel parameter"};
      }
    } else {
      std::string problem = reach.check(what, address, bytes);
      if (!problem.empty()) fault = {cudaErrorIllegalAddress, problem};
    }
    return fault.error == cudaSuccess;
  };
  auto aligned = [&](const char* what, uint64_t address, uint64_t to) {
    if (fault.error == cudaSuccess && address % to != 0) {
      fault = {cudaErrorMisalignedAddress, std::string(what) + " at " + std::to_string(address) +
                                               " read or written as " + std::to_string(to) +
                                               "-byte words"};
    }
    return fault.error == cudaSuccess;
  };
  const AffineLayout* sides[2] = {&p.src, &p.dst};
  const int64_t starts[2] = {p.srcLayerStart, p.dstLayerStart};
  for (int k = 0; k < 2; ++k) {
    const AffineLayout& side = *sides[k];
    const uint64_t table = reinterpret_cast<uint64_t>(side.layerBase);
    if (starts[k] < 0 || p.numLayers < 0 || starts[k] + p.numLayers > side.numLayers) {
      fault = {cudaErrorIllegalAddress, "layers past the end of a layer table"};
      return fault;
    }
    if (!aligned("the tables", table, 8) ||
        !reachable("the tables", table, static_cast<uint64_t>(side.components * side.numLayers) * 8,
                   true)) {
      return fault;
    }
  }
  const uint64_t indexBytes = static_cast<uint64_t>(p.count) * 8;
  for (const int64_t* indices : {p.srcIndices, p.dstIndices}) {
    const uint64_t address = reinterpret_cast<uint64_t>(indices);
    if (!aligned("the indices", address, 8) ||
        !reachable("the indices", address, indexBytes, true)) {
      return fault;
    }
  }
  const CopyUnit unit = copyUnit(p.src, p.dst);
  for (int64_t i = 0; i < p.count; ++i) {
    const int64_t s = p.srcIndices[i];
    const int64_t d = p.dstIndices[i];
    if (p.checkIndices != 0 && (s < 0 || s >= p.src.tokens || d < 0 || d >= p.dst.tokens)) {
      const uint64_t status = reinterpret_cast<uint64_t>(p.badPairs);  // the kernel reports it
      if (!aligned("the status words", status, 8) || !reachable("the status words", status, 16)) {
        return fault;
      }
      continue;
    }
    const uint64_t srcOffset = static_cast<uint64_t>(p.src.tokenOffset(s));
    const uint64_t dstOffset = static_cast<uint64_t>(p.dst.tokenOffset(d));
    for (int64_t j = 0; j < p.numLayers; ++j) {
      for (int32_t c = 0; c < p.src.components; ++c) {
        for (int64_t h = 0; h < unit.heads; ++h) {
          const uint64_t from = p.src.rowAddress(c, p.srcLayerStart + j, srcOffset, h);
          const uint64_t to = p.dst.rowAddress(c, p.dstLayerStart + j, dstOffset, h);
          const uint64_t bytes = static_cast<uint64_t>(unit.bytes);
          if (p.wordBytes != 0 && (!aligned("a source row", from, p.wordBytes) ||
                                   !aligned("a destination row", to, p.wordBytes))) {
            return fault;
          }
          if (!reachable("a source row", from, bytes) ||
              !reachable("a destination row", to, bytes)) {
            return fault;
          }
        }
      }
    }
  }
  return fault;
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
      [launch](const Reachability& reach) { return checkCopy(launch, nullptr, reach); },
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
      [copied](const Reachability& reach) {
        return checkCopy(inlineLaunch(*copied), copied->staging, reach);
      },
      [copied, blocks, threadsPerBlock] {
        replayCopy(inlineLaunch(*copied), blocks, threadsPerBlock);
      });
  return cudaGetLastError();
}

cudaError_t launchStagedKernel(const StagedLaunch& launch, int32_t blocks, int32_t threadsPerBlock,
                               cudaStream_t stream) {
  (void)cudaGetLastError();
  if (badConfiguration(blocks, threadsPerBlock)) return cudaErrorInvalidConfiguration;
  kvio_fake_cuda::launch(
      stream, "staged",
      [launch](const Reachability& reach) -> Fault {
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
        if (problem.empty()) return Fault{};
        return Fault{cudaErrorIllegalAddress, problem};
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
      [data, count](const kvio_fake_cuda::Reachability& reach) -> kvio_fake_cuda::Fault {
        std::string problem = reach.check("the busy kernel's data",
                                          reinterpret_cast<uint64_t>(data), count * sizeof(float));
        if (problem.empty()) return kvio_fake_cuda::Fault{};
        return kvio_fake_cuda::Fault{cudaErrorIllegalAddress, problem};
      },
      [data, count, iterations] {
        const long long ms = std::min<long long>(200, 30LL * iterations / (1 << 18) + 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        for (uint64_t i = 0; i < count; ++i) data[i] = data[i] * 0.999999f + 1.0e-7f;
      });
  return cudaGetLastError();
}
