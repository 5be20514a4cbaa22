// The 'staged' io backend: a host<->device transfer goes through a device staging buffer, chunk
// by chunk (staged_routine.cuh: the chunks, segment tables and host runs built from the
// planner's plan, cut in prepareFromPlan once the default prepare or 'auto' has made the plan,
// in plan storage the executor reuses across transfers). The job's segment tables are written
// into a pinned staging slot (kept busy until the job's event has completed, as the kernel
// executor keeps its index uploads); tables over kMaxPinnedTableBytes are uploaded from the plan
// instead, a pageable copy for which the runtime waits for the stream's earlier work (the one
// wait on staged's submit path, for transfers of over 131072 separate device rows); that plan
// is then kept until the job retires, as the copy may read it after cudaMemcpyAsync returns. Per
// chunk, on the executor's one stream: its segment table is uploaded to the head of the staging
// buffer; a backup gathers the device rows into the staging buffer with the gather/scatter
// kernel (staged_kernel.cu), then copies each contiguous host run from it to the host on the
// copy engine (the shared issuer, as 'direct' issues: batched where the driver can); a load
// copies the host runs in, then scatters. Reuse of the staging buffer by the next chunk or job
// is ordered by the stream alone.
// The staging buffer (KVIO_STAGED_BYTES, default 64 MiB, at least 4 KiB) is allocated at the
// executor's first transfer and freed when it closes; it bounds the device memory staged uses.
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
// The largest segment table (all chunks of one transfer) uploaded from a pinned slot: 131072
// segments, a transfer of that many separate device rows.
constexpr uint64_t kMaxPinnedTableBytes = 4ull << 20;
// Staged plans kept for reuse (the chunks of the transfers being prepared at once), and the
// storage one may keep (a plan of a larger transfer is freed after use).
constexpr size_t kKeptPlans = 4;
constexpr uint64_t kKeptPlanBytes = 8ull << 20;

