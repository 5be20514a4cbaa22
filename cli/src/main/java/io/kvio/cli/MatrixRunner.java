/*
 * Runs one matrix cell through kvio's public API and checks it byte for byte against the oracle
 * (io.kvio.oracle, module oracle/): the source pool is filled with a seeded pattern and the
 * destination with a canary, the transfer runs (one call for all_layer, one call per layer for
 * per_layer), and then the WHOLE destination must equal the canary with exactly the oracle's rows
 * copied in, and the source must be unchanged. The device pool is in the row's form (DeviceForm:
 * kvio-allocated, or separate caller allocations per component or per layer). Host pools are
 * read and written through their ByteBuffers; device pools per (component, layer) region at the
 * oracle's offsets, in the allocation that holds the region (the carrier, not kvio's address
 * table), with ByteBuffers over host memory and KvPool.copyFrom / copyTo over device memory, never
 * with a kvio transfer: PoolAccess. The cell's workload and the oracle's expectation are CellPlan.
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.Kvio;
import io.kvio.KvioException;
import io.kvio.KvioExecutor;
import io.kvio.KvioUnavailableException;
import io.kvio.KvioUnsupportedException;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import io.kvio.oracle.Oracle;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.function.LongSupplier;

final class MatrixRunner implements AutoCloseable {
    /** Timed repetitions of a verified transfer; the cell reports the fastest. */
    static final int REPETITIONS = 3;

    private final Map<IoBackend, KvioExecutor> executors = new EnumMap<>(IoBackend.class);
    private final int threads;
    private final long seed;
    private final DeviceForm.TableOrder tableOrder;
    private boolean injectFault;

    /**
     * @param injectFault flip one destination byte of the first cell that runs (checks that a FAIL
     *     is reported and fails the run)
     */
    MatrixRunner(int threads, long seed, boolean injectFault) {
        this(threads, seed, injectFault, DeviceForm.TableOrder.AS_IS);
    }

    /**
     * A test seam: wrapped device pools get their address tables in {@code tableOrder} (see
     * DeviceForm.create), so that a mis-wired pool can be shown to FAIL.
     */
    MatrixRunner(int threads, long seed, boolean injectFault, DeviceForm.TableOrder tableOrder) {
        this.threads = threads;
        this.seed = seed;
        this.injectFault = injectFault;
        this.tableOrder = tableOrder;
    }

    /** One executor per backend for the whole run, so cells do not time thread start-up. */
    private KvioExecutor executor(IoBackend backend) {
        return executors.computeIfAbsent(
                backend, b -> KvioExecutor.create(b, Converters.executorThreads(b, threads)));
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
                    cfg.kind(),
                    cfg.layout(),
                    backend,
                    cfg.granularity(),
                    cfg.heads(),
                    cfg.headBytes(),
                    cfg.pageSize(),
                    cfg.hostLayers(),
                    cfg.deviceLayers(),
                    cfg.hostLayerStart());
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
        CellPlan plan = new CellPlan(cfg, cellSeed);
        KvioExecutor executor = executor(backend);
        try (DeviceForm.Carried carried =
                        cfg.deviceForm().create(plan.deviceSpec(), backend, tableOrder);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(carried.pool)
                                .layout(cfg.layout())
                                .pages(cfg.hostPages())
                                .layerRange(cfg.hostLayerStart(), cfg.hostLayers())
                                .executor(executor)
                                .build();
                PoolAccess deviceAccess = PoolAccess.of(carried, plan.devGeom);
                PoolAccess hostAccess = PoolAccess.of(host);
                TokenIndices h = TokenIndices.of(plan.hostIdx);
                TokenIndices d = TokenIndices.of(plan.devIdx)) {
            PoolAccess src = plan.backup() ? deviceAccess : hostAccess;
            PoolAccess dst = plan.backup() ? hostAccess : deviceAccess;
            LongSupplier transfer = () -> transfer(cfg, executor, carried.pool, host, h, d);
            return verifyAndTime(plan, backend.userName(), src, dst, transfer);
        }
    }

    /**
     * Fills both pools, runs the transfer once and checks it; when it is right, times {@link
     * #REPETITIONS} runs in all and reports the fastest.
     */
    private Cell verifyAndTime(
            CellPlan plan, String name, PoolAccess src, PoolAccess dst, LongSupplier transfer) {
        String sizes = plan.sizeMismatch(src.bytes(), dst.bytes());
        if (sizes != null) {
            return Cell.of(plan.cfg, name, Cell.Status.FAIL, sizes);
        }
        byte[] source = plan.source();
        byte[] canary = plan.canary();
        src.write(source);
        dst.write(canary);
        byte[] expected = plan.expected(source, canary);

        long t0 = System.nanoTime();
        long moved = transfer.getAsLong();
        long nanos = System.nanoTime() - t0;

        String failure = check(plan, moved, src, dst, source, expected);
        if (failure != null) {
            return Cell.of(plan.cfg, name, Cell.Status.FAIL, failure);
        }
        // the destination is verified; time repetitions of the same (idempotent) transfer
        for (int i = 1; i < REPETITIONS; i++) {
            long t1 = System.nanoTime();
            transfer.getAsLong();
            nanos = Math.min(nanos, System.nanoTime() - t1);
        }
        return Cell.pass(plan.cfg, name, moved, nanos);
    }

    /**
     * The first thing wrong after the transfer, or null: the byte count, then the destination
     * against the oracle's expectation, then the source against what was written.
     */
    private String check(
            CellPlan plan,
            long moved,
            PoolAccess src,
            PoolAccess dst,
            byte[] source,
            byte[] expected) {
        long expectedBytes = plan.expectedBytes();
        if (moved != expectedBytes) {
            return "moved " + moved + " bytes, expected " + expectedBytes;
        }
        byte[] actual = dst.read();
        if (injectFault) {
            injectFault = false;
            int at = (int) plan.dstGeom().offset(0, plan.dstStart(), plan.dstIdx()[0], 0);
            actual[at] ^= 0x5a;
        }
        boolean backup = plan.backup();
        String mismatch = Oracle.firstMismatch(actual, expected, plan.dstGeom());
        if (mismatch != null) {
            return (backup ? "host" : "device") + " pool (destination) " + mismatch;
        }
        String sourceChanged = Oracle.firstMismatch(src.read(), source, plan.srcGeom());
        if (sourceChanged != null) {
            return (backup ? "device" : "host") + " pool (source) changed: " + sourceChanged;
        }
        return null;
    }

    /** Runs the cell's transfer: one call (all_layer) or one call per layer (per_layer). */
    private static long transfer(
            MatrixConfig cfg,
            KvioExecutor executor,
            DeviceKvPool device,
            HostKvPool host,
            TokenIndices h,
            TokenIndices d) {
        boolean backup = cfg.direction() == Direction.BACKUP;
        long moved = 0;
        if (cfg.granularity() == io.kvio.Granularity.ALL_LAYER) {
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
                                    cfg.hostLayerStart(),
                                    cfg.hostLayers())) {
                t.await();
                moved += t.bytes();
            }
        } else {
            moved =
                    eachLayer(
                            (int) cfg.hostLayers(),
                            j -> {
                                long deviceLayer = cfg.hostLayerStart() + j;
                                return backup
                                        ? Kvio.transfer(
                                                executor, device, host, d, h, deviceLayer, j, 1)
                                        : host.load(device, deviceLayer)
                                                .hostIndices(h)
                                                .deviceIndices(d)
                                                .submit();
                            });
        }
        return moved;
    }

    /**
     * Submits layer j's transfer for each j in [0, layers), then waits for each in order and adds
     * up their bytes. Whatever fails (a submit, an await), every transfer submitted is waited for
     * and closed before this returns or throws.
     */
    static long eachLayer(int layers, IntFunction<Transfer> submit) {
        Transfer[] transfers = new Transfer[layers];
        long moved = 0;
        try {
            for (int j = 0; j < layers; j++) {
                transfers[j] = submit.apply(j);
            }
            for (Transfer t : transfers) {
                t.await();
                moved += t.bytes();
            }
        } finally {
            awaitAndClose(transfers);
        }
        return moved;
    }

    /**
     * Waits for every transfer submitted (null: never submitted) and closes it, whatever failed
     * before: the pools are closed after this returns, and the carriers of a wrapped device pool
     * must outlive every copy. Never throws: when the transfers all completed, their errors were
     * already thrown by the awaits before it; otherwise the error in flight is the one to report.
     */
    static void awaitAndClose(Transfer[] transfers) {
        for (Transfer t : transfers) {
            if (t == null) {
                continue;
            }
            try {
                t.await();
            } catch (RuntimeException e) {
                // reported by the caller's own await, or secondary to the error in flight
            } finally {
                t.close();
            }
        }
    }
}
