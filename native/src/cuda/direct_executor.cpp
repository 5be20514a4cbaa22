// The 'direct' io backend: the planner's copies on the CUDA copy engine, through the shared
// copy-engine issuer (engine/copy_engine.hpp: cut at the pools' allocation boundaries, 2-D
// copies nested into 3-D where their strides allow and sent to cudaMemcpy3DBatchAsync (else
// cudaMemcpy2DAsync each), the 1-D copies of a transfer to cuMemcpyBatchAsync when the driver
// offers it, else cudaMemcpyAsync one by one). This file holds the CUDA calls of the engine table;
// the table's limits and the batch ABI choice are in direct_copies.hpp. The batch entry point is
// resolved at run time through cudaGetDriverEntryPointByVersion, for the ABI of the version
// asked (12.8: with failIdx; 13.0: without), so a build with one toolkit is correct on drivers
// of either version.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdlib>
#include <memory>
#include <type_traits>
#include <vector>

#include "../core/pool.hpp"
#include "cuda_engine.hpp"
#include "cuda_executor.hpp"
#include "direct_copies.hpp"
#include "stream_argument.hpp"

namespace kvio {
namespace cuda {
namespace {

using engine::EngineCopy;
using engine::kEngineNotSupported;
using engine::kEngineOk;

// cuMemcpyBatchAsync at its two ABIs (CUDA 12.8 and 13.0, which dropped failIdx), declared here:
// the 12.8 and 12.9 headers have no typedef for the second. Checked against the headers' own
// where they have both.
using BatchAsyncV12080 = CUresult (*)(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                      size_t count, CUmemcpyAttributes* attributes,
                                      size_t* attributeIndices, size_t numAttributes,
                                      size_t* failIndex, CUstream stream);
using BatchAsyncV13000 = CUresult (*)(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                      size_t count, CUmemcpyAttributes* attributes,
                                      size_t* attributeIndices, size_t numAttributes,
                                      CUstream stream);
#if CUDA_VERSION >= 13000
static_assert(std::is_same<BatchAsyncV12080, PFN_cuMemcpyBatchAsync_v12080>::value,
              "cuMemcpyBatchAsync's 12.8 ABI");
static_assert(std::is_same<BatchAsyncV13000, PFN_cuMemcpyBatchAsync_v13000>::value,
              "cuMemcpyBatchAsync's 13.0 ABI");
#endif

// cuMemcpyBatchAsync as a driver of version `driver` exports it at ABI `version`; nullptr for an
// older driver or when it has no such entry point.
void* batchEntryPoint(int driver, int version) {
  if (driver < version) return nullptr;
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuMemcpyBatchAsync", &function, version, cudaEnableDefault,
                                       &found) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return found == cudaDriverEntryPointSuccess ? function : nullptr;
}

// Resolved once per process.
const BatchEntry& batchEntry() {
  static const BatchEntry entry = [] {
    BatchEntry e;
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) {
      cudaGetLastError();
      return e;
    }
    void* v13 = batchEntryPoint(driver, 13000);
    void* v12 = batchEntryPoint(driver, 12080);
    e.abi = chooseBatchAbi(driver, v12 != nullptr, v13 != nullptr);
    e.function = e.abi == BatchAbi::V13000 ? v13 : e.abi == BatchAbi::V12080 ? v12 : nullptr;
    return e;
  }();
  return entry;
}

int toEngine(cudaError_t error) {
  if (error == cudaSuccess) return kEngineOk;
  cudaGetLastError();
  return static_cast<int>(error);
}

int copy1d(void* context, uint64_t dst, uint64_t src, uint64_t bytes) {
  auto* c = static_cast<EngineContext*>(context);
  return toEngine(cudaMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src),
                                  bytes, cudaMemcpyDefault, c->stream));
}

int copy2d(void* context, const EngineCopy& copy) {
  auto* c = static_cast<EngineContext*>(context);
  return toEngine(cudaMemcpy2DAsync(reinterpret_cast<void*>(copy.dst), copy.dstPitch,
                                    reinterpret_cast<const void*>(copy.src), copy.srcPitch,
                                    copy.width, copy.height, cudaMemcpyDefault, c->stream));
}

// A driver call's CUresult as the engine's code: offset, so that errorText can tell it from a
// runtime call's cudaError_t (the two share numbers for some errors, not for all).
constexpr int kDriverCode = 1 << 20;

