// The Ascend entry points of the C ABI that go through the handle registries: an executor of
// the kernel_ascend io backend (or of auto, without a GPU) on an NPU and stream, its stream, and a
// transfer's completion event. (kvio_ascend_device_count is in ascend_backend.cpp, beside the ACL
// runtime.)
#include "../core/entry.hpp"

using namespace kvio;

extern "C" {

kvio_status kvio_executor_create_ascend(int32_t device, uint64_t stream, uint64_t* executor_out) {
  return kvio_executor_create_on_npu(KVIO_BACKEND_KERNEL_ASCEND, device, stream, executor_out);
}

kvio_status kvio_executor_create_on_npu(int32_t io_backend, int32_t device, uint64_t stream,
                                        uint64_t* executor_out) {
  return openExecutor(
      io_backend, executor_out,
      [&]() -> kvio_status {  // wrong on every machine: said before whether ACL is here
        if (backendOps(io_backend)->createAscend == nullptr) {
          return fail(KVIO_STATUS_INVALID_ARGUMENT,
                      "io backend '%s' does not run on an Ascend NPU (NPU io backends: %s)",
                      kvio_name(KVIO_NAME_BACKEND, io_backend),
                      ioBackendsWhere([](const BackendOps& o) {
                        return o.createAscend != nullptr;
                      }).c_str());
        }
        if (device < 0) {
          return fail(KVIO_STATUS_INVALID_ARGUMENT,
                      "device %d is not an Ascend device ordinal (>= 0)", device);
        }
        return KVIO_STATUS_OK;
      },
      [&](std::unique_ptr<Executor>* executor) {
        return backendOps(io_backend)->createAscend(device, stream, executor);
      });
}

kvio_status kvio_executor_ascend_stream(uint64_t executor_handle, uint64_t* stream_out) {
  return executorNativeHandle(executor_handle, NativeHandle::kAclStream, "kernel_ascend",
                              stream_out, "stream_out");
}

kvio_status kvio_transfer_ascend_event(uint64_t transfer, uint64_t* event_out) {
  return transferNativeHandle(transfer, NativeHandle::kAclEvent,
                              "Ascend event (it did not run on a kernel_ascend executor, or it "
                              "failed when it was submitted)",
                              event_out, "event_out");
}

}  // extern "C"
