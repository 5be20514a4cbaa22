/*
 * A device KV pool: the accelerator-side cache the model computes into, normally layer_first
 * (one buffer, one buffer per component, or one buffer per layer). kvio can allocate it (on the
 * cpu backend "device" memory is host memory kvio allocates, which makes the whole path testable
 * without a device; on kernel, direct, staged and auto with a GPU it is memory of a CUDA device
 * (auto without one: host memory, as cpu), on kernel_ascend of an
 * Ascend NPU: device 0 unless a device is given) or wrap memory the serving engine owns (device
 * addresses of that device, e.g. a framework's tensors). Transfers move pools of one device with
 * an executor of that device (KvioExecutor.onDevice).
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
     * for kernel, direct, staged and auto on a machine with a GPU; NPU memory of Ascend device 0
     * (aclrtMalloc, zeroed) for kernel_ascend; host memory kvio allocates on cpu (and auto without
     * a GPU). KvioUnavailableException with the native cause when the backend is absent here.
     */
    public static DeviceKvPool allocate(PoolSpec spec, IoBackend backend) {
        return allocate(spec, backend, defaultDevice(backend));
    }

    /**
     * Allocates a device pool on device {@code device} of {@code backend} (a CUDA device ordinal or
     * an Ascend NPU id; on cpu only {@link Kvio#HOST_DEVICE} (-1), the host, as {@link #device()}
     * and {@link KvioExecutor#device()} report it).
     */
    public static DeviceKvPool allocate(PoolSpec spec, IoBackend backend, int device) {
        Objects.requireNonNull(spec, "spec");
        int d = checkDevice(backend, device);
        return new DeviceKvPool(
                spec, backend, NativeBridge.poolAllocate(spec, backend.deviceMemoryKind(), d));
    }

    /**
     * Wraps caller-owned memory: one region of {@code sizeBytes} holding all components in order
     * (device addresses of device 0 on the device backends).
     */
    public static DeviceKvPool wrap(
            PoolSpec spec, long address, long sizeBytes, IoBackend backend) {
        return wrap(spec, address, sizeBytes, backend, defaultDevice(backend));
    }

    /** Like {@link #wrap(PoolSpec, long, long, IoBackend)}, memory of device {@code device}. */
    public static DeviceKvPool wrap(
            PoolSpec spec, long address, long sizeBytes, IoBackend backend, int device) {
        Objects.requireNonNull(spec, "spec");
        int d = checkDevice(backend, device);
        return new DeviceKvPool(
                spec,
                backend,
                NativeBridge.poolWrap(spec, backend.deviceMemoryKind(), d, address, sizeBytes));
    }

    /**
     * Wraps caller-owned memory, one buffer per component (K then V for mha), each at least
     * componentBytes. The buffers {@code [componentAddresses[c], +bytesEach)} must not overlap each
     * other (KvioInvalidArgumentException naming both).
     */
    public static DeviceKvPool wrapComponents(
            PoolSpec spec, long[] componentAddresses, long bytesEach, IoBackend backend) {
        return wrapComponents(spec, componentAddresses, bytesEach, backend, defaultDevice(backend));
    }

    /** Like {@link #wrapComponents(PoolSpec, long[], long, IoBackend)} on device {@code device}. */
    public static DeviceKvPool wrapComponents(
            PoolSpec spec,
            long[] componentAddresses,
            long bytesEach,
            IoBackend backend,
            int device) {
        Objects.requireNonNull(componentAddresses, "componentAddresses");
        return wrapTable(
                NativeBridge.WRAP_COMPONENTS, spec, componentAddresses, bytesEach, backend, device);
    }

    /**
     * Wraps caller-owned per-layer buffers (layer_first only): {@code layerAddresses[c * numLayers
     * + l]} is the base of component c, layer l, each at least pages * pageSize * rowBytes long.
     * The buffers {@code [layerAddresses[i], +bytesEach)} must not overlap each other
     * (KvioInvalidArgumentException naming both).
     */
    public static DeviceKvPool wrapLayers(
            PoolSpec spec, long[] layerAddresses, long bytesEach, IoBackend backend) {
        return wrapLayers(spec, layerAddresses, bytesEach, backend, defaultDevice(backend));
    }

    /** Like {@link #wrapLayers(PoolSpec, long[], long, IoBackend)} on device {@code device}. */
    public static DeviceKvPool wrapLayers(
            PoolSpec spec, long[] layerAddresses, long bytesEach, IoBackend backend, int device) {
        Objects.requireNonNull(layerAddresses, "layerAddresses");
        return wrapTable(
                NativeBridge.WRAP_LAYERS, spec, layerAddresses, bytesEach, backend, device);
    }

    private static DeviceKvPool wrapTable(
            NativeBridge.TableWrap wrap,
            PoolSpec spec,
            long[] addresses,
            long bytesEach,
            IoBackend backend,
            int device) {
        Objects.requireNonNull(spec, "spec");
        int d = checkDevice(backend, device);
        return new DeviceKvPool(
                spec,
                backend,
                NativeBridge.poolWrapTable(
                        wrap, spec, backend.deviceMemoryKind(), d, addresses, bytesEach));
    }

    /** Device 0 of a device backend; the host ({@link Kvio#HOST_DEVICE}) on cpu. */
    private static int defaultDevice(IoBackend backend) {
        Objects.requireNonNull(backend, "backend");
        return backend.isDevice() ? 0 : Kvio.HOST_DEVICE;
    }

    /**
     * The device ordinal to pass for {@code device} on {@code backend}; the backend must be
     * available. Existence of the device is checked natively (KvioInvalidArgumentException).
     */
    private static int checkDevice(IoBackend backend, int device) {
        Objects.requireNonNull(backend, "backend");
        if (!backend.isDevice() && device != Kvio.HOST_DEVICE) {
            throw new KvioUnsupportedException(
                    "io backend '"
                            + backend.userName()
                            + "' has one device, the host: device must be -1 (Kvio.HOST_DEVICE), got "
                            + device);
        }
        backend.ensureAvailability();
        return device;
    }

    /** The device this pool's memory is on; {@link Kvio#HOST_DEVICE} (-1) on cpu (host memory). */
    public int device() {
        return NativeBridge.poolDevice(handle());
    }
}
