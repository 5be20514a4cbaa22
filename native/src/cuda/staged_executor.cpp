// The 'staged' io backend: a host<->device transfer goes through a device staging buffer, chunk
// by chunk (staged_routine.cuh: the chunks, segment tables and host runs built from the
// planner's plan). Per chunk, on the executor's one stream: its segment table is uploaded to the
// head of the staging buffer; a backup gathers the device rows into the staging buffer with the
// gather/scatter kernel (staged_kernel.cu), then copies each contiguous host run from it to the
// host on the copy engine (the shared issuer, as 'direct' issues: batched where the driver
// can); a load copies the host runs in, then scatters. Reuse of the staging buffer by the next
// chunk or job is ordered by the stream alone: nothing on the submit path waits for the device.
// The staging buffer (KVIO_STAGED_BYTES, default 64 MiB, at least 4 KiB) is allocated at the
// executor's first transfer and freed when it closes; it bounds the device memory staged uses.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../core/auto_choice.hpp"
#include "../core/launch_shape.hpp"
#include "../core/pool.hpp"
#include "cuda_engine.hpp"
#include "cuda_executor.hpp"
#include "staged_kernel.hpp"

namespace kvio {
namespace cuda {
namespace {

constexpr uint64_t kDefaultStagingBytes = 64ull << 20;
constexpr int32_t kDefaultStagedCtas = 8;
constexpr int32_t kDefaultStagedWarps = 16;

// KVIO_STAGED_BYTES: bytes (an integer with an optional K, M or G suffix), at least
// kStagedMinBytes; unset or empty: the default.
kvio_status stagingBytesFromEnvironment(uint64_t* out) {
  *out = kDefaultStagingBytes;
  const char* text = std::getenv("KVIO_STAGED_BYTES");
  if (text == nullptr || *text == '\0') return KVIO_STATUS_OK;
  uint64_t bytes = 0;
  if (!parseBytes(text, &bytes) || bytes < kStagedMinBytes || bytes == UINT64_MAX) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "KVIO_STAGED_BYTES='%s' is not a staging buffer size: give bytes, an integer with "
                "an optional K, M or G suffix, at least %llu (4K); unset, the 'staged' io backend "
                "uses 64M",
                text, static_cast<unsigned long long>(kStagedMinBytes));
  }
  *out = bytes;
  return KVIO_STATUS_OK;
}

class StagedExecutor final : public CudaExecutor {
 public:
  kvio_status configure(const CudaExecutorConfig& config) {
    char defaults[64];
    std::snprintf(defaults, sizeof defaults, "the defaults %d and %d", kDefaultStagedCtas,
                  kDefaultStagedWarps);
    KVIO_RETURN_IF_ERROR(checkLaunchShape(config.ctaBudget, config.warpsPerCta, defaults));
    ctas_ = config.ctaBudget > 0 ? config.ctaBudget : kDefaultStagedCtas;
    warps_ = config.warpsPerCta > 0 ? config.warpsPerCta : kDefaultStagedWarps;
    KVIO_RETURN_IF_ERROR(stagingBytesFromEnvironment(&stagingBytes_));
    KVIO_RETURN_IF_ERROR(init(config, "staged"));
    return setUpCudaEngine(stream_, device_, &engine_);
  }

  ~StagedExecutor() override {
    drain();
    if (staging_ != nullptr) {
      DeviceScope scope(device_);
      cudaFree(staging_);
    }
  }

