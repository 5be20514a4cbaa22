// The transfer entry points of the C ABI: submit (kvio_submit_with and its forms: read the
// options, look up the handles, validate, plan or describe the layouts, hand the job to the
// executor) and its checks alone (kvio_check_transfer*), then wait, poll, describe and close the
// transfer; and kvio_plan, which returns the plan a transfer would run.
#include <algorithm>
#include <atomic>
#include <new>

#include "entry.hpp"
#include "launch_shape.hpp"
#include "planner.hpp"
#include "thread_object.hpp"
#include "transfer_scratch.hpp"
#include "validate.hpp"

namespace kvio {
namespace {

// The index runs of the transfer being submitted on this thread, reused: no allocation per
// transfer; bounded when the submit returns (nothing refers to them then: the plan was made from
// them). Reached through ThreadScratch, which stays safe while the thread exits.
using IndexRuns = std::vector<IndexRun>;
using RunsScratch = ThreadScratch<IndexRuns, IndexRuns>;

MemoryPlace placeOf(const PoolImpl& pool) {
  return {pool.memoryKind, pool.device};
}

// kvio_transfer_timing: whether transfers submitted now record their times.
std::atomic<bool> transferTiming{false};

// A transfer's options, whichever entry point brought them (kvio_submit_options read and
// checked; the other submit entry points set one of them).
struct SubmitOptions {
  uint32_t flags = 0;  // KVIO_SUBMIT_*
  int32_t ctaBudget = 0;
  int32_t warpsPerCta = 0;
  bool deviceIndices = false;  // KVIO_INDICES_DEVICE
};

static_assert(sizeof(kvio_submit_options) == KVIO_SUBMIT_OPTIONS_MIN_SIZE,
              "the first version of kvio_submit_options is 24 bytes; later fields go past them");

kvio_status checkFlags(uint32_t flags, const char* name) {
  if ((flags & ~(KVIO_SUBMIT_OVERLAPS_COMPUTE | KVIO_SUBMIT_QUEUE_ONLY)) != 0) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "%s 0x%x has unknown bits; valid: KVIO_SUBMIT_OVERLAPS_COMPUTE (0x1), "
                "KVIO_SUBMIT_QUEUE_ONLY (0x2), or both",
                name, flags);
  }
  return KVIO_STATUS_OK;
}

// kvio_submit_options as the caller compiled it (struct_size bytes) into *out; NULL: defaults.
// The launch shape's limits are checked with the rest of the submit (checkLaunchShape).
kvio_status readOptions(const kvio_submit_options* options, SubmitOptions* out) {
  *out = SubmitOptions();
  if (options == nullptr) return KVIO_STATUS_OK;
  const uint32_t size = options->struct_size;
  if (size < KVIO_SUBMIT_OPTIONS_MIN_SIZE || size > KVIO_SUBMIT_OPTIONS_MAX_SIZE) {
    return fail(
        KVIO_STATUS_INVALID_ARGUMENT,
        "options->struct_size %u is not valid: %u to %u (sizeof(kvio_submit_options) as the "
        "caller compiled it; this library's is %u)",
        size, KVIO_SUBMIT_OPTIONS_MIN_SIZE, KVIO_SUBMIT_OPTIONS_MAX_SIZE,
        static_cast<unsigned>(sizeof(kvio_submit_options)));
  }
  // Fields of a later version: only their 0 (what a caller that does not know them means) is
  // something this library does.
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(options);
  for (uint32_t i = static_cast<uint32_t>(sizeof(kvio_submit_options)); i < size; ++i) {
    if (bytes[i] != 0) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "options byte %u is 0x%02x: struct_size %u holds fields past the %u bytes this "
                  "library (kvio %s) knows, and they must be 0 here (an option it cannot honour)",
                  i, static_cast<unsigned>(bytes[i]), size,
                  static_cast<unsigned>(sizeof(kvio_submit_options)), KVIO_VERSION_STRING);
    }
  }
  KVIO_RETURN_IF_ERROR(checkFlags(options->flags, "options->flags"));
  if (options->indices_memory != KVIO_INDICES_HOST &&
      options->indices_memory != KVIO_INDICES_DEVICE) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "options->indices_memory %d is not valid: KVIO_INDICES_HOST (0) or "
                "KVIO_INDICES_DEVICE (1)",
                options->indices_memory);
  }
  if (options->reserved != 0) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "options->reserved is %d; it must be 0",
                options->reserved);
  }
  out->flags = options->flags;
  out->ctaBudget = options->cta_budget;
  out->warpsPerCta = options->warps_per_cta;
  out->deviceIndices = options->indices_memory == KVIO_INDICES_DEVICE;
  return KVIO_STATUS_OK;
}