int batch(void* context, const uint64_t* dsts, const uint64_t* srcs, const size_t* sizes,
          size_t count, size_t* failIndex) {
  auto* c = static_cast<EngineContext*>(context);
  CUmemcpyAttributes attributes{};
  attributes.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  attributes.flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;
  size_t attributeIndex = 0;
  // The driver does not write these arrays; its signature just lacks the const.
  auto* d = reinterpret_cast<CUdeviceptr*>(const_cast<uint64_t*>(dsts));
  auto* s = reinterpret_cast<CUdeviceptr*>(const_cast<uint64_t*>(srcs));
  auto* n = const_cast<size_t*>(sizes);
  auto stream = reinterpret_cast<CUstream>(c->stream);
  CUresult result = CUDA_SUCCESS;
  if (c->batch.abi == BatchAbi::V13000) {
    result = reinterpret_cast<BatchAsyncV13000>(c->batch.function)(d, s, n, count, &attributes,
                                                                   &attributeIndex, 1, stream);
  } else {
    result = reinterpret_cast<BatchAsyncV12080>(c->batch.function)(
        d, s, n, count, &attributes, &attributeIndex, 1, failIndex, stream);
  }
  if (result == CUDA_SUCCESS) return kEngineOk;
  if (result == CUDA_ERROR_NOT_SUPPORTED) return kEngineNotSupported;
  return kDriverCode + static_cast<int>(result);
}

#if CUDART_VERSION >= 12080
constexpr bool kHaveBatch3d = true;

cudaMemcpy3DOperand pointerOperand(uint64_t address, uint64_t pitch, uint64_t slice,
                                   uint64_t height) {
  cudaMemcpy3DOperand operand{};
  operand.type = cudaMemcpyOperandTypePointer;
  operand.op.ptr.ptr = reinterpret_cast<void*>(address);
  operand.op.ptr.rowLength = pitch;  // elements of 1 byte
  operand.op.ptr.layerHeight = slice != 0 ? slice / pitch : height;
  return operand;
}

// One cudaMemcpy3DBatchAsync call: 1-D, 2-D and 3-D copies between pointers (element size 1).
int batch3d(void* context, const EngineCopy* copies, size_t count, size_t* failIndex) {
  auto* c = static_cast<EngineContext*>(context);
  c->ops3d.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const EngineCopy& x = copies[i];
    cudaMemcpy3DBatchOp& op = c->ops3d[i];
    op = cudaMemcpy3DBatchOp{};
    op.src = pointerOperand(x.src, x.srcPitch, x.depth > 1 ? x.srcSlice : 0, x.height);
    op.dst = pointerOperand(x.dst, x.dstPitch, x.depth > 1 ? x.dstSlice : 0, x.height);
    op.extent = make_cudaExtent(x.width, x.height, x.depth);
    op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    op.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  }
#if CUDART_VERSION >= 13000
  (void)failIndex;
  const cudaError_t error = cudaMemcpy3DBatchAsync(count, c->ops3d.data(), 0, c->stream);
#else
  const cudaError_t error = cudaMemcpy3DBatchAsync(count, c->ops3d.data(), failIndex, 0, c->stream);
#endif
  // A driver older than the runtime (minor-version compatibility) may lack the call: the issuer
  // then falls back to one 2-D copy per slice, as for "not supported".
  if (error == cudaErrorNotSupported || error == cudaErrorCallRequiresNewerDriver) {
    cudaGetLastError();
    return kEngineNotSupported;
  }
  return toEngine(error);
}
#else
constexpr bool kHaveBatch3d = false;
int (*const batch3d)(void*, const EngineCopy*, size_t, size_t*) = nullptr;
#endif

std::string errorText(void*, int code) {
  if (code >= kDriverCode) return describeDriver(static_cast<CUresult>(code - kDriverCode));
  return describe(static_cast<cudaError_t>(code));
}

// KVIO_DIRECT_STREAMS: the streams a direct executor deals a large transfer's copies to
// (parseDirectStreams); unset or empty: 1.
kvio_status directStreamsFromEnvironment(int32_t* out) {
  const char* text = std::getenv("KVIO_DIRECT_STREAMS");
  if (parseDirectStreams(text, out)) return KVIO_STATUS_OK;
  return fail(KVIO_STATUS_INVALID_ARGUMENT,
              "KVIO_DIRECT_STREAMS='%s' is not a stream count: give a whole number from 1 to %d; "
              "unset, the 'direct' io backend uses 1",
              text, kMaxDirectStreams);
}

// A stream of the executor's own beside its stream, with the engine that issues on it and the
// event that joins it back.
struct SideStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t joined = nullptr;
  CudaEngine engine;
};

