// The backend registry: maps io backend ids to their BackendOps tables. Backends that are
// not part of this build report why; the CPU backend is always present. With KVIO_HAVE_CUDA
// the kernel, direct and staged tables and the CUDA memory services come from native/src/cuda/. The
// kernel_ascend table (native/src/ascend/) is always built: it loads the ACL runtime at run
// time and reports why it is absent.
#include "backends.hpp"

#include "auto_executor.hpp"
#include "error.hpp"
#include "executor.hpp"
#include "pool.hpp"

namespace kvio {

const BackendOps& cpuBackendOps();     // native/src/cpu/cpu_executor.cpp
const BackendOps& ascendBackendOps();  // native/src/ascend/ascend_backend.cpp
#if defined(KVIO_HAVE_CUDA)
const BackendOps& cudaKernelBackendOps();  // native/src/cuda/cuda_backend.cpp
const BackendOps& cudaDirectBackendOps();
const BackendOps& cudaStagedBackendOps();
kvio_status createCudaAutoExecutor(const CudaExecutorConfig& config,
                                   std::unique_ptr<Executor>* out);  // cuda_backend.cpp
#endif

namespace {

#if !defined(KVIO_HAVE_CUDA)
kvio_status noCudaBackend() {
  return fail(
      KVIO_STATUS_UNAVAILABLE,
      "this kvio build has no CUDA backend (the 'kernel', 'direct' and 'staged' io backends need "
      "a build with the CUDA toolkit and an NVIDIA driver and GPU at run time)");
}

kvio_status noCudaAllocate(int32_t, int32_t, uint64_t, uint64_t*, std::shared_ptr<void>*) {
  return noCudaBackend();
}
kvio_status noCudaAdopt(int32_t, int32_t, const MemoryRegion*, size_t, std::shared_ptr<void>*,
                        std::vector<MemoryRegion>*) {
  return noCudaBackend();
}
kvio_status noCudaAddress(int32_t, int32_t, uint64_t, uint64_t*) {
  return noCudaBackend();
}
kvio_status noCudaCopy(int32_t, int32_t, uint64_t, uint64_t, uint64_t, bool) {
  return noCudaBackend();
}

kvio_status noCudaLaunch(Executor&, int32_t, int32_t) {
  return noCudaBackend();
}

kvio_status noCudaCreate(const CudaExecutorConfig&, std::unique_ptr<Executor>*) {
  return noCudaBackend();
}

// What the CUDA tables declare (cuda_backend.cpp), so that messages name the same backends
// and kvio_executor_create_cuda takes the same io backends as CUDA ones in every build.
const BackendOps kKernel{KVIO_BACKEND_KERNEL, noCudaBackend, nullptr, noCudaCreate, nullptr, true,
                         noCudaLaunch};
const BackendOps kDirect{KVIO_BACKEND_DIRECT, noCudaBackend, nullptr, noCudaCreate, nullptr};
const BackendOps kStaged{KVIO_BACKEND_STAGED, noCudaBackend, nullptr, noCudaCreate, nullptr, false,
                         noCudaLaunch};
const MemoryOps kNoCudaMemory{noCudaAllocate, noCudaAdopt, noCudaAddress, noCudaCopy};

kvio_status createCudaAutoExecutor(const CudaExecutorConfig&, std::unique_ptr<Executor>*) {
  return noCudaBackend();
}
#endif

// 'auto' is always available: with a usable CUDA driver and device it chooses among kernel,
// direct and staged on device 0 (createCudaAutoExecutor); without, it is the cpu backend, and
// where an Ascend NPU is usable, kernel_ascend on NPU 0 for transfers of NPU memory.
kvio_status autoAvailable() {
  return KVIO_STATUS_OK;
}

// Without a GPU: cpu (`threads` io threads), and kernel_ascend on NPU `device` ordering its work
// on `stream` when `npu` (else cpu alone).
kvio_status createHostAutoExecutor(int32_t threads, bool npu, int32_t device, uint64_t stream,
                                   std::unique_ptr<Executor>* out) {
  AutoCalibration calibration;
  KVIO_RETURN_IF_ERROR(initialAutoCalibration(&calibration));
  std::array<AutoExecutor::Candidate, kAutoPicks> candidates;
  AutoExecutor::Candidate& cpu = candidates[static_cast<size_t>(AutoPick::kCpu)];
  cpu.ioBackend = KVIO_BACKEND_CPU;
  KVIO_RETURN_IF_ERROR(asAutoCandidate(cpuBackendOps().create(threads, &cpu.executor)));
  if (npu) {
    AutoExecutor::Candidate& ascend = candidates[static_cast<size_t>(AutoPick::kAscend)];
    ascend.ioBackend = KVIO_BACKEND_KERNEL_ASCEND;
    KVIO_RETURN_IF_ERROR(
        asAutoCandidate(ascendBackendOps().createAscend(device, stream, &ascend.executor)));
  }
  *out = std::make_unique<AutoExecutor>(std::move(candidates), std::move(calibration));
  return KVIO_STATUS_OK;
}

kvio_status autoCreate(int32_t threads, std::unique_ptr<Executor>* out) {
  if (backendOps(KVIO_BACKEND_KERNEL)->available() == KVIO_STATUS_OK) {
    return createCudaAutoExecutor(CudaExecutorConfig(), out);
  }
  const bool npu = ascendBackendOps().available() == KVIO_STATUS_OK;
  return createHostAutoExecutor(threads, npu, 0, KVIO_ASCEND_OWN_STREAM, out);
}

// kvio_executor_create_ascend_auto: on a machine with NPUs and no GPU, auto on NPU `device`.
kvio_status autoCreateAscend(int32_t device, uint64_t stream, std::unique_ptr<Executor>* out) {
  if (backendOps(KVIO_BACKEND_KERNEL)->available() == KVIO_STATUS_OK) {
    return fail(KVIO_STATUS_UNSUPPORTED,
                "this machine has a usable CUDA GPU, so 'auto' runs kernel, direct or staged "
                "on it: create it with kvio_executor_create_cuda, or use 'kernel_ascend' for "
                "the NPU");
  }
  KVIO_RETURN_IF_ERROR(ascendBackendOps().available());
  return createHostAutoExecutor(0, true, device, stream, out);
}

kvio_status autoSetLaunch(Executor& executor, int32_t ctaBudget, int32_t warpsPerCta) {
  return static_cast<AutoExecutor&>(executor).setKernelLaunch(ctaBudget, warpsPerCta);
}

// Device-resident indices and launch settings go to its kernel candidate (AutoExecutor says
// UNSUPPORTED when it runs the cpu backend).
const BackendOps kAuto{KVIO_BACKEND_AUTO, autoAvailable, autoCreate,   createCudaAutoExecutor,
                       autoCreateAscend,  true,          autoSetLaunch};

}  // namespace

#if !defined(KVIO_HAVE_CUDA)
const MemoryOps& cudaMemoryOps() {
  return kNoCudaMemory;
}
#endif

const MemoryOps& memoryOpsFor(int32_t kind) {
  return kind == KVIO_MEMORY_ASCEND_DEVICE || kind == KVIO_MEMORY_ASCEND_HOST_PINNED
             ? ascendMemoryOps()
             : cudaMemoryOps();
}

bool isDeviceMemory(int32_t kind) {
  return kind == KVIO_MEMORY_CUDA_DEVICE || kind == KVIO_MEMORY_ASCEND_DEVICE;
}

kvio_status checkThreadCount(int32_t threads) {
  if (threads <= kMostCpuThreads) return KVIO_STATUS_OK;
  return fail(KVIO_STATUS_INVALID_ARGUMENT,
              "threads must be 1 to %d, or <= 0 for one per online core (at most %d); got %d",
              kMostCpuThreads, kMostCpuThreads, threads);
}

const BackendOps* backendOps(int32_t ioBackend) {
  switch (ioBackend) {
    case KVIO_BACKEND_CPU: return &cpuBackendOps();
#if defined(KVIO_HAVE_CUDA)
    case KVIO_BACKEND_KERNEL: return &cudaKernelBackendOps();
    case KVIO_BACKEND_DIRECT: return &cudaDirectBackendOps();
    case KVIO_BACKEND_STAGED: return &cudaStagedBackendOps();
#else
    case KVIO_BACKEND_KERNEL: return &kKernel;
    case KVIO_BACKEND_DIRECT: return &kDirect;
    case KVIO_BACKEND_STAGED: return &kStaged;
#endif
    case KVIO_BACKEND_KERNEL_ASCEND: return &ascendBackendOps();
    case KVIO_BACKEND_AUTO: return &kAuto;
    default: return nullptr;
  }
}

std::string ioBackendsWhere(bool (*has)(const BackendOps& ops)) {
  std::string list;
  for (int32_t id = 0; id < KVIO_BACKEND_COUNT; ++id) {
    const BackendOps* ops = backendOps(id);
    if (ops == nullptr || !has(*ops)) continue;
    if (!list.empty()) list += " or ";
    list += std::string("'") + kvio_name(KVIO_NAME_BACKEND, id) + "'";
  }
  return list.empty() ? "no" : list;
}

}  // namespace kvio
