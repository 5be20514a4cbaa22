// The CUDA entry points of the C ABI: an executor of a CUDA io backend on a device and stream,
// its stream, its launch shape (through its backend table's setLaunch), a transfer's completion
// event, and the device count of builds without the CUDA backend (cuda_backend.cpp has the real
// one). Compiled in every build: without the CUDA backend
// they report it absent through the backend registry.
#include "../core/entry.hpp"
#include "../core/launch_shape.hpp"
#include "stream_argument.hpp"

using namespace kvio;

extern "C" {

kvio_status kvio_executor_create_cuda(int32_t io_backend, int32_t device, uint64_t stream,
                                      int32_t cta_budget, int32_t warps_per_cta,
                                      uint64_t* executor_out) {
  // What is wrong on every machine, said before whether CUDA is here (openExecutor).
  const auto checkArguments = [&]() -> kvio_status {
    if (backendOps(io_backend)->createCuda == nullptr) {
      return fail(
          KVIO_STATUS_INVALID_ARGUMENT, "io backend '%s' is not a CUDA backend (CUDA backends: %s)",
          kvio_name(KVIO_NAME_BACKEND, io_backend),
          ioBackendsWhere([](const BackendOps& o) { return o.createCuda != nullptr; }).c_str());
    }
    if (device < 0) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "device %d is not a CUDA device ordinal (>= 0)",
                  device);
    }
    if (cuda::classifyStream(stream) == cuda::StreamArgument::kPerThread) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "stream 0x2 is cudaStreamPerThread, which names a different stream on each "
                  "thread; an executor orders its transfers on one stream: pass a stream you "
                  "created, 0 or cudaStreamLegacy (0x1) for the legacy default stream, or "
                  "KVIO_CUDA_OWN_STREAM for kvio's own");
    }
    if (backendOps(io_backend)->setLaunch != nullptr) {  // direct ignores the shape
      KVIO_RETURN_IF_ERROR(checkLaunchShape(cta_budget, warps_per_cta, "the backend's defaults"));
    }
    return KVIO_STATUS_OK;
  };
  return openExecutor(io_backend, executor_out, checkArguments,
                      [&](std::unique_ptr<Executor>* executor) {
                        CudaExecutorConfig config;
                        config.device = device;
                        config.stream = stream;
                        config.ctaBudget = cta_budget;
                        config.warpsPerCta = warps_per_cta;
                        return backendOps(io_backend)->createCuda(config, executor);
                      });
}

kvio_status kvio_executor_cuda_stream(uint64_t executor_handle, uint64_t* stream_out) {
  return executorNativeHandle(executor_handle, NativeHandle::kCudaStream, "CUDA", stream_out,
                              "stream_out");
}

kvio_status kvio_transfer_cuda_event(uint64_t transfer, uint64_t* event_out) {
  return transferNativeHandle(transfer, NativeHandle::kCudaEvent,
                              "CUDA event (it did not run on a CUDA executor)", event_out,
                              "event_out");
}

kvio_status kvio_executor_set_launch(uint64_t executor_handle, int32_t cta_budget,
                                     int32_t warps_per_cta) {
  // The shape's limits first, before the handle, as kvio.h says: the answer to a bad shape does
  // not depend on the executor or on whether this machine has a GPU.
  const kvio_status shape = guarded(
      [&] { return checkLaunchShape(cta_budget, warps_per_cta, "the backend's defaults"); });
  if (shape != KVIO_STATUS_OK) return shape;
  return withObject(executors(), executor_handle, "executor", [&](ExecutorImpl& executor) {
    const BackendOps* ops = backendOps(executor.backend);
    if (ops->setLaunch == nullptr) {
      return fail(
          KVIO_STATUS_UNSUPPORTED,
          "executor 0x%llx is a '%s' executor, which launches no copy kernel: only the %s io "
          "backend has a launch shape (CTA budget, warps per CTA)",
          static_cast<unsigned long long>(executor_handle),
          kvio_name(KVIO_NAME_BACKEND, executor.backend),
          ioBackendsWhere([](const BackendOps& o) { return o.setLaunch != nullptr; }).c_str());
    }
    return ops->setLaunch(*executor.executor, cta_budget, warps_per_cta);
  });
}

#if !defined(KVIO_HAVE_CUDA)
kvio_status kvio_cuda_device_count(int32_t* count_out) {
  return countDevices(count_out, [](int32_t*) {
    return backendOps(KVIO_BACKEND_KERNEL)->available();  // why this build has no CUDA
  });
}
#endif

}  // extern "C"
