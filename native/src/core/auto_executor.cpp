// The 'auto' io backend's executor (auto_executor.hpp).
#include "auto_executor.hpp"

#include "backends.hpp"
#include "error.hpp"
#include "planner.hpp"
#include "pool.hpp"

namespace kvio {
namespace {

AutoDirection directionOf(const PoolImpl& src, const PoolImpl& dst) {
  const bool srcDevice = isDeviceMemory(src.memoryKind);
  const bool dstDevice = isDeviceMemory(dst.memoryKind);
  if (srcDevice) return dstDevice ? AutoDirection::kDeviceToDevice : AutoDirection::kDeviceToHost;
  return dstDevice ? AutoDirection::kHostToDevice : AutoDirection::kHostToHost;
}

}  // namespace

// Every access sequentially consistent (no fences, which ThreadSanitizer does not model): the
// reads are plain loads on x86 and ARM's acquire loads; the stores are the rare writer's.
void PublishedThresholds::store(const AutoThresholds& thresholds) {
  const uint64_t sequence = sequence_.load();
  sequence_.store(sequence + 1);  // odd: being written
  directRowBytes_.store(thresholds.directRowBytes);
  directRowBytesOverlap_.store(thresholds.directRowBytesOverlap);
  directCopyBytesOverlap_.store(thresholds.directCopyBytesOverlap);
  stagedMinBytes_.store(thresholds.stagedMinBytes);
  sequence_.store(sequence + 2);
}

AutoThresholds PublishedThresholds::load() const {
  AutoThresholds out;
  for (;;) {
    const uint64_t before = sequence_.load();
    out.directRowBytes = directRowBytes_.load();
    out.directRowBytesOverlap = directRowBytesOverlap_.load();
    out.directCopyBytesOverlap = directCopyBytesOverlap_.load();
    out.stagedMinBytes = stagedMinBytes_.load();
    if ((before & 1) == 0 && sequence_.load() == before) return out;
  }
}

AutoExecutor::AutoExecutor(std::array<Candidate, kAutoPicks> candidates,
                           AutoCalibration calibration)
    : candidates_(std::move(candidates)),
      calibration_(std::move(calibration)),
      thresholds_(calibration_) {}

AutoExecutor::~AutoExecutor() {
  drain();
  for (size_t i = candidates_.size(); i-- > 0;) candidates_[i].executor.reset();
}

int32_t AutoExecutor::threads() const {
  return onGpu() ? candidate(AutoPick::kKernel)->threads() : cpu()->threads();
}

const char* AutoExecutor::runs() const {
  if (onGpu()) return "kernel, direct or staged on a GPU";
  return candidate(AutoPick::kAscend) != nullptr ? "cpu, or kernel_ascend for NPU memory"
                                                 : "cpu, no GPU or NPU";
}

void AutoExecutor::orderAfterTheOther(const Job& job) {
  if (onGpu()) return;
  const int32_t previous = lastBackend_;
  lastBackend_ = job.ioBackend;
  if (previous < 0 || previous == job.ioBackend) return;
  for (Candidate& c : candidates_) {
    if (c.executor != nullptr && c.ioBackend == previous) c.executor->drain();
  }
}

bool AutoExecutor::runInline(Job& job) {
  if (job.ioBackend != KVIO_BACKEND_CPU || cpu() == nullptr) return false;
  {
    std::lock_guard<std::mutex> lock(order_);
    orderAfterTheOther(job);
  }
  return cpu()->runInline(job);
}

void AutoExecutor::submit(std::shared_ptr<Job> job) {
  std::unique_lock<std::mutex> lock(order_, std::defer_lock);
  if (!onGpu()) lock.lock();  // on a GPU the candidates share one stream: nothing to order
  orderAfterTheOther(*job);
  for (Candidate& c : candidates_) {
    if (c.executor != nullptr && c.ioBackend == job->ioBackend) {
      // Without a GPU this executor says it marks starts itself (cpu does); a candidate that
      // does not (kernel_ascend: issued now) has its start marked here, as the core would.
      const std::shared_ptr<TransferState> state =
          !onGpu() && !c.executor->marksStart() ? job->state : nullptr;
      c.executor->submit(std::move(job));
      if (lock.owns_lock()) lock.unlock();  // queued: later jobs are ordered after it
      if (state != nullptr) state->markStarted();
      // The others retire finished jobs only in their own submit or drain: one left idle would
      // keep its last jobs' plans, events and staging until the executor closes. The job is
      // handed over now, so nothing may leave this submit as an exception (the core would take
      // the transfer for not queued while its copies run): a retirement that fails (out of
      // memory for a finished job's message) is left to that candidate's next submit or drain.
      for (Candidate& other : candidates_) {
        if (other.executor == nullptr || &other == &c) continue;
        try {
          other.executor->retireFinished();
        } catch (...) {
        }
      }
      return;
    }
  }
  job->state->complete(KVIO_STATUS_INTERNAL, std::string("auto: the chosen io backend '") +
                                                 kvio_name(KVIO_NAME_BACKEND, job->ioBackend) +
                                                 "' has no executor here");
}

void AutoExecutor::drain() {
  for (Candidate& c : candidates_) {
    if (c.executor != nullptr) c.executor->drain();
  }
}

kvio_status AutoExecutor::prepare(const Transfer& transfer, Job* job, Prepared* out) const {
  AutoPick pick = chooseWithoutGpu(transfer.src->memoryKind, transfer.dst->memoryKind,
                                   candidate(AutoPick::kAscend) != nullptr);
  bool prepared = false;
  if (onGpu()) {
    // Device-resident indices: only the kernel reads them. Memory the direct candidate refuses
    // (host to host: CUDA's copies between host buffers are synchronous with the host, outside
    // the stream) goes to the kernel too, which moves pinned host memory on the stream; staged
    // moves host <-> device only.
    pick = AutoPick::kKernel;
    if (!transfer.deviceIndices &&
        candidate(AutoPick::kDirect)
                ->acceptMemory({transfer.src->memoryKind, transfer.src->device},
                               {transfer.dst->memoryKind, transfer.dst->device}) ==
            KVIO_STATUS_OK) {
      const AutoThresholds thresholds = thresholds_.load();
      const bool stagedAvailable = candidate(AutoPick::kStaged) != nullptr;
      AutoShape shape;
      shape.direction = directionOf(*transfer.src, *transfer.dst);
      shape.overlapsCompute = transfer.overlapsCompute;
      if (planRowBound(*transfer.request, *transfer.runs) <
          directCrossover(transfer.overlapsCompute, thresholds)) {
        // No row of any plan reaches the crossover (short index runs: scattered tokens or
        // pages): not direct, decided without planning, which the kernel does not need.
        shape.bytes = transfer.src->layout.transferBytes(transfer.request->count,
                                                         transfer.request->numLayers);
        pick = chooseBelowCrossover(shape, thresholds, stagedAvailable);
      } else {
        // The plan the copy engine would run: its rows decide. It is made once: direct runs it
        // as it is, staged cuts it into chunks (its prepareFromPlan, not a second plan), and
        // only the kernel, which evaluates the layouts itself, drops it.
        KVIO_RETURN_IF_ERROR(candidate(AutoPick::kDirect)->prepare(transfer, job, out));
        const AutoShape plan = summarisePlan(job->plan);
        shape.bytes = plan.bytes;
        shape.rows = plan.rows;
        shape.copies = plan.copies;
        shape.engineCopies = plan.engineCopies;
        pick = chooseAuto(shape, thresholds, stagedAvailable);
        prepared = pick != AutoPick::kKernel;
        if (pick == AutoPick::kStaged) {
          KVIO_RETURN_IF_ERROR(candidate(pick)->prepareFromPlan(transfer, job, out));
        } else if (!prepared) {
          job->plan.clear();
          *out = Prepared();
        }
      }
    }
  }
  if (!prepared) {
    KVIO_RETURN_IF_ERROR(candidate(pick)->prepare(transfer, job, out));
  }
  job->ioBackend = candidates_[static_cast<size_t>(pick)].ioBackend;
  out->ioBackend = job->ioBackend;
  return KVIO_STATUS_OK;
}

bool AutoExecutor::marksStart() const {
  return !onGpu() && cpu()->marksStart();
}

kvio_status AutoExecutor::acceptDeviceIndices() const {
  if (!onGpu()) {
    return fail(KVIO_STATUS_UNSUPPORTED,
                "device-resident indices need a GPU: this 'auto' executor runs %s", runs());
  }
  return KVIO_STATUS_OK;
}

kvio_status AutoExecutor::checkDeviceIndices(const int64_t* src, const int64_t* dst,
                                             int64_t count) const {
  KVIO_RETURN_IF_ERROR(acceptDeviceIndices());
  return candidate(AutoPick::kKernel)->checkDeviceIndices(src, dst, count);
}

kvio_status AutoExecutor::acceptMemory(MemoryPlace src, MemoryPlace dst) const {
  kvio_status first = KVIO_STATUS_OK;
  std::string reason;
  if (!onGpu()) {
    // The memory kinds decide the candidate (prepare's chooseWithoutGpu): its answer, its reason.
    const AutoPick pick =
        chooseWithoutGpu(src.kind, dst.kind, candidate(AutoPick::kAscend) != nullptr);
    first = candidate(pick)->acceptMemory(src, dst);
    if (first == KVIO_STATUS_OK) return KVIO_STATUS_OK;
    reason = lastError();
  } else {
    for (const Candidate& c : candidates_) {  // OK when any candidate moves these kinds
      if (c.executor == nullptr) continue;
      const kvio_status status = c.executor->acceptMemory(src, dst);
      if (status == KVIO_STATUS_OK) return KVIO_STATUS_OK;
      if (first == KVIO_STATUS_OK) {
        first = status;
        reason = lastError();
      }
    }
  }
  return fail(first, "the 'auto' io backend (here: %s) cannot move this: %s", runs(),
              reason.c_str());
}

bool AutoExecutor::nativeHandle(NativeHandle kind, uint64_t* out) const {
  for (const Candidate& c : candidates_) {
    if (c.executor != nullptr && c.executor->nativeHandle(kind, out)) return true;
  }
  return false;
}

kvio_status AutoExecutor::setKernelLaunch(int32_t ctaBudget, int32_t warpsPerCta) {
  const Candidate& kernel = candidates_[static_cast<size_t>(AutoPick::kKernel)];
  const BackendOps* ops = backendOps(kernel.ioBackend);
  if (kernel.executor == nullptr || ops == nullptr || ops->setLaunch == nullptr) {
    return fail(KVIO_STATUS_UNSUPPORTED,
                "this 'auto' executor runs %s, which launch no copy kernel: no launch shape",
                runs());
  }
  return ops->setLaunch(*kernel.executor, ctaBudget, warpsPerCta);
}

kvio_status asAutoCandidate(kvio_status status) {
  return status == KVIO_STATUS_OK
             ? status
             : fail(status, "creating an 'auto' executor: %s", lastError().c_str());
}

AutoCalibration AutoExecutor::calibration() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calibration_;
}

void AutoExecutor::setCalibration(AutoCalibration calibration) {
  std::lock_guard<std::mutex> lock(mutex_);
  calibration_ = std::move(calibration);
  thresholds_.store(calibration_);
}

}  // namespace kvio