  // Host <-> device only: the staging buffer is what makes the host side large copies.
  kvio_status acceptMemory(MemoryPlace src, MemoryPlace dst) const override {
    KVIO_RETURN_IF_ERROR(CudaExecutor::acceptMemory(src, dst));
    const bool srcDevice = src.kind == KVIO_MEMORY_CUDA_DEVICE;
    const bool dstDevice = dst.kind == KVIO_MEMORY_CUDA_DEVICE;
    if (srcDevice == dstDevice) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "the 'staged' io backend moves between pinned host memory and CUDA device "
                  "memory only; this transfer is %s: use the 'kernel' or 'direct' io backend",
                  srcDevice ? "device to device" : "host to host");
    }
    return KVIO_STATUS_OK;
  }

 protected:
  kvio_status enqueue(Job& job, EventCompletion*, std::function<void()>* release) override {
    const bool backup = job.srcPlace.kind == KVIO_MEMORY_CUDA_DEVICE;
    // Kept until the job's event has completed: the segment tables are uploaded from it.
    auto plan = std::make_shared<StagedPlan>();
    buildStagedPlan(job.plan, backup, stagingBytes_, plan.get());
    *release = [plan] {};
    if (plan->chunks.empty()) return KVIO_STATUS_OK;
    KVIO_RETURN_IF_ERROR(allocateStaging());
    const std::vector<engine::Region> staging{
        engine::Region{reinterpret_cast<uint64_t>(staging_), stagingBytes_}};
    engine::IssueOptions options;
    options.direction = directionName(job.srcPlace.kind, job.dstPlace.kind);
    for (size_t k = 0; k < plan->chunks.size(); ++k) {
      const StagedChunk& chunk = plan->chunks[k];
      const StagedSegment* table = plan->segments.data() + chunk.firstSegment;
      const uint64_t tableBytes = chunk.segments * sizeof(StagedSegment);
      KVIO_CUDA_TRY(cudaMemcpyAsync(staging_, table, tableBytes, cudaMemcpyHostToDevice, stream_),
                    "uploading the segment table of chunk %zu of %zu (%llu bytes)", k + 1,
                    plan->chunks.size(), static_cast<unsigned long long>(tableBytes));
      const StagedLaunch launch = stagedChunkLaunch(chunk, staging_, backup);
      stagedChunkCopies(*plan, chunk, launch.data, backup, &copies_);
      if (backup) {
        KVIO_RETURN_IF_ERROR(launchChunk(launch, k, plan->chunks.size()));
        KVIO_RETURN_IF_ERROR(
            engine_.issuer.issue(engine_.ops, copies_, staging, job.dstPool->regions, options));
      } else {
        KVIO_RETURN_IF_ERROR(
            engine_.issuer.issue(engine_.ops, copies_, job.srcPool->regions, staging, options));
        KVIO_RETURN_IF_ERROR(launchChunk(launch, k, plan->chunks.size()));
      }
    }
    return KVIO_STATUS_OK;
  }

 private:
  kvio_status launchChunk(const StagedLaunch& launch, size_t chunk, size_t chunks) {
    const int64_t wanted = static_cast<int64_t>(launch.count);
    const int32_t blocks = static_cast<int32_t>(wanted < ctas_ ? wanted : ctas_);
    const int32_t threads = warps_ * 32;
    KVIO_CUDA_TRY(launchStagedKernel(launch, blocks, threads, stream_),
                  "launching the staged %s kernel for chunk %zu of %zu: %d CTAs x %d threads, "
                  "%llu segments",
                  launch.gather != 0 ? "gather" : "scatter", chunk + 1, chunks, blocks, threads,
                  static_cast<unsigned long long>(launch.count));
    return KVIO_STATUS_OK;
  }

  // The staging buffer, at the first transfer (the caller, submit, selected the device).
  kvio_status allocateStaging() {
    if (staging_ != nullptr) return KVIO_STATUS_OK;
    void* buffer = nullptr;
    KVIO_CUDA_TRY(cudaMalloc(&buffer, stagingBytes_),
                  "allocating the 'staged' executor's %llu-byte device staging buffer on device "
                  "%d (KVIO_STAGED_BYTES sets its size)",
                  static_cast<unsigned long long>(stagingBytes_), device_);
    staging_ = static_cast<uint8_t*>(buffer);
    return KVIO_STATUS_OK;
  }

  uint64_t stagingBytes_ = kDefaultStagingBytes;
  uint8_t* staging_ = nullptr;
  int32_t ctas_ = kDefaultStagedCtas;
  int32_t warps_ = kDefaultStagedWarps;
  CudaEngine engine_;
  std::vector<kvio_copy2d> copies_;  // one chunk's host copies, reused
};

}  // namespace

kvio_status createStagedExecutor(const CudaExecutorConfig& config, std::unique_ptr<Executor>* out) {
  return createConfigured<StagedExecutor>(config, out);
}

}  // namespace cuda
}  // namespace kvio
