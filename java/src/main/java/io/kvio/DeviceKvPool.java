/*
 * A device KV pool: the accelerator-side cache the model computes into, normally layer_first
 * (one buffer, one buffer per component, or one buffer per layer). kvio can allocate it (on the
 * cpu backend "device" memory is host memory kvio allocates, which makes the whole path testable
 * without a device; on kernel and direct it is memory of CUDA device 0) or wrap memory the serving
 * engine owns (on kernel and direct: device addresses of CUDA device 0, e.g. a framework's tensors).
 */
package io.kvio;

import java.util.Objects;

public final class DeviceKvPool extends KvPool {
    private DeviceKvPool(PoolSpec spec, IoBackend backend, long handle) {
        super(spec, backend, handle);
    }

    @Override
    String what() {
        return "device pool";
    }

    /**
     * Allocates a device pool on {@code backend}: GPU memory of CUDA device 0 (cudaMalloc, zeroed)
     * for kernel and direct; NPU memory of Ascend device 0 (aclrtMalloc, zeroed) for kernel_ascend;
     * host memory kvio allocates on cpu. KvioUnavailableException with the native cause when the
     * backend is absent here.
     */
    public static DeviceKvPool allocate(PoolSpec spec, IoBackend backend) {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(backend, "backend");
        backend.ensureAvailability();
        return new DeviceKvPool(
                spec, backend, Dispatcher.poolAllocate(spec, backend.deviceMemoryKind(), 0));
    }

    /**
     * Wraps caller-owned memory: one region of {@code sizeBytes} holding all components in order.
     */
    public static DeviceKvPool wrap(
            PoolSpec spec, long address, long sizeBytes, IoBackend backend) {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(backend, "backend");
        backend.ensureAvailability();
        return new DeviceKvPool(
                spec,
                backend,
                Dispatcher.poolWrap(spec, backend.deviceMemoryKind(), 0, address, sizeBytes));
    }

    /**
     * Wraps caller-owned memory, one buffer per component (K then V for mha), each at least
     * componentBytes.
     */
    public static DeviceKvPool wrapComponents(
            PoolSpec spec, long[] componentAddresses, long bytesEach, IoBackend backend) {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(componentAddresses, "componentAddresses");
        Objects.requireNonNull(backend, "backend");
        backend.ensureAvailability();
        return new DeviceKvPool(
                spec,
                backend,
                Dispatcher.poolWrapComponents(
                        spec, backend.deviceMemoryKind(), 0, componentAddresses, bytesEach));
    }

    /**
     * Wraps caller-owned per-layer buffers (layer_first only): {@code layerAddresses[c * numLayers
     * + l]} is the base of component c, layer l, each at least pages * pageSize * rowBytes long.
     */
    public static DeviceKvPool wrapLayers(
            PoolSpec spec, long[] layerAddresses, long bytesEach, IoBackend backend) {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(layerAddresses, "layerAddresses");
        Objects.requireNonNull(backend, "backend");
        backend.ensureAvailability();
        return new DeviceKvPool(
                spec,
                backend,
                Dispatcher.poolWrapLayerTable(
                        spec, backend.deviceMemoryKind(), 0, layerAddresses, bytesEach));
    }
}
