/*
 * Reads and writes a whole kvio pool for the matrix's checks (MatrixRunner), as the byte image the
 * oracle's geometry describes. A host pool through its ByteBuffer. A device pool (DeviceForm) per
 * (component, layer) region at the offsets the oracle computes (io.kvio.oracle.Geometry), each in
 * the allocation that really holds it: the kvio-allocated pool's one region, or the caller
 * allocation (carrier) of its component (per_component) or of its component and layer
 * (layer_table). Never through kvio's address table and never with a kvio transfer, so a pool whose
 * table points at the wrong allocation cannot judge itself: host memory (cpu) through ByteBuffers
 * over the allocation, device memory (CUDA, Ascend) with KvPool.copyFrom / copyTo (kvio_pool_copy,
 * a synchronous copy of a byte range of one region through the pool's backend), as roundtrip's
 * DeviceMirror does.
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.KvPool;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Shape;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

abstract class PoolAccess implements AutoCloseable {
    abstract long bytes();

    abstract void write(byte[] content);

    abstract byte[] read();

    @Override
    public void close() {}

    static PoolAccess of(HostKvPool pool) {
        return new Direct(pool);
    }

    /**
     * The device pool of {@code carried}, whose oracle geometry is {@code geometry} (layer_first,
     * the numbers the pool was built from).
     */
    static PoolAccess of(DeviceForm.Carried carried, Geometry geometry) {
        return new PerRegion(carried, geometry, false);
    }

    private static final class Direct extends PoolAccess {
        private final ByteBuffer buffer;

        Direct(KvPool pool) {
            this.buffer = pool.buffer();
        }

        @Override
        long bytes() {
            return buffer.capacity();
        }

        @Override
        void write(byte[] content) {
            ByteBuffer b = buffer.duplicate();
            b.clear();
            b.put(content);
        }

        @Override
        byte[] read() {
            ByteBuffer b = buffer.duplicate();
            b.clear();
            byte[] out = new byte[b.capacity()];
            b.get(out);
            return out;
        }
    }

    /**
     * One (component, layer) region: {@code length} bytes at {@code image} in the oracle's byte
     * image, at {@code offset} of region 0 of {@code holder}.
     */
    private record Part(KvPool holder, long offset, int image, int length) {}

    static final class PerRegion extends PoolAccess {
        private final long bytes;
        private final int imageBytes;
        private final List<Part> parts = new ArrayList<>();
        private final boolean alwaysCopy;

        /**
         * {@code alwaysCopy}: use KvPool.copyFrom / copyTo on host memory too (the device path, for
         * tests on machines without a device).
         */
        PerRegion(DeviceForm.Carried carried, Geometry g, boolean alwaysCopy) {
            this.alwaysCopy = alwaysCopy;
            if (g.shape != Shape.LAYER_FIRST) {
                throw new IllegalArgumentException("the matrix's device pools are layer_first");
            }
            long total = 0;
            for (int r = 0; r < carried.pool.regionCount(); r++) {
                total += carried.pool.regionBytes(r);
            }
            this.bytes = total;
            this.imageBytes = Math.toIntExact(g.totalBytes());
            // in a layer_first component, layer l's rows are one run of tokens x rowBytes bytes
            int length = Math.toIntExact(g.tokens() * g.rowBytes());
            for (int c = 0; c < g.components; c++) {
                for (long l = 0; l < g.layers; l++) {
                    int image = Math.toIntExact(g.offset(c, l, 0, 0));
                    switch (carried.form) {
                        case ALLOCATED: // one region, components one after another
                            parts.add(new Part(carried.pool, image, image, length));
                            break;
                        case PER_COMPONENT: // component c's allocation, from its layer 0
                            parts.add(
                                    new Part(
                                            carried.carriers.get(c),
                                            image - g.offset(c, 0, 0, 0),
                                            image,
                                            length));
                            break;
                        case LAYER_TABLE: // the allocation of (c, l)
                            parts.add(
                                    new Part(
                                            carried.carriers.get((int) (c * g.layers + l)),
                                            0,
                                            image,
                                            length));
                            break;
                        default:
                            throw new IllegalStateException("no device form " + carried.form);
                    }
                }
            }
        }

        @Override
        long bytes() {
            return bytes;
        }

        @Override
        void write(byte[] content) {
            for (Part p : parts) {
                ByteBuffer from = ByteBuffer.wrap(content, p.image, p.length);
                if (!alwaysCopy && hostMemory(p.holder)) {
                    p.holder.slice(0, p.offset, p.length).put(from);
                } else {
                    p.holder.copyFrom(0, p.offset, from);
                }
            }
        }

        @Override
        byte[] read() {
            byte[] out = new byte[imageBytes];
            for (Part p : parts) {
                ByteBuffer into = ByteBuffer.wrap(out, p.image, p.length);
                if (!alwaysCopy && hostMemory(p.holder)) {
                    into.put(p.holder.slice(0, p.offset, p.length));
                } else {
                    p.holder.copyTo(0, p.offset, into);
                }
            }
            return out;
        }

        /** Whether the host can address this pool's memory (cpu, auto without a GPU). */
        private static boolean hostMemory(KvPool pool) {
            return !(pool instanceof DeviceKvPool) || !pool.backend().isDevice();
        }
    }
}