// A transfer's staged plan, from prepare to enqueue (Job::work).
struct StagedWork final : BackendWork {
  StagedPlan plan;
};

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
    KVIO_RETURN_IF_ERROR(setLaunch(config.ctaBudget, config.warpsPerCta));
    KVIO_RETURN_IF_ERROR(stagingBytesFromEnvironment(&stagingBytes_));
    KVIO_RETURN_IF_ERROR(init(config, "staged"));
    return setUpCudaEngine(stream_, device_, &engine_);
  }

  // The gather/scatter launch shape of later transfers (kvio_executor_create_cuda, and
  // kvio_executor_set_launch through kStagedOps); <= 0: the defaults.
  kvio_status setLaunch(int32_t ctaBudget, int32_t warpsPerCta) {
    char defaults[64];
    std::snprintf(defaults, sizeof defaults, "the defaults %d and %d", kDefaultStagedCtas,
                  kDefaultStagedWarps);
    KVIO_RETURN_IF_ERROR(checkLaunchShape(ctaBudget, warpsPerCta, defaults));
    std::lock_guard<std::mutex> lock(mutex_);  // enqueue reads the shape under it
    ctas_ = ctaBudget > 0 ? ctaBudget : kDefaultStagedCtas;
    warps_ = warpsPerCta > 0 ? warpsPerCta : kDefaultStagedWarps;
    return KVIO_STATUS_OK;
  }

  ~StagedExecutor() override {
    drain();
    if (staging_ != nullptr) {
      DeviceScope scope(device_);
      if (cudaFree(staging_) != cudaSuccess) cudaGetLastError();  // as in CudaExecutor::freeSlot
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
                  "memory only; this transfer is %s: use the %s",
                  srcDevice ? "device to device" : "host to host",
                  srcDevice ? "'kernel' or 'direct' io backend" : "'kernel' io backend");
    }
    return KVIO_STATUS_OK;
  }

  // The plan (made by the default prepare, or by 'auto' before it chose staged), cut into chunks
  // (Job::work, from storage reused across transfers): the launches are its chunks and the
  // copies its host runs (kvio_transfer_info). The plan's storage is given back here.
  kvio_status prepareFromPlan(const Transfer& t, Job* job, Prepared* out) const override {
    std::unique_ptr<StagedWork> work = takeWork();
    const bool backup = t.src->memoryKind == KVIO_MEMORY_CUDA_DEVICE;
    buildStagedPlan(job->plan, backup, stagingBytes_, &work->plan);
    returnPlanStorage(std::move(job->plan));     // not needed past here
    std::vector<kvio_copy2d>().swap(job->plan);  // released even when the storage was full
    out->copies = static_cast<int64_t>(work->plan.runs.size());
    out->launches = static_cast<int64_t>(work->plan.chunks.size());
    job->work = std::move(work);
    return KVIO_STATUS_OK;
  }

 protected:
  kvio_status enqueue(Job& job, EventCompletion*, std::function<void()>* release) override {
    std::unique_ptr<BackendWork> work = std::move(job.work);
    auto* staged = dynamic_cast<StagedWork*>(work.get());
    if (staged == nullptr) {
      return fail(KVIO_STATUS_INTERNAL, "a 'staged' job reached its executor unprepared");
    }
    work.release();
    if (stagedTableBytes(staged->plan) > kMaxPinnedTableBytes) {
      // Its tables go from the plan, pageable memory: the runtime may read it after
      // cudaMemcpyAsync returns (the API promises nothing else for asynchronous copies, and
      // with HMM or ATS the copy engine reads it in place), so the plan lives until the job
      // retires, or until a failure has waited for the stream (submit keeps *release until
      // then, also when enqueuePlan throws), and is then freed instead of kept for reuse.
      // enqueuePlan takes no slot for such a plan, so *release is this one's alone.
      std::shared_ptr<StagedWork> kept(staged);
      *release = [kept] {};
      return enqueuePlan(job, kept->plan, release);
    }
    std::unique_ptr<StagedWork> owned(staged);  // its tables go from a pinned slot
    const kvio_status status = enqueuePlan(job, owned->plan, release);
    recycleStagedPlan(&owned->plan, kKeptPlanBytes);
    plans_.give(owned.release());
    return status;
  }

 private:
  std::unique_ptr<StagedWork> takeWork() const {
    StagedWork* kept = nullptr;
    if (plans_.take(&kept)) return std::unique_ptr<StagedWork>(kept);
    return std::make_unique<StagedWork>();
  }

  // Per chunk: its segment table to the head of the staging buffer, then the gather and the
  // host copies (backup) or the host copies and the scatter (load). Tables up to
  // kMaxPinnedTableBytes go from the job's pinned slot, which holds all the chunks' tables and
  // stays busy until the job's event has completed; larger ones (millions of tiny rows) go from
  // the plan itself, pageable memory that enqueue keeps until the job retires, so that the
  // pinned memory an executor keeps stays bounded (8 slots of at most that size).
  kvio_status enqueuePlan(Job& job, const StagedPlan& plan, std::function<void()>* release) {
    if (plan.chunks.empty()) return KVIO_STATUS_OK;
    const bool backup = job.srcPlace.kind == KVIO_MEMORY_CUDA_DEVICE;
    KVIO_RETURN_IF_ERROR(allocateStaging());
    const uint8_t* tables = reinterpret_cast<const uint8_t*>(plan.segments.data());
    if (stagedTableBytes(plan) <= kMaxPinnedTableBytes) {
      StagingSlot* slot = nullptr;
      KVIO_RETURN_IF_ERROR(acquireSlot(stagedTableBytes(plan), false, &slot, release));
      std::memcpy(slot->host, tables, stagedTableBytes(plan));
      tables = slot->host;
    }
    const std::vector<engine::Region> staging{
        engine::Region{reinterpret_cast<uint64_t>(staging_), stagingBytes_}};
    engine::IssueOptions options;
    options.direction = directionName(job.srcPlace.kind, job.dstPlace.kind);
    for (size_t k = 0; k < plan.chunks.size(); ++k) {
      const StagedChunk& chunk = plan.chunks[k];
      const uint64_t tableBytes = chunk.segments * sizeof(StagedSegment);
      KVIO_CUDA_TRY(cudaMemcpyAsync(staging_, tables + stagedTableOffset(chunk), tableBytes,
                                    cudaMemcpyHostToDevice, stream_),
                    "uploading the segment table of chunk %zu of %zu (%llu bytes)", k + 1,
                    plan.chunks.size(), static_cast<unsigned long long>(tableBytes));
      const StagedLaunch launch = stagedChunkLaunch(chunk, staging_, backup);
      stagedChunkCopies(plan, chunk, launch.data, backup, &copies_);
      if (backup) {
        KVIO_RETURN_IF_ERROR(launchChunk(launch, k, plan.chunks.size()));
        KVIO_RETURN_IF_ERROR(engine_.issuer.issue(engine_.ops, copies_, staging,
                                                  job.dstPool->copyRegions(), options));
      } else {
        KVIO_RETURN_IF_ERROR(engine_.issuer.issue(engine_.ops, copies_, job.srcPool->copyRegions(),
                                                  staging, options));
        KVIO_RETURN_IF_ERROR(launchChunk(launch, k, plan.chunks.size()));
      }
    }
    return KVIO_STATUS_OK;
  }

  kvio_status launchChunk(const StagedLaunch& launch, size_t chunk, size_t chunks) {
    const int64_t wanted = static_cast<int64_t>(launch.count);
    const int32_t blocks = static_cast<int32_t>(wanted < ctas_ ? wanted : ctas_);
    const int32_t threads = warps_ * 32;
    KVIO_CUDA_TRY_RESULT(
        launchStagedKernel(launch, blocks, threads, stream_), "kernel launch",
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
  mutable RecyclingPool<StagedWork*> plans_{kKeptPlans, [](StagedWork* w) { delete w; }};
};

}  // namespace

kvio_status createStagedExecutor(const CudaExecutorConfig& config, std::unique_ptr<Executor>* out) {
  return createConfigured<StagedExecutor>(config, out);
}

kvio_status setStagedLaunch(Executor& executor, int32_t ctaBudget, int32_t warpsPerCta) {
  auto* staged = dynamic_cast<StagedExecutor*>(&executor);
  if (staged == nullptr) {
    return fail(KVIO_STATUS_INTERNAL, "a 'staged' io backend entry holds another executor");
  }
  return staged->setLaunch(ctaBudget, warpsPerCta);
}

}  // namespace cuda
}  // namespace kvio