// What a submit checks before it reads the descriptor's indices: the flags, the handles and
// whether the executor moves between the pools' kinds of memory; on success the objects.
kvio_status resolve(uint64_t executorHandle, const kvio_transfer_desc& desc, uint32_t flags,
                    std::shared_ptr<ExecutorImpl>* executor, std::shared_ptr<PoolImpl>* src,
                    std::shared_ptr<PoolImpl>* dst) {
  KVIO_RETURN_IF_ERROR(checkFlags(flags, "flags"));
  KVIO_RETURN_IF_ERROR(executors().get(executorHandle, "executor", executor));
  KVIO_RETURN_IF_ERROR(
      pools().getPair(desc.src_pool, "src_pool", desc.dst_pool, "dst_pool", src, dst));
  return (*executor)->executor->acceptMemory(placeOf(**src), placeOf(**dst));
}

// One submission on an executor, counted for kvio_executor_close (ExecutorImpl::submitting):
// close marks the executor closing, then waits until no submission is under way, then drains.
// Both sides change their atomic before reading the other's (seq_cst), so either close sees this
// submission and waits for it, or this submission sees close and queues nothing.
class SubmitScope {
 public:
  explicit SubmitScope(ExecutorImpl& executor) : executor_(executor) {
    executor_.submitting.fetch_add(1);
  }
  ~SubmitScope() { executor_.submitting.fetch_sub(1); }
  SubmitScope(const SubmitScope&) = delete;
  SubmitScope& operator=(const SubmitScope&) = delete;
  // CLOSED when close began: the executor is drained, or about to be, without this transfer.
  kvio_status check(uint64_t handle) const {
    if (!executor_.closing.load()) return KVIO_STATUS_OK;
    return fail(KVIO_STATUS_CLOSED,
                "executor 0x%llx was closed while this transfer was being submitted; nothing was "
                "queued or moved",
                static_cast<unsigned long long>(handle));
  }

 private:
  ExecutorImpl& executor_;
};

// Whether the executor takes index arrays in device memory (before any array is looked at).
kvio_status acceptDeviceIndices(const ExecutorImpl& executor) {
  if (!backendOps(executor.backend)->deviceIndices) {
    return fail(KVIO_STATUS_UNSUPPORTED,
                "device-resident indices need the %s io backend (this executor is '%s')",
                ioBackendsWhere([](const BackendOps& ops) { return ops.deviceIndices; }).c_str(),
                kvio_name(KVIO_NAME_BACKEND, executor.backend));
  }
  return executor.executor->acceptDeviceIndices();
}

// kvio_check_transfer(_with): submit's checks, nothing planned or moved; num_indices 0 is
// allowed. Device-resident index arrays are never read.
kvio_status checkTransfer(uint64_t executorHandle, const kvio_transfer_desc& desc,
                          const SubmitOptions& options) {
  KVIO_RETURN_IF_ERROR(
      checkLaunchShape(options.ctaBudget, options.warpsPerCta, "the executor's setting"));
  std::shared_ptr<ExecutorImpl> executor;
  std::shared_ptr<PoolImpl> src, dst;
  KVIO_RETURN_IF_ERROR(resolve(executorHandle, desc, options.flags, &executor, &src, &dst));
  if (options.deviceIndices) KVIO_RETURN_IF_ERROR(acceptDeviceIndices(*executor));
  if (desc.num_indices < 0) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "num_indices must be at least 0, got %lld (0 checks every argument but the index "
                "arrays)",
                static_cast<long long>(desc.num_indices));
  }
  if (desc.num_indices == 0) return validateTransferPools(*src, *dst, desc);
  if (options.deviceIndices) {
    KVIO_RETURN_IF_ERROR(validateDeviceTransfer(*src, *dst, desc));
    return executor->executor->checkDeviceIndices(desc.src_indices, desc.dst_indices,
                                                  desc.num_indices);
  }
  PlanRequest request;
  const RunsScratch runs;
  const BoundOnExit<IndexRun> bound(&*runs, kRetainedIndexRunBytes);
  return validateTransfer(*src, *dst, desc, &request, &*runs);
}

