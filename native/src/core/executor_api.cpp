// The executor entry points of the C ABI that every backend shares: create one for an io
// backend, ask its thread count, close it. The vendor entry points
// (executors on a device and stream, launch settings) are in the backend folders.
#include "backends.hpp"
#include "guard.hpp"
#include "handles.hpp"

using namespace kvio;

extern "C" {

kvio_status kvio_executor_create(int32_t io_backend, int32_t threads, uint64_t* executor_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(executor_out, "executor_out"));
    KVIO_RETURN_IF_ERROR(kvio_backend_available(io_backend));
    auto impl = std::make_shared<ExecutorImpl>();
    impl->backend = io_backend;
    KVIO_RETURN_IF_ERROR(backendOps(io_backend)->create(threads, &impl->executor));
    *executor_out = executors().add(std::move(impl));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_threads(uint64_t executor_handle, int32_t* threads_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(threads_out, "threads_out"));
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().get(executor_handle, "executor", &executor));
    *threads_out = executor->executor->threads();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_close(uint64_t executor_handle) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().remove(executor_handle, "executor", &executor));
    executor->executor->drain();
    return KVIO_STATUS_OK;
  });
}

}  // extern "C"
