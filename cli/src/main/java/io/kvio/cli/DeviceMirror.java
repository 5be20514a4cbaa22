/*
 * How `roundtrip` reads and writes its device pool: directly where the pool is host memory (the
 * cpu backend, auto without a GPU); else through a host copy of the same size (a cpu pool)
 * that the verifier fills and checks, moved whole to and from the device pool with kvio_pool_copy
 * (KvPool.copyFrom / copyTo), which is no transfer path and shares nothing with the copies being
 * checked.
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.IoBackend;
import io.kvio.KvPool;
import java.util.function.Function;

final class DeviceMirror implements AutoCloseable {
    private final DeviceKvPool device;
    private final DeviceKvPool shadow; // null when the device pool is host memory
    final PoolRegion region;

    DeviceMirror(DeviceKvPool device) {
        this(
                device,
                device.backend().isDevice()
                        ? DeviceKvPool.allocate(device.spec(), IoBackend.CPU)
                        : null,
                pool -> new PoolRegion(pool, 0));
    }

    /**
     * Reads and writes {@code device} through {@code shadow} (null: directly), seen as {@code
     * regionOf(shadow or device)}. It owns the shadow from here: closed at once if this constructor
     * fails.
     */
    DeviceMirror(DeviceKvPool device, DeviceKvPool shadow, Function<KvPool, PoolRegion> regionOf) {
        this.device = device;
        this.shadow = shadow;
        try {
            this.region = regionOf.apply(shadow != null ? shadow : device);
        } catch (RuntimeException | Error e) {
            Cleanup.closeAfter(e, shadow);
            throw e;
        }
    }

    /** Whether the device pool is device memory (the GPU path). */
    boolean onDevice() {
        return shadow != null;
    }

    /** After writing region: the device pool gets its content. */
    void push() {
        if (shadow != null) {
            region.copyTo(device);
        }
    }

    /** Before reading region: it gets the device pool's content. */
    void pull() {
        if (shadow != null) {
            region.copyFrom(device);
        }
    }

    @Override
    public void close() {
        if (shadow != null) {
            shadow.close();
        }
    }
}
