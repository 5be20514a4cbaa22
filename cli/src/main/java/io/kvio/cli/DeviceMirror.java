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

final class DeviceMirror implements AutoCloseable {
    private final DeviceKvPool device;
    private final DeviceKvPool shadow; // null when the device pool is host memory
    final PoolRegion region;

    DeviceMirror(DeviceKvPool device) {
        this.device = device;
        this.shadow =
                device.backend().isDevice()
                        ? DeviceKvPool.allocate(device.spec(), IoBackend.CPU)
                        : null;
        this.region = new PoolRegion(shadow != null ? shadow : device, 0);
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
