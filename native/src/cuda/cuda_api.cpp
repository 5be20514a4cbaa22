// The CUDA entry points of the C ABI: an executor of a CUDA io backend on a device and stream,
// its stream, a transfer's completion event, and the device count of builds without the CUDA
// backend (cuda_backend.cpp has the real one). Compiled in every build: without the CUDA backend
// they report it absent through the backend registry.
#include "../core/backends.hpp"
#include "../core/guard.hpp"
#include "../core/handles.hpp"

namespace kvio {
namespace {

kvio_status cudaExecutor(uint64_t handle, std::shared_ptr<ExecutorImpl>* out) {
  KVIO_RETURN_IF_ERROR(executors().get(handle, "executor", out));
  uint64_t stream = 0;
  if (!(*out)->executor->nativeHandle(NativeHandle::kCudaStream, &stream)) {
    return fail(KVIO_STATUS_UNSUPPORTED, "executor 0x%llx is a '%s' executor, not a CUDA one",
                static_cast<unsigned long long>(handle),
                kvio_name(KVIO_NAME_BACKEND, (*out)->backend));
  }
  return KVIO_STATUS_OK;
}

}  // namespace
}  // namespace kvio

using namespace kvio;

extern "C" {

kvio_status kvio_executor_create_cuda(int32_t io_backend, int32_t device, uint64_t stream,
                                      int32_t cta_budget, int32_t warps_per_cta,
                                      uint64_t* executor_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(executor_out, "executor_out"));
    KVIO_RETURN_IF_ERROR(kvio_backend_available(io_backend));
    const BackendOps* ops = backendOps(io_backend);
    if (ops->createCuda == nullptr) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "io backend '%s' is not a CUDA backend (CUDA backends: kernel, direct, auto)",
                  kvio_name(KVIO_NAME_BACKEND, io_backend));
    }
    if (device < 0) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "device %d is not a CUDA device ordinal (>= 0)",
                  device);
    }
    CudaExecutorConfig config;
    config.device = device;
    config.stream = stream;
    config.ctaBudget = cta_budget;
    config.warpsPerCta = warps_per_cta;
    auto impl = std::make_shared<ExecutorImpl>();
    impl->backend = io_backend;
    KVIO_RETURN_IF_ERROR(ops->createCuda(config, &impl->executor));
    *executor_out = executors().add(std::move(impl));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_cuda_stream(uint64_t executor_handle, uint64_t* stream_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(stream_out, "stream_out"));
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(cudaExecutor(executor_handle, &executor));
    executor->executor->nativeHandle(NativeHandle::kCudaStream, stream_out);
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_transfer_cuda_event(uint64_t transfer, uint64_t* event_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(event_out, "event_out"));
    std::shared_ptr<TransferState> state;
    KVIO_RETURN_IF_ERROR(transfers().get(transfer, "transfer", &state));
    std::shared_ptr<DeviceCompletion> completion = state->deviceCompletion();
    if (completion == nullptr || !completion->nativeHandle(NativeHandle::kCudaEvent, event_out)) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "transfer 0x%llx has no CUDA event (it did not run on a CUDA executor)",
                  static_cast<unsigned long long>(transfer));
    }
    return KVIO_STATUS_OK;
  });
}

#if !defined(KVIO_HAVE_CUDA)
kvio_status kvio_cuda_device_count(int32_t* count_out) {
  return guarded([&]() -> kvio_status {
    if (count_out != nullptr) *count_out = 0;
    return backendOps(KVIO_BACKEND_KERNEL)->available();  // why this build has no CUDA
  });
}
#endif

}  // extern "C"