class DirectExecutor final : public CudaExecutor {
 public:
  kvio_status configure(const CudaExecutorConfig& config) {
    // After init: a refused value then leaves the executor's device set for its destructor.
    KVIO_RETURN_IF_ERROR(init(config, "direct"));
    int32_t streams = 1;
    KVIO_RETURN_IF_ERROR(directStreamsFromEnvironment(&streams));
    KVIO_RETURN_IF_ERROR(setUpCudaEngine(stream_, device_, &engine_));
    if (streams == 1) return KVIO_STATUS_OK;
    DeviceScope scope(device_);
    KVIO_CUDA_TRY_SCOPE(scope, device_);
    KVIO_CUDA_TRY(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming),
                  "creating the 'direct' executor's fork event on device %d", device_);
    for (int32_t k = 1; k < streams; ++k) {
      sides_.push_back(std::make_unique<SideStream>());
      SideStream& side = *sides_.back();
      KVIO_CUDA_TRY(cudaStreamCreateWithFlags(&side.stream, cudaStreamNonBlocking),
                    "creating stream %d of %d of the 'direct' executor on device %d", k + 1,
                    streams, device_);
      KVIO_CUDA_TRY(cudaEventCreateWithFlags(&side.joined, cudaEventDisableTiming),
                    "creating the join event of stream %d of the 'direct' executor", k + 1);
      KVIO_RETURN_IF_ERROR(setUpCudaEngine(side.stream, device_, &side.engine));
    }
    return KVIO_STATUS_OK;
  }

  ~DirectExecutor() override {
    drain();  // every side stream's work is joined into stream_ before a job's event
    if (fork_ == nullptr && sides_.empty()) return;
    DeviceScope scope(device_);
    for (const std::unique_ptr<SideStream>& side : sides_) {
      if (side->joined != nullptr && cudaEventDestroy(side->joined) != cudaSuccess) {
        cudaGetLastError();
      }
      if (side->stream != nullptr && cudaStreamDestroy(side->stream) != cudaSuccess) {
        cudaGetLastError();
      }
    }
    if (fork_ != nullptr && cudaEventDestroy(fork_) != cudaSuccess) cudaGetLastError();
  }

 protected:
  // Not host to host: CUDA's copies between host buffers, cudaMemcpyAsync's and the batch calls'
  // included, are synchronous with the host (its API synchronization rules), so they would not
  // be ordered on the stream after the work before them. The kernel reads and writes pinned
  // host memory on the stream.
  kvio_status acceptMemory(MemoryPlace src, MemoryPlace dst) const override {
    KVIO_RETURN_IF_ERROR(CudaExecutor::acceptMemory(src, dst));
    if (src.kind == KVIO_MEMORY_CUDA_DEVICE || dst.kind == KVIO_MEMORY_CUDA_DEVICE) {
      return KVIO_STATUS_OK;
    }
    return fail(KVIO_STATUS_UNSUPPORTED,
                "the 'direct' io backend does not move host to host: CUDA copies between host "
                "buffers are synchronous with the host and not ordered on the stream; use the "
                "'kernel' io backend (ordered on the stream) or 'cpu'");
  }

  kvio_status enqueue(Job& job, EventCompletion*, std::function<void()>*) override {
    engine::IssueOptions options;
    options.direction = directionName(job.srcPlace.kind, job.dstPlace.kind);
    size_t ends[kMaxDirectStreams];
    const size_t groups =
        sides_.empty() ? 1 : dealPlan(job.plan, static_cast<int32_t>(sides_.size() + 1), ends);
    if (groups == 1) {
      return engine_.issuer.issue(engine_.ops, job.plan, job.srcPool->copyRegions(),
                                  job.dstPool->copyRegions(), options);
    }
    return issueOnStreams(job, groups, ends, options);
  }

 private:
  // Issues group g of the plan (dealPlan's ends) on stream_ (g = 0) or side stream g - 1,
  // forked from stream_ (each side stream starts after everything queued on stream_ so far)
  // and joined back (stream_ goes on after every side stream's copies: the job's event, recorded
  // on stream_ by the caller, covers them all, failed transfers included). A transfer's copies
  // write disjoint bytes and read none it writes (validate.cpp), so the groups need no order
  // between them. mutex_ is held (submit), so the fork event and the join events, reused by
  // every transfer, are recorded by one transfer at a time: a stream wait takes the record
  // before it.
  kvio_status issueOnStreams(Job& job, size_t groups, const size_t* ends,
                             const engine::IssueOptions& options) {
    KVIO_CUDA_TRY(cudaEventRecord(fork_, stream_),
                  "recording the fork event of a transfer dealt to %zu streams", groups);
    for (size_t g = 1; g < groups; ++g) {
      KVIO_CUDA_TRY(cudaStreamWaitEvent(sides_[g - 1]->stream, fork_, 0),
                    "ordering stream %zu of %zu after the executor's stream", g + 1, groups);
    }
    // From here copies may be queued on the side streams: they are joined whatever happens,
    // an exception included (an allocation while a group is cut or batched; submit reports it).
    kvio_status status = KVIO_STATUS_OK;
    size_t begin = 0;
    size_t issued = 0;  // groups that may have queued copies
    try {
      for (size_t g = 0; g < groups && status == KVIO_STATUS_OK; ++g) {
        CudaEngine& engine = g == 0 ? engine_ : sides_[g - 1]->engine;
        issued = g + 1;
        group_.assign(job.plan.begin() + static_cast<std::ptrdiff_t>(begin),
                      job.plan.begin() + static_cast<std::ptrdiff_t>(ends[g]));
        begin = ends[g];
        status = engine.issuer.issue(engine.ops, group_, job.srcPool->copyRegions(),
                                     job.dstPool->copyRegions(), options);
      }
    } catch (...) {
      group_.clear();
      join(issued, groups, false);
      throw;
    }
    group_.clear();
    const kvio_status joined = join(issued, groups, status == KVIO_STATUS_OK);
    return status != KVIO_STATUS_OK ? status : joined;
  }

  // Makes stream_ wait for side streams 1 to issued - 1. Where an event record or the wait
  // fails, waits on the host for that side stream instead, so its copies are done before the
  // transfer can be reported. The join's own error is returned and, when `report` (no issue
  // failed before: that error's message stays the transfer's), made the last error.
  kvio_status join(size_t issued, size_t groups, bool report) {
    kvio_status status = KVIO_STATUS_OK;
    for (size_t g = 1; g < issued; ++g) {
      SideStream& side = *sides_[g - 1];
      cudaError_t error = cudaEventRecord(side.joined, side.stream);
      if (error == cudaSuccess) error = cudaStreamWaitEvent(stream_, side.joined, 0);
      if (error == cudaSuccess) continue;
      cudaGetLastError();
      const cudaError_t waited = cudaStreamSynchronize(side.stream);
      if (waited != cudaSuccess) cudaGetLastError();
      if (status != KVIO_STATUS_OK) continue;
      status = statusOf(error);
      if (report) {
        fail(status,
             "joining stream %zu of %zu back into the 'direct' executor's stream: %s "
             "(waited on the host for its copies: %s)",
             g + 1, groups, describe(error).c_str(),
             waited == cudaSuccess ? "done" : describe(waited).c_str());
      }
    }
    return status;
  }

  CudaEngine engine_;
  cudaEvent_t fork_ = nullptr;
  std::vector<std::unique_ptr<SideStream>> sides_;  // KVIO_DIRECT_STREAMS - 1 of them
  std::vector<kvio_copy2d> group_;                  // the group being issued (mutex_ held)
};

}  // namespace

