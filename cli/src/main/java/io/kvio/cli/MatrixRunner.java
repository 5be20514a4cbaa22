/*
 * Runs one matrix cell through kvio's public API and checks it byte for byte against the oracle
 * (io.kvio.oracle, module oracle/): the source pool is filled with a seeded pattern and the
 * destination with a canary, the transfer runs (one call for all_layer, one call per layer for
 * per_layer), and then the WHOLE destination must equal the canary with exactly the oracle's rows
 * copied in, and the source must be unchanged. The device pool is in the row's form (DeviceForm:
 * kvio-allocated, or separate caller allocations per component or per layer). Host pools and
 * single-region cpu device pools are read and written through their ByteBuffers; other device
 * pools (device memory, or several regions) are staged through a layer_first host pool of the same
 * shape (an identity copy, all tokens and layers).
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvPool;
import io.kvio.Kvio;
import io.kvio.KvioException;
import io.kvio.KvioExecutor;
import io.kvio.KvioUnavailableException;
import io.kvio.KvioUnsupportedException;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Indices;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Shape;
import java.nio.ByteBuffer;
import java.util.EnumMap;
import java.util.Map;
import java.util.Random;

final class MatrixRunner implements AutoCloseable {
    /** Timed repetitions of a verified transfer; the cell reports the fastest. */
    static final int REPETITIONS = 3;

    private final Map<IoBackend, KvioExecutor> executors = new EnumMap<>(IoBackend.class);
    private final int threads;
    private final long seed;
    private boolean injectFault;

    /**
     * @param injectFault flip one destination byte of the first cell that runs (checks that a FAIL
     *     is reported and fails the run)
     */
    MatrixRunner(int threads, long seed, boolean injectFault) {
        this.threads = threads;
        this.seed = seed;
        this.injectFault = injectFault;
    }

    /** One executor per backend for the whole run, so cells do not time thread start-up. */
    private KvioExecutor executor(IoBackend backend) {
        return executors.computeIfAbsent(backend, b -> KvioExecutor.create(b, threads));
    }

    @Override
    public void close() {
        for (KvioExecutor e : executors.values()) {
            e.close();
        }
        executors.clear();
    }

    Cell run(MatrixConfig cfg, IoBackend backend, long cellSeed) {
        String name = backend.userName();
        String cause = backend.unavailabilityCause();
        if (cause != null) {
            return Cell.of(cfg, name, Cell.Status.UNAVAILABLE, cause);
        }
        try {
            Kvio.checkSupport(
                    cfg.kind,
                    cfg.layout,
                    backend,
                    cfg.granularity,
                    cfg.heads,
                    cfg.headBytes,
                    cfg.pageSize,
                    cfg.hostLayers,
                    cfg.deviceLayers,
                    cfg.hostLayerStart);
        } catch (KvioUnavailableException e) {
            return Cell.of(cfg, name, Cell.Status.UNAVAILABLE, e.getMessage());
        } catch (KvioException e) {
            return Cell.of(cfg, name, Cell.Status.UNSUPPORTED, e.getMessage());
        }
        try {
            return runTransfer(cfg, backend, seed ^ cellSeed);
        } catch (KvioUnsupportedException e) {
            return Cell.of(cfg, name, Cell.Status.UNSUPPORTED, e.getMessage());
        } catch (KvioUnavailableException e) {
            return Cell.of(cfg, name, Cell.Status.UNAVAILABLE, e.getMessage());
        } catch (KvioException e) {
            return Cell.of(
                    cfg, name, Cell.Status.FAIL, "error (" + e.status() + "): " + e.getMessage());
        }
    }

    private Cell runTransfer(MatrixConfig cfg, IoBackend backend, long cellSeed) {
        String name = backend.userName();
        int components = cfg.kind.components();
        Geometry devGeom =
                new Geometry(
                        components,
                        Shape.LAYER_FIRST,
                        cfg.deviceLayers,
                        cfg.devicePages(),
                        cfg.pageSize,
                        cfg.heads,
                        cfg.headBytes);
        Geometry hostGeom =
                new Geometry(
                        components,
                        Shape.of(cfg.layout.userName()),
                        cfg.hostLayers,
                        cfg.hostPages(),
                        cfg.pageSize,
                        cfg.heads,
                        cfg.headBytes);
        Random rnd = new Random(cellSeed);
        int wholePages = (int) Math.max(1, cfg.hostPages() / 3);
        int scattered = (int) Math.min(cfg.pageSize * (cfg.hostPages() - wholePages) / 2, 24);
        long[] hostIdx = Indices.slots(rnd, cfg.hostPages(), cfg.pageSize, wholePages, scattered);
        long[] devIdx = Indices.slots(rnd, cfg.devicePages(), cfg.pageSize, wholePages, scattered);
        PoolSpec devSpec =
                PoolSpec.builder()
                        .kind(cfg.kind)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(cfg.deviceLayers)
                        .pages(cfg.devicePages())
                        .pageSize(cfg.pageSize)
                        .heads(cfg.heads)
                        .headBytes(cfg.headBytes)
                        .build();
        KvioExecutor executor = executor(backend);
        try (DeviceForm.Carried carried = cfg.deviceForm.create(devSpec, backend);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(carried.pool)
                                .layout(cfg.layout)
                                .pages(cfg.hostPages())
                                .layerRange(cfg.hostLayerStart, cfg.hostLayers)
                                .executor(executor)
                                .build();
                PoolAccess deviceAccess = PoolAccess.of(carried.pool, executor);
                PoolAccess hostAccess = PoolAccess.of(host, executor);
                TokenIndices h = TokenIndices.of(hostIdx);
                TokenIndices d = TokenIndices.of(devIdx)) {
            DeviceKvPool device = carried.pool;
            boolean backup = cfg.direction == Direction.BACKUP;
            PoolAccess srcAccess = backup ? deviceAccess : hostAccess;
            PoolAccess dstAccess = backup ? hostAccess : deviceAccess;
            Geometry srcGeom = backup ? devGeom : hostGeom;
            Geometry dstGeom = backup ? hostGeom : devGeom;
            if (srcAccess.bytes() != srcGeom.totalBytes()
                    || dstAccess.bytes() != dstGeom.totalBytes()) {
                return Cell.of(
                        cfg,
                        name,
                        Cell.Status.FAIL,
                        "pool sizes differ from the shapes: source "
                                + srcAccess.bytes()
                                + " B (expected "
                                + srcGeom.totalBytes()
                                + "), destination "
                                + dstAccess.bytes()
                                + " B (expected "
                                + dstGeom.totalBytes()
                                + ")");
            }
            byte[] source = Oracle.pattern((int) srcGeom.totalBytes(), cellSeed);
            byte[] canary = Oracle.pattern((int) dstGeom.totalBytes(), ~cellSeed);
            srcAccess.write(source);
            dstAccess.write(canary);
            byte[] expected = canary.clone();
            long[] srcIdx = backup ? devIdx : hostIdx;
            long[] dstIdx = backup ? hostIdx : devIdx;
            long srcStart = backup ? cfg.hostLayerStart : 0;
            long dstStart = backup ? 0 : cfg.hostLayerStart;
            Oracle.applyTransfer(
                    source,
                    srcGeom,
                    expected,
                    dstGeom,
                    srcIdx,
                    dstIdx,
                    srcStart,
                    dstStart,
                    cfg.hostLayers);

            long t0 = System.nanoTime();
            long moved = transfer(cfg, executor, device, host, h, d);
            long nanos = System.nanoTime() - t0;

            long expectedBytes = hostIdx.length * cfg.hostLayers * components * cfg.rowBytes();
            if (moved != expectedBytes) {
                return Cell.of(
                        cfg,
                        name,
                        Cell.Status.FAIL,
                        "moved " + moved + " bytes, expected " + expectedBytes);
            }
            byte[] actual = dstAccess.read();
            if (injectFault) {
                injectFault = false;
                int at = (int) dstGeom.offset(0, dstStart, dstIdx[0], 0);
                actual[at] ^= 0x5a;
            }
            String mismatch = Oracle.firstMismatch(actual, expected, dstGeom);
            if (mismatch != null) {
                return Cell.of(
                        cfg,
                        name,
                        Cell.Status.FAIL,
                        (backup ? "host" : "device") + " pool (destination) " + mismatch);
            }
            String sourceChanged = Oracle.firstMismatch(srcAccess.read(), source, srcGeom);
            if (sourceChanged != null) {
                return Cell.of(
                        cfg,
                        name,
                        Cell.Status.FAIL,
                        (backup ? "device" : "host") + " pool (source) changed: " + sourceChanged);
            }
            // the destination is verified; time repetitions of the same (idempotent) transfer
            for (int i = 1; i < REPETITIONS; i++) {
                long t1 = System.nanoTime();
                transfer(cfg, executor, device, host, h, d);
                nanos = Math.min(nanos, System.nanoTime() - t1);
            }
            return Cell.pass(cfg, name, moved, nanos);
        }
    }

    /** Runs the cell's transfer: one call (all_layer) or one call per layer (per_layer). */
    private static long transfer(
            MatrixConfig cfg,
            KvioExecutor executor,
            DeviceKvPool device,
            HostKvPool host,
            TokenIndices h,
            TokenIndices d) {
        boolean backup = cfg.direction == Direction.BACKUP;
        long moved = 0;
        if (cfg.granularity == io.kvio.Granularity.ALL_LAYER) {
            try (Transfer t =
                    backup
                            ? host.backup(device).deviceIndices(d).hostIndices(h).submit()
                            : Kvio.transfer(
                                    executor,
                                    host,
                                    device,
                                    h,
                                    d,
                                    0,
                                    cfg.hostLayerStart,
                                    cfg.hostLayers)) {
                t.await();
                moved += t.bytes();
            }
        } else {
            Transfer[] transfers = new Transfer[(int) cfg.hostLayers];
            for (int j = 0; j < cfg.hostLayers; j++) {
                long deviceLayer = cfg.hostLayerStart + j;
                transfers[j] =
                        backup
                                ? Kvio.transfer(executor, device, host, d, h, deviceLayer, j, 1)
                                : host.load(device, deviceLayer)
                                        .hostIndices(h)
                                        .deviceIndices(d)
                                        .submit();
            }
            for (Transfer t : transfers) {
                t.await();
                moved += t.bytes();
                t.close();
            }
        }
        return moved;
    }

    /**
     * Reads and writes a whole pool: through its ByteBuffer when the host can address it, else
     * through a layer_first staging host pool and identity transfers on the pool's executor.
     */
    abstract static class PoolAccess implements AutoCloseable {
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

    private static final class Staged extends PoolAccess {
        private final DeviceKvPool device;
        private final KvioExecutor executor;
        private final HostKvPool staging;
        private final Direct stagingAccess;
        private final TokenIndices all;

        Staged(DeviceKvPool device, KvioExecutor executor) {
            this.device = device;
            this.executor = executor;
            this.staging =
                    HostKvPool.builder()
                            .forDevice(device)
                            .layout(KvLayout.LAYER_FIRST)
                            .executor(executor)
                            .build();
            this.stagingAccess = new Direct(staging);
            long[] slots = new long[(int) device.spec().tokens()];
            for (int i = 0; i < slots.length; i++) {
                slots[i] = i;
            }
            this.all = TokenIndices.of(slots);
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