// Every submit entry point ends here (kvio_submit_with's options; the others set one of them).
kvio_status submit(uint64_t executorHandle, const kvio_transfer_desc& desc,
                   const SubmitOptions& options, uint64_t* out) {
  const int64_t submitNs =
      transferTiming.load(std::memory_order_relaxed) ? TransferState::monotonicNs() : 0;
  KVIO_RETURN_IF_ERROR(checkOut(out, "transfer_out"));
  KVIO_RETURN_IF_ERROR(
      checkLaunchShape(options.ctaBudget, options.warpsPerCta, "the executor's setting"));
  std::shared_ptr<ExecutorImpl> executor;
  std::shared_ptr<PoolImpl> src, dst;
  KVIO_RETURN_IF_ERROR(resolve(executorHandle, desc, options.flags, &executor, &src, &dst));
  const SubmitScope submitting(*executor);
  KVIO_RETURN_IF_ERROR(submitting.check(executorHandle));
  Executor& ex = *executor->executor;
  auto job = std::make_shared<Job>();
  Transfer transfer;
  transfer.src = src.get();
  transfer.dst = dst.get();
  transfer.desc = &desc;
  transfer.deviceIndices = options.deviceIndices;
  transfer.ctaBudget = options.ctaBudget > 0 ? options.ctaBudget : 0;
  transfer.warpsPerCta = options.warpsPerCta > 0 ? options.warpsPerCta : 0;
  transfer.overlapsCompute = (options.flags & KVIO_SUBMIT_OVERLAPS_COMPUTE) != 0;
  PlanRequest request;
  const RunsScratch runsScratch;
  std::vector<IndexRun>& runs = *runsScratch;
  const BoundOnExit<IndexRun> bound(&runs, kRetainedIndexRunBytes);
  if (options.deviceIndices) {
    KVIO_RETURN_IF_ERROR(acceptDeviceIndices(*executor));
    KVIO_RETURN_IF_ERROR(validateDeviceTransfer(*src, *dst, desc));
    KVIO_RETURN_IF_ERROR(
        ex.checkDeviceIndices(desc.src_indices, desc.dst_indices, desc.num_indices));
  } else {
    KVIO_RETURN_IF_ERROR(validateTransfer(*src, *dst, desc, &request, &runs));
    transfer.request = &request;
    transfer.runs = &runs;
  }
  Prepared prepared;
  KVIO_RETURN_IF_ERROR(ex.prepare(transfer, job.get(), &prepared));
  job->srcPlace = placeOf(*src);
  job->dstPlace = placeOf(*dst);
  job->srcPool = src.get();
  job->dstPool = dst.get();
  job->queueOnly = (options.flags & KVIO_SUBMIT_QUEUE_ONLY) != 0;
  job->state = std::make_shared<TransferState>(prepared.bytes);
  TransferState::Shape shape;
  shape.ioBackend = executor->backend;
  shape.chosenBackend = prepared.ioBackend >= 0 ? prepared.ioBackend : executor->backend;
  shape.overlapsCompute = transfer.overlapsCompute;
  shape.srcLayout = src->spec.layout;
  shape.dstLayout = dst->spec.layout;
  shape.srcMemory = src->memoryKind;
  shape.dstMemory = dst->memoryKind;
  shape.components = src->components();
  shape.numIndices = desc.num_indices;
  shape.numLayers = desc.num_layers;
  shape.copies = prepared.copies;
  shape.launches = prepared.launches;
  shape.submitNs = submitNs;
  job->state->describe(shape);
  PoolUsage* const srcUsage = src->usage().get();
  PoolUsage* const dstUsage = dst != src ? dst->usage().get() : nullptr;
  job->state->holdPools(std::move(src), std::move(dst));  // before another thread sees the state
  // The registry keeps the state alive until the caller closes the handle it has not seen yet.
  // Registered before anything is queued or copied: when it cannot be (no transfer handle left),
  // the job is dropped with its state, which lets go of the pools, and no byte has moved.
  const uint64_t callersOut = *out;
  KVIO_RETURN_IF_ERROR(transfers().add(job->state, out));
  // Held here too: the executor takes the job, and the registry's reference goes with a close
  // of the handle (a caller that closes a handle its submit has not returned yet).
  const std::shared_ptr<TransferState> state = job->state;
  try {
    // A transfer done on this thread is not listed with its pools: nothing could wait for it
    // (its pools' memory is still held by the state until it is done, as for any transfer).
    // Inside the try: a throw there (a lock's system_error, auto draining another candidate)
    // must not leave a registered transfer that never completes.
    if (!job->queueOnly && ex.runInline(*job)) return KVIO_STATUS_OK;
    srcUsage->add(job->state);
    if (dstUsage != nullptr) dstUsage->add(job->state);
    ex.submit(std::move(job));
  } catch (...) {
    // Not handed to the executor: the registered state would never complete (and would keep
    // its pools' memory). Unregister and complete it, the steps that need no memory first (the
    // exception is usually bad_alloc, and this may run out again); the guard reports it.
    std::shared_ptr<TransferState> dropped;
    transfers().remove(*out, "transfer", &dropped);
    *out = callersOut;  // a failed submit leaves *transfer_out as it was
    try {
      state->complete(KVIO_STATUS_OUT_OF_MEMORY, "the transfer could not be queued");
    } catch (const std::bad_alloc&) {
      state->complete(KVIO_STATUS_OUT_OF_MEMORY);
    }
    throw;
  }
  if (!ex.marksStart()) state->markStarted();
  return KVIO_STATUS_OK;
}