kvio_status setUpCudaEngine(cudaStream_t stream, int32_t device, CudaEngine* engine) {
  // The runtime calls below (the driver version, the device attribute) may initialise the
  // runtime: under the device's context, so that a thread with none is left with none.
  DeviceScope scope(device);
  KVIO_CUDA_TRY_SCOPE(scope, device);
  EngineContext& context = engine->context;
  context.stream = stream;
  context.device = device;
  context.batch = batchEntry();
  // The batch API refuses the legacy default stream.
  const bool streamAllowsBatches =
      classifyStream(reinterpret_cast<uint64_t>(stream)) == StreamArgument::kHandle;
  engine->issuer.setBatchEnabled(context.batch.abi != BatchAbi::None && streamAllowsBatches);
  engine->issuer.setBatch3dEnabled(kHaveBatch3d && streamAllowsBatches);
  int maxPitch = 0;
  KVIO_CUDA_TRY(cudaDeviceGetAttribute(&maxPitch, cudaDevAttrMaxPitch, device),
                "querying the largest 2-D copy pitch of CUDA device %d", device);
  engine::EngineOps& ops = engine->ops;
  ops = directEngine(static_cast<uint64_t>(maxPitch));
  ops.context = &context;
  ops.copy1d = copy1d;
  ops.copy2d = copy2d;
  ops.batch = context.batch.function != nullptr ? batch : nullptr;
  ops.batch3d = batch3d;
  ops.errorText = errorText;
  return KVIO_STATUS_OK;
}

kvio_status createDirectExecutor(const CudaExecutorConfig& config, std::unique_ptr<Executor>* out) {
  return createConfigured<DirectExecutor>(config, out);
}

}  // namespace cuda
}  // namespace kvio
