/*
 * A device KV pool: the accelerator-side cache the model computes into, normally layer_first
 * (one buffer, one buffer per component, or one buffer per layer). kvio can allocate it (on the
 * cpu backend "device" memory is host memory kvio allocates, which makes the whole path testable
 * without a device; on kernel, direct, staged and auto with a GPU it is memory of a CUDA device
 * (auto without one: NPU memory where an Ascend NPU is usable, as kernel_ascend, else host memory,
 * as cpu), on kernel_ascend of an Ascend NPU: device 0 unless a device is given) or wrap memory the serving engine owns (device
 * addresses of that device, e.g. a framework's tensors). Transfers move pools of one device with
 * an executor of that device (KvioExecutor.onDevice).
 */
package io.kvio;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.function.BooleanSupplier;

public final class DeviceKvPool extends KvPool {
    private DeviceKvPool(PoolSpec spec, IoBackend backend, long handle, boolean allocated) {
        super(spec, backend, handle, allocated);
    }

    @Override
    String what() {
        return "device pool";
    }

    /**
     * Allocates a device pool on {@code backend}: GPU memory of CUDA device 0 (cudaMalloc, zeroed)
     * for kernel, direct, staged and auto on a machine with a GPU; NPU memory of Ascend device 0
     * (aclrtMalloc, zeroed) for kernel_ascend (and auto on a machine with NPUs and no GPU); host
     * memory kvio allocates on cpu (and auto without a GPU or NPU). KvioUnavailableException with
     * the native cause when the backend is absent here.
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
        int kind = backend.deviceMemoryKind();
        return new DeviceKvPool(
                spec,
                backend,
                KvPool.allocateCollecting(kind, () -> NativeBridge.poolAllocate(spec, kind, d)),
                true);
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
                NativeBridge.poolWrap(spec, backend.deviceMemoryKind(), d, address, sizeBytes),
                false);
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

    /**
     * Wraps a direct, writable ByteBuffer, from its position to its limit, holding all components
     * in order (as {@link #wrap(PoolSpec, long, long, IoBackend)}): for the backends whose device
     * pools are host memory, cpu and auto without a GPU or NPU (a CPU-only engine's KV cache,
     * tests). The buffer stays reachable while the pool is open and, after it is closed, until kvio
     * no longer uses its memory. Heap and read-only buffers are refused
     * (KvioInvalidArgumentException); on Java 22+ a view of a MemorySegment whose arena is closed
     * gives KvioClosedException, here and at every later use of the pool that would touch the
     * memory. On the device backends a ByteBuffer cannot be device memory: KvioUnsupportedException
     * (wrap the device addresses).
     */
    public static DeviceKvPool wrap(PoolSpec spec, ByteBuffer memory, IoBackend backend) {
        Objects.requireNonNull(spec, "spec");
        ensureHostMemory(backend, "wrap(PoolSpec, ByteBuffer, IoBackend)");
        KvPool.WrappableBuffer w =
                KvPool.wrappable(memory, "memory", "wrap(ByteBuffer)", "device pools");
        long handle;
        try {
            handle =
                    NativeBridge.poolWrap(
                            spec, backend.deviceMemoryKind(), Kvio.HOST_DEVICE, w.address, w.bytes);
        } catch (KvioException e) {
            throw KvioException.renamed(e, "sizeBytes", "memory.remaining()");
        }
        DeviceKvPool pool = new DeviceKvPool(spec, backend, handle, false);
        pool.keepReachable(memory, w.alive, "the ByteBuffer given to DeviceKvPool.wrap");
        return pool;
    }

    /**
     * Wraps one direct, writable ByteBuffer per component (K then V for mha), each from its
     * position to its limit, as {@link #wrap(PoolSpec, ByteBuffer, IoBackend)} does one buffer (and
     * {@link #wrapComponents(PoolSpec, long[], long, IoBackend)} addresses): the buffers must not
     * overlap, each at least a component's bytes.
     */
    public static DeviceKvPool wrapComponents(
            PoolSpec spec, ByteBuffer[] components, IoBackend backend) {
        return wrapBuffers(NativeBridge.WRAP_COMPONENTS, spec, components, "components", backend);
    }