// kvio_transfer_get_info: what the transfer is, and how far it got.
kvio_transfer_info infoOf(TransferState& state) {
  const TransferState::Shape& shape = state.shape();
  kvio_transfer_info info{};
  info.io_backend = shape.ioBackend;
  info.src_layout = shape.srcLayout;
  info.dst_layout = shape.dstLayout;
  info.src_memory = shape.srcMemory;
  info.dst_memory = shape.dstMemory;
  info.components = shape.components;
  info.num_indices = shape.numIndices;
  info.num_layers = shape.numLayers;
  info.bytes = state.bytes();
  info.copies = shape.copies;
  info.launches = shape.launches;
  info.submit_ns = shape.submitNs;
  kvio_status status = KVIO_STATUS_OK;
  int64_t endNs = 0;
  // Polls a device completion, as kvio_transfer_is_done. The start is read after it: a transfer
  // that started and ended between the two reads would show done without a start.
  info.done = state.outcome(&status, &endNs) ? 1 : 0;
  info.start_ns = state.startNs();
  info.end_ns = endNs;
  info.status = status;
  info.chosen_backend = shape.chosenBackend;
  info.overlaps_compute = shape.overlapsCompute ? 1 : 0;
  return info;
}

}  // namespace

size_t retainedIndexRunBytes() {
  const IndexRuns* runs = ThreadObject<IndexRuns, IndexRuns>::existing();
  return runs == nullptr ? 0 : runs->capacity() * sizeof(IndexRun);
}

}  // namespace kvio

using namespace kvio;

extern "C" {

kvio_status kvio_submit_with(uint64_t executor, const kvio_transfer_desc* desc,
                             const kvio_submit_options* options, uint64_t* transfer_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    SubmitOptions read;
    KVIO_RETURN_IF_ERROR(readOptions(options, &read));
    return submit(executor, *desc, read, transfer_out);
  });
}

kvio_status kvio_check_transfer_with(uint64_t executor, const kvio_transfer_desc* desc,
                                     const kvio_submit_options* options) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    SubmitOptions read;
    KVIO_RETURN_IF_ERROR(readOptions(options, &read));
    return checkTransfer(executor, *desc, read);
  });
}

kvio_status kvio_submit_launch(uint64_t executor, const kvio_transfer_desc* desc,
                               int32_t cta_budget, int32_t warps_per_cta, uint64_t* transfer_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    SubmitOptions options;
    options.ctaBudget = cta_budget;
    options.warpsPerCta = warps_per_cta;
    return submit(executor, *desc, options, transfer_out);
  });
}

kvio_status kvio_submit_device_indices(uint64_t executor, const kvio_transfer_desc* desc,
                                       uint64_t* transfer_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    SubmitOptions options;
    options.deviceIndices = true;
    return submit(executor, *desc, options, transfer_out);
  });
}

kvio_status kvio_submit(uint64_t executor, const kvio_transfer_desc* desc, uint64_t* transfer_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    return submit(executor, *desc, SubmitOptions(), transfer_out);
  });
}

kvio_status kvio_check_transfer(uint64_t executor, const kvio_transfer_desc* desc, uint32_t flags) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    SubmitOptions options;
    options.flags = flags;
    return checkTransfer(executor, *desc, options);
  });
}

kvio_status kvio_check_transfer_args(uint64_t executor, uint64_t src_pool, uint64_t dst_pool,
                                     const int64_t* src_indices, const int64_t* dst_indices,
                                     int64_t num_indices, int64_t src_layer_start,
                                     int64_t dst_layer_start, int64_t num_layers, uint32_t flags) {
  const kvio_transfer_desc desc{src_pool,    dst_pool,        src_indices,     dst_indices,
                                num_indices, src_layer_start, dst_layer_start, num_layers};
  return kvio_check_transfer(executor, &desc, flags);
}

kvio_status kvio_submit_flags(uint64_t executor, const kvio_transfer_desc* desc, uint32_t flags,
                              uint64_t* transfer_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    SubmitOptions options;
    options.flags = flags;
    return submit(executor, *desc, options, transfer_out);
  });
}

