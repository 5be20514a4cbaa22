// The 'kernel' io backend: runs each transfer as one launch of the SM copy kernel
// (copy_kernel.cu), which evaluates both pools' affine layouts on the device. A small job with
// host indices (tables and indices within kInlineStagingBytes) passes them by value in the
// kernel parameter: one launch and the event record, nothing uploaded. Otherwise the layer
// tables (device-accessible addresses), the host index arrays and the kernel's status words are
// written into a pinned staging slot and uploaded with one cudaMemcpyAsync; nothing on the
// submit path synchronises. A slot is reused once the job that used it has retired
// (its event completed and its status read). Device-resident indices are passed to the kernel
// as they are, bounds-checked there, and the status words come back with one more async copy.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "../core/diagnostics.hpp"
#include "../core/launch_shape.hpp"
#include "../core/pool.hpp"
#include "copy_kernel.hpp"
#include "cuda_executor.hpp"
#include "kernel_launch.hpp"

namespace kvio {
namespace cuda {
namespace {

constexpr int32_t kDefaultCtaBudget = 4;
constexpr int32_t kDefaultWarpsPerCta = 16;

// Binds the layout of a pool to the device-accessible addresses of the `layers` layers from
// `start` only (each component's), as a layout of that many layers starting at 0: a per-layer
// load stages two table entries instead of the pool's whole table (2 x layers of a model),
// which leaves the kernel parameter room for more index pairs (InlineCopyLaunch).
void deviceLayout(const PoolImpl& pool, int64_t start, int64_t layers, std::vector<uint64_t>* table,
                  AffineLayout* out) {
  const std::vector<uint64_t>& full =
      pool.deviceLayerBase.empty() ? pool.layerBase : pool.deviceLayerBase;
  *out = pool.layout;
  table->resize(static_cast<size_t>(out->components * layers));
  for (int32_t c = 0; c < out->components; ++c) {
    for (int64_t j = 0; j < layers; ++j) {
      (*table)[static_cast<size_t>(layerTableIndex(layers, c, j))] =
          full[static_cast<size_t>(out->layerIndex(c, start + j))];
    }
  }
  out->numLayers = layers;
  out->layerBase = table->data();
}

class KernelExecutor final : public CudaExecutor {
 public:
  kvio_status configure(const CudaExecutorConfig& config) {
    KVIO_RETURN_IF_ERROR(init(config, "kernel"));
    return setLaunch(config.ctaBudget, config.warpsPerCta);
  }

  // The launch shape of later transfers (kvio_executor_set_launch, through kKernelOps).
  kvio_status setLaunch(int32_t ctaBudget, int32_t warpsPerCta) {
    const int32_t budget = ctaBudget <= 0 ? kDefaultCtaBudget : ctaBudget;
    const int32_t warps = warpsPerCta <= 0 ? kDefaultWarpsPerCta : warpsPerCta;
    char defaults[64];
    std::snprintf(defaults, sizeof defaults, "the defaults %d and %d", kDefaultCtaBudget,
                  kDefaultWarpsPerCta);
    KVIO_RETURN_IF_ERROR(checkLaunchShape(ctaBudget, warpsPerCta, defaults));
    std::lock_guard<std::mutex> lock(mutex_);
    ctaBudget_ = budget;
    warpsPerCta_ = warps;
    return KVIO_STATUS_OK;
  }

  ~KernelExecutor() override { drain(); }

  // The kernel evaluates both layouts itself: a LayoutJob instead of a plan.
  kvio_status prepare(const Transfer& t, Job* job, Prepared* out) const override {
    KVIO_RETURN_IF_ERROR(refuseCapture());
    const kvio_transfer_desc& desc = *t.desc;
    LayoutJob& l = job->layout;
    deviceLayout(*t.src, desc.src_layer_start, desc.num_layers, &l.srcTable, &l.src);
    deviceLayout(*t.dst, desc.dst_layer_start, desc.num_layers, &l.dstTable, &l.dst);
    l.srcIndices = desc.src_indices;
    l.dstIndices = desc.dst_indices;
    l.indicesOnDevice = t.deviceIndices;
    l.count = desc.num_indices;
    l.srcLayerStart = 0;  // the tables hold the transfer's layers only
    l.dstLayerStart = 0;
    l.numLayers = desc.num_layers;
    l.ctaBudget = t.ctaBudget;
    l.warpsPerCta = t.warpsPerCta;
    out->bytes = t.src->layout.transferBytes(desc.num_indices, desc.num_layers);
    out->launches = 1;
    return KVIO_STATUS_OK;
  }

