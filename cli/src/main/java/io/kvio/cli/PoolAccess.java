/*
 * Reads and writes a whole kvio pool for the matrix's checks (MatrixRunner): through its
 * ByteBuffer when the host can address it (host pools, single-region cpu device pools), else
 * through a layer_first staging host pool of the same shape and identity transfers (all tokens and
 * layers) on the pool's executor.
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvPool;
import io.kvio.Kvio;
import io.kvio.KvioExecutor;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import java.nio.ByteBuffer;
import java.util.function.Function;

abstract class PoolAccess implements AutoCloseable {
    abstract long bytes();

    abstract void write(byte[] content);

    abstract byte[] read();

    @Override
    public void close() {}

    static PoolAccess of(KvPool pool, KvioExecutor executor) {
        if (pool instanceof HostKvPool
                || (pool.backend() == IoBackend.CPU && pool.regionCount() == 1)) {
            return new Direct(pool);
        }
        return new Staged((DeviceKvPool) pool, executor);
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

    static final class Staged extends PoolAccess {
        private final DeviceKvPool device;
        private final KvioExecutor executor;
        private final HostKvPool staging;
        private final Direct stagingAccess;
        private final TokenIndices all;

        Staged(DeviceKvPool device, KvioExecutor executor) {
            this(device, executor, TokenIndices::of);
        }

        /**
         * {@code indicesOf} makes the list of all token slots; the staging pool allocated before it
         * is closed at once if this constructor fails.
         */
        Staged(
                DeviceKvPool device,
                KvioExecutor executor,
                Function<long[], TokenIndices> indicesOf) {
            this.device = device;
            this.executor = executor;
            this.staging =
                    HostKvPool.builder()
                            .forDevice(device)
                            .layout(KvLayout.LAYER_FIRST)
                            .executor(executor)
                            .build();
            try {
                this.stagingAccess = new Direct(staging);
                long[] slots = new long[(int) device.spec().tokens()];
                for (int i = 0; i < slots.length; i++) {
                    slots[i] = i;
                }
                this.all = indicesOf.apply(slots);
            } catch (RuntimeException | Error e) {
                Cleanup.closeAfter(e, staging);
                throw e;
            }
        }

        @Override
        long bytes() {
            return stagingAccess.bytes();
        }

        @Override
        void write(byte[] content) {
            stagingAccess.write(content);
            long layers = device.spec().numLayers();
            try (Transfer t = Kvio.transfer(executor, staging, device, all, all, 0, 0, layers)) {
                t.await();
            }
        }

        @Override
        byte[] read() {
            long layers = device.spec().numLayers();
            try (Transfer t = Kvio.transfer(executor, device, staging, all, all, 0, 0, layers)) {
                t.await();
            }
            return stagingAccess.read();
        }

        @Override
        public void close() {
            all.close();
            staging.close();
        }
    }
}