kvio_status kvio_submit_args_flags(uint64_t executor, uint64_t src_pool, uint64_t dst_pool,
                                   const int64_t* src_indices, const int64_t* dst_indices,
                                   int64_t num_indices, int64_t src_layer_start,
                                   int64_t dst_layer_start, int64_t num_layers, uint32_t flags,
                                   uint64_t* transfer_out) {
  const kvio_transfer_desc desc{src_pool,    dst_pool,        src_indices,     dst_indices,
                                num_indices, src_layer_start, dst_layer_start, num_layers};
  return kvio_submit_flags(executor, &desc, flags, transfer_out);
}

kvio_status kvio_submit_args(uint64_t executor, uint64_t src_pool, uint64_t dst_pool,
                             const int64_t* src_indices, const int64_t* dst_indices,
                             int64_t num_indices, int64_t src_layer_start, int64_t dst_layer_start,
                             int64_t num_layers, uint64_t* transfer_out) {
  return kvio_submit_args_flags(executor, src_pool, dst_pool, src_indices, dst_indices, num_indices,
                                src_layer_start, dst_layer_start, num_layers, 0, transfer_out);
}

kvio_status kvio_transfer_wait(uint64_t transfer, int64_t timeout_ns) {
  return withObject(transfers(), transfer, "transfer", [&](TransferState& state) -> kvio_status {
    if (!state.wait(timeout_ns)) {
      return fail(KVIO_STATUS_TIMEOUT, "transfer not done after %lld ns",
                  static_cast<long long>(timeout_ns));
    }
    const kvio_status status = state.status();
    if (status != KVIO_STATUS_OK) return fail(status, "%s", state.message().c_str());
    return KVIO_STATUS_OK;
  });
}

int32_t kvio_transfer_is_done(uint64_t transfer) {
  int32_t done = 0;
  const kvio_status status =
      withObject(transfers(), transfer, "transfer", [&](TransferState& state) {
        done = state.isDone() ? 1 : 0;
        return KVIO_STATUS_OK;
      });
  return status == KVIO_STATUS_OK ? done : -status;
}

kvio_status kvio_transfer_bytes(uint64_t transfer, uint64_t* bytes_out) {
  return withObject(transfers(), transfer, "transfer", bytes_out, "bytes_out",
                    [&](TransferState& state) {
                      *bytes_out = state.bytes();
                      return KVIO_STATUS_OK;
                    });
}

kvio_status kvio_transfer_get_info(uint64_t transfer, kvio_transfer_info* info_out) {
  return withObject(transfers(), transfer, "transfer", info_out, "info_out",
                    [&](TransferState& state) {
                      *info_out = infoOf(state);
                      return KVIO_STATUS_OK;
                    });
}

kvio_status kvio_transfer_timing(int32_t enabled) {
  return guarded([&]() -> kvio_status {
    transferTiming.store(enabled != 0, std::memory_order_relaxed);
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_transfer_close(uint64_t transfer) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<TransferState> state;
    return transfers().remove(transfer, "transfer", &state);
  });
}

kvio_status kvio_plan(const kvio_transfer_desc* desc, kvio_copy2d* copies_out, int64_t capacity,
                      int64_t* count_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    KVIO_RETURN_IF_ERROR(checkOut(count_out, "count_out"));
    if (capacity < 0) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "capacity must be >= 0 (the copies copies_out has room for; 0 to ask only for "
                  "the count), got %lld",
                  static_cast<long long>(capacity));
    }
    // Two pools: withObject (entry.hpp) takes one handle, so they are looked up here.
    std::shared_ptr<PoolImpl> src, dst;
    KVIO_RETURN_IF_ERROR(pools().get(desc->src_pool, "src_pool", &src));
    KVIO_RETURN_IF_ERROR(pools().get(desc->dst_pool, "dst_pool", &dst));
    PlanRequest request;
    std::vector<IndexRun> runs;
    KVIO_RETURN_IF_ERROR(validateTransfer(*src, *dst, *desc, &request, &runs));
    std::vector<kvio_copy2d> plan;
    planTransfer(request, runs, &plan);
    *count_out = static_cast<int64_t>(plan.size());
    if (copies_out != nullptr) {
      const size_t n = std::min<size_t>(plan.size(), static_cast<size_t>(capacity));
      std::copy(plan.begin(), plan.begin() + static_cast<std::ptrdiff_t>(n), copies_out);
    }
    return KVIO_STATUS_OK;
  });
}

}  // extern "C"