  // Host arrays given as device indices would make the kernel fault: refuse anything that is
  // not memory of this device (or managed memory) at any allocation the arrays run through
  // (checkDeviceSpan: a count past the end of an array would have the kernel read beyond its
  // allocation), or memory of a context the caller created.
  kvio_status checkDeviceIndices(const int64_t* src, const int64_t* dst,
                                 int64_t count) const override {
    const int64_t* arrays[2] = {src, dst};
    // The kernel reads them as int64 words: a misaligned array would be a misaligned-address
    // fault, which ends the CUDA context of the whole process.
    for (int i = 0; i < 2; ++i) {
      if (reinterpret_cast<uintptr_t>(arrays[i]) % alignof(int64_t) != 0) {
        return fail(KVIO_STATUS_INVALID_ARGUMENT,
                    "%s at %p is not 8-byte aligned; device-resident indices are int64 arrays",
                    i == 0 ? "src_indices" : "dst_indices", static_cast<const void*>(arrays[i]));
      }
    }
    DeviceScope scope(device_);  // on the submitting thread, before submit's own scope
    KVIO_CUDA_TRY_SCOPE(scope, device_);
    const int64_t last = count > 0 ? count - 1 : 0;
    for (int i = 0; i < 2; ++i) {
      const char* name = i == 0 ? "src_indices" : "dst_indices";
      const uint64_t base = reinterpret_cast<uintptr_t>(arrays[i]);
      if (static_cast<uint64_t>(last) + 1 > (UINT64_MAX - base) / sizeof(int64_t)) {
        return fail(KVIO_STATUS_INVALID_ARGUMENT,
                    "%s at %p with num_indices %lld runs past the end of the address space", name,
                    static_cast<const void*>(arrays[i]), static_cast<long long>(count));
      }
      // Every allocation the array runs through, not only its two ends: a kernel that reads
      // unmapped memory ends the process's CUDA context.
      char what[96];
      std::snprintf(what, sizeof(what), "%s (%lld int64 entries at %p)", name,
                    static_cast<long long>(count), static_cast<const void*>(arrays[i]));
      KVIO_RETURN_IF_ERROR(checkDeviceSpan(device_, what, base,
                                           static_cast<uint64_t>(last + 1) * sizeof(int64_t),
                                           "pass host index arrays to kvio_submit instead",
                                           "num_indices runs past the end of the array"));
    }
    return KVIO_STATUS_OK;
  }

