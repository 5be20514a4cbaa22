// The Ascend entry points of the C ABI that go through the handle registries: an executor of
// the kernel_ascend io backend on an NPU and stream, its stream, and a transfer's completion
// event. (kvio_ascend_device_count is in ascend_backend.cpp, beside the ACL runtime.)
#include "../core/backends.hpp"
#include "../core/guard.hpp"
#include "../core/handles.hpp"

using namespace kvio;

extern "C" {

kvio_status kvio_executor_create_ascend(int32_t device, uint64_t stream, uint64_t* executor_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(executor_out, "executor_out"));
    KVIO_RETURN_IF_ERROR(kvio_backend_available(KVIO_BACKEND_KERNEL_ASCEND));
    if (device < 0) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "device %d is not an Ascend device ordinal (>= 0)",
                  device);
    }
    auto impl = std::make_shared<ExecutorImpl>();
    impl->backend = KVIO_BACKEND_KERNEL_ASCEND;
    KVIO_RETURN_IF_ERROR(
        backendOps(KVIO_BACKEND_KERNEL_ASCEND)->createAscend(device, stream, &impl->executor));
    *executor_out = executors().add(std::move(impl));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_ascend_stream(uint64_t executor_handle, uint64_t* stream_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(stream_out, "stream_out"));
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().get(executor_handle, "executor", &executor));
    if (!executor->executor->nativeHandle(NativeHandle::kAclStream, stream_out)) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "executor 0x%llx is a '%s' executor, not a kernel_ascend one",
                  static_cast<unsigned long long>(executor_handle),
                  kvio_name(KVIO_NAME_BACKEND, executor->backend));
    }
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_transfer_ascend_event(uint64_t transfer, uint64_t* event_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(event_out, "event_out"));
    std::shared_ptr<TransferState> state;
    KVIO_RETURN_IF_ERROR(transfers().get(transfer, "transfer", &state));
    std::shared_ptr<DeviceCompletion> completion = state->deviceCompletion();
    if (completion == nullptr || !completion->nativeHandle(NativeHandle::kAclEvent, event_out)) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "transfer 0x%llx has no Ascend event (it did not run on a kernel_ascend "
                  "executor, or it failed when it was submitted)",
                  static_cast<unsigned long long>(transfer));
    }
    return KVIO_STATUS_OK;
  });
}

}  // extern "C"