    /**
     * Wraps one direct, writable ByteBuffer per layer of each component (layer_first only): {@code
     * layers[c * numLayers + l]} is component c, layer l, as {@link #wrapLayers(PoolSpec, long[],
     * long, IoBackend)} takes addresses and {@link #wrap(PoolSpec, ByteBuffer, IoBackend)} takes a
     * buffer.
     */
    public static DeviceKvPool wrapLayers(PoolSpec spec, ByteBuffer[] layers, IoBackend backend) {
        return wrapBuffers(NativeBridge.WRAP_LAYERS, spec, layers, "layers", backend);
    }

    private static DeviceKvPool wrapBuffers(
            NativeBridge.TableWrap wrap,
            PoolSpec spec,
            ByteBuffer[] buffers,
            String name,
            IoBackend backend) {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(buffers, name);
        String method = name.equals("layers") ? "wrapLayers" : "wrapComponents";
        ensureHostMemory(backend, method + "(PoolSpec, ByteBuffer[], IoBackend)");
        ByteBuffer[] kept = buffers.clone(); // the caller may reuse its array
        long[] addresses = new long[kept.length];
        BooleanSupplier[] alive = new BooleanSupplier[kept.length];
        long bytesEach = Long.MAX_VALUE;
        for (int i = 0; i < kept.length; i++) {
            KvPool.WrappableBuffer w =
                    KvPool.wrappable(
                            kept[i],
                            name + "[" + i + "]",
                            method + "(ByteBuffer[])",
                            "device pools");
            addresses[i] = w.address;
            alive[i] = w.alive;
            bytesEach = Math.min(bytesEach, w.bytes); // each must hold bytesEach: the shortest
        }
        long handle;
        try {
            handle =
                    NativeBridge.poolWrapTable(
                            wrap,
                            spec,
                            backend.deviceMemoryKind(),
                            Kvio.HOST_DEVICE,
                            addresses,
                            kept.length == 0 ? 0 : bytesEach);
        } catch (KvioException e) {
            throw KvioException.renamed(
                    e,
                    "bytes_each",
                    "bytesEach",
                    "bytesEach",
                    "the smallest " + name + "[i].remaining()",
                    name.equals("layers") ? "layerAddresses" : "componentAddresses",
                    name);
        }
        DeviceKvPool pool = new DeviceKvPool(spec, backend, handle, false);
        boolean mortal = false; // a view of a MemorySegment, whose arena can close (Java 22+)
        for (BooleanSupplier a : alive) mortal |= a != null;
        pool.keepReachable(
                kept,
                mortal
                        ? () -> {
                            for (BooleanSupplier a : alive) {
                                if (a != null && !a.getAsBoolean()) return false;
                            }
                            return true;
                        }
                        : null,
                "a ByteBuffer given to DeviceKvPool." + method);
        return pool;
    }

    /** KvioUnsupportedException unless {@code backend}'s device pools are host memory. */
    private static void ensureHostMemory(IoBackend backend, String method) {
        Objects.requireNonNull(backend, "backend");
        if (backend.isDevice()) {
            throw new KvioUnsupportedException(
                    method
                            + ": io backend '"
                            + backend.userName()
                            + "' keeps device pools in "
                            + (backend.isCuda() ? "CUDA" : "Ascend NPU")
                            + " memory, and a ByteBuffer is host memory; wrap the device"
                            + " addresses (wrap(PoolSpec, long, long, IoBackend)), or use the cpu"
                            + " io backend for host memory");
        }
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
                        wrap, spec, backend.deviceMemoryKind(), d, addresses, bytesEach),
                false);
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
