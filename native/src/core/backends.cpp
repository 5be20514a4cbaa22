// The backend registry: maps io backend ids to their BackendOps tables. Backends that are
// not part of this build report why; the CPU backend is always present.
#include "error.hpp"
#include "executor.hpp"

namespace kvio {

const BackendOps& cpuBackendOps();  // native/src/cpu/cpu_executor.cpp

namespace {

kvio_status noCudaBackend() {
  return fail(KVIO_STATUS_UNAVAILABLE,
              "this kvio build has no CUDA backend (the 'kernel' and 'direct' io backends need "
              "a build with the CUDA toolkit and an NVIDIA driver and GPU at run time)");
}

kvio_status noAscendBackend() {
  return fail(KVIO_STATUS_UNAVAILABLE,
              "this kvio build has no Ascend backend (the 'kernel_ascend' io backend needs the "
              "CANN runtime, libascendcl.so, and an Ascend NPU)");
}

const BackendOps kKernel{KVIO_BACKEND_KERNEL, noCudaBackend, nullptr};
const BackendOps kDirect{KVIO_BACKEND_DIRECT, noCudaBackend, nullptr};
const BackendOps kAscend{KVIO_BACKEND_KERNEL_ASCEND, noAscendBackend, nullptr};

}  // namespace

const BackendOps* backendOps(int32_t ioBackend) {
  switch (ioBackend) {
    case KVIO_BACKEND_CPU: return &cpuBackendOps();
    case KVIO_BACKEND_KERNEL: return &kKernel;
    case KVIO_BACKEND_DIRECT: return &kDirect;
    case KVIO_BACKEND_KERNEL_ASCEND: return &kAscend;
    default: return nullptr;
  }
}

}  // namespace kvio