 protected:
  kvio_status enqueue(Job& job, EventCompletion* completion,
                      std::function<void()>* release) override {
    const LayoutJob& l = job.layout;
    const StagingLayout layout = stagingLayout(l);
    if (fitsInline(l, layout)) {
      // A small job with host indices: its tables and indices go in the kernel parameter (no
      // slot, no upload); the host checked the indices, so there is no status to read back.
      InlineCopyLaunch params;
      packInlineLaunch(l, layout, &params);
      KVIO_RETURN_IF_ERROR(checkStagedIndices(l, layout, params.staging));
      KVIO_RETURN_IF_ERROR(
          launchJob(l, &params.launch, "inline", [&](int32_t blocks, int32_t threads) {
            return launchInlineCopyKernel(params, blocks, threads, stream_);
          }));
      countKernelLaunch(KernelTables::kInParameter);
      return KVIO_STATUS_OK;
    }
    StagingSlot* slot = nullptr;
    KVIO_RETURN_IF_ERROR(acquireSlot(layout.total, true, &slot, release));
    writeStaging(l, layout, slot->host);
    KVIO_RETURN_IF_ERROR(checkStagedIndices(l, layout, slot->host));
    KVIO_CUDA_TRY(
        cudaMemcpyAsync(slot->device, slot->host, layout.total, cudaMemcpyHostToDevice, stream_),
        "uploading %llu bytes of layer tables and indices (%lld pairs)",
        static_cast<unsigned long long>(layout.total), static_cast<long long>(l.count));
    CopyLaunch launch = makeLaunch(l, layout, slot->device);
    KVIO_RETURN_IF_ERROR(launchJob(l, &launch, "uploaded", [&](int32_t blocks, int32_t threads) {
      return launchCopyKernel(launch, blocks, threads, stream_);
    }));
    countKernelLaunch(KernelTables::kUploaded);
    if (l.indicesOnDevice) {
      auto* status = reinterpret_cast<unsigned long long*>(slot->host + layout.statusOffset);
      KVIO_CUDA_TRY(cudaMemcpyAsync(status, slot->device + layout.statusOffset, 16,
                                    cudaMemcpyDeviceToHost, stream_),
                    "downloading the kernel's index check (16 bytes)");
      completion->hostStatus = status;
      completion->srcTokens = l.src.tokens;
      completion->dstTokens = l.dst.tokens;
    }
    return KVIO_STATUS_OK;
  }

 private:
  // OUT_OF_RANGE, before anything is launched, when a staged host index lies outside its pool
  // (the caller rewrote its arrays during the submit: see firstStagedPairOutside).
  static kvio_status checkStagedIndices(const LayoutJob& l, const StagingLayout& layout,
                                        const uint8_t* staged) {
    const int64_t bad = firstStagedPairOutside(l, layout, staged);
    if (bad < 0) return KVIO_STATUS_OK;
    return fail(KVIO_STATUS_OUT_OF_RANGE,
                "index pair %lld is outside its pools as staged for the kernel, though every index "
                "was in range when checked: the index arrays changed during the submit (they must "
                "not change until it returns); nothing was launched",
                static_cast<long long>(bad));
  }

  // Sets the launch's tile depth for the job's launch shape (or the executor's) and launches
  // it with run(blocks, threads); `tables` says where its tables are, for the error message.
  template <class Run>
  kvio_status launchJob(const LayoutJob& l, CopyLaunch* launch, const char* tables, Run run) {
    const int32_t threads = (l.warpsPerCta > 0 ? l.warpsPerCta : warpsPerCta_) * 32;
    launch->tileChunks = tileChunksFor(threads);
    const int32_t budget = l.ctaBudget > 0 ? l.ctaBudget : ctaBudget_;
    const int32_t blocks =
        launchBlocks(launchItems(*launch), launchLanes(*launch), threads, budget);
    KVIO_CUDA_TRY_RESULT(
        run(blocks, threads), "kernel launch",
        "launching the copy kernel (%s tables): %d CTAs x %d threads, %d-byte words (0: "
        "per row), %lld pairs x %lld layers",
        tables, blocks, threads, launch->wordBytes, static_cast<long long>(l.count),
        static_cast<long long>(l.numLayers));
    return KVIO_STATUS_OK;
  }

  int32_t ctaBudget_ = kDefaultCtaBudget;
  int32_t warpsPerCta_ = kDefaultWarpsPerCta;
};

}  // namespace

kvio_status createKernelExecutor(const CudaExecutorConfig& config, std::unique_ptr<Executor>* out) {
  return createConfigured<KernelExecutor>(config, out);
}

kvio_status setKernelLaunch(Executor& executor, int32_t ctaBudget, int32_t warpsPerCta) {
  auto* kernel = dynamic_cast<KernelExecutor*>(&executor);
  if (kernel == nullptr) {
    return fail(KVIO_STATUS_INTERNAL, "a 'kernel' io backend entry holds another executor");
  }
  return kernel->setLaunch(ctaBudget, warpsPerCta);
}

}  // namespace cuda
}  // namespace kvio
