/*
 * The baseline `bench` compares each point with, measured in the same run on the same number of
 * bytes and cached per backend and size (kind() says which; the reports name it). cpu, and auto
 * without a GPU: a memcpy, bulk copies between two buffers kvio allocates the way it allocates
 * pools (the faster of one thread and one slice per io thread plus one on the calling thread, the
 * threads kvio's cpu executor copies a job of 512 KiB to 8 MiB on).
 * Device backends: one contiguous kvio transfer, layer_first to layer_first over all tokens.
 */
package io.kvio.cli;

import static io.kvio.cli.BenchTiming.fill;
import static io.kvio.cli.BenchTiming.time;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.Kvio;
import io.kvio.KvioExecutor;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

final class BenchBaseline {
    private final long layers;
    private final int reps;
    private final Map<String, double[]> cache = new HashMap<>();

    BenchBaseline(long layers, int reps) {
        this.layers = layers;
        this.reps = reps;
    }

    /** The baseline of backends that run in host memory (cpu, and auto without a GPU). */
    static final String MEMCPY = "memcpy";

    /** The baseline of device backends (and auto with a GPU). */
    static final String CONTIGUOUS = "contiguous";

    /**
     * Which baseline a backend is measured against on this machine, MEMCPY or CONTIGUOUS: the one
     * rule seconds() measures by and the reports (Markdown, CSV, JSON, SVG) name.
     */
    static String kind(IoBackend b) {
        return b.isDevice() ? CONTIGUOUS : MEMCPY; // auto: memcpy without a GPU
    }

    /** What the baseline of a backend (its kind()) is, for the report. */
    static String describe(IoBackend b, int threads) {
        return kind(b).equals(MEMCPY)
                ? MEMCPY
                        + " (bulk copies between two buffers allocated like kvio's pools: the"
                        + " faster of 1 thread and "
                        + (threads + 1)
                        + " threads, "
                        + threads
                        + (threads == 1 ? " io thread" : " io threads")
                        + " and the calling thread)"
                : "one contiguous kvio transfer (layer_first to layer_first, all tokens)";
    }

    /** {median, best} seconds of the baseline copy of the same bytes. */
    double[] seconds(
            IoBackend backend,
            KvioExecutor executor,
            PoolSpec deviceSpec,
            long count,
            Direction dir) {
        long bytes = count * layers * 2 * deviceSpec.rowBytes();
        boolean memcpy = kind(backend).equals(MEMCPY);
        String key = backend.userName() + " " + (memcpy ? "" : dir.userName + " ") + bytes;
        double[] cached = cache.get(key);
        if (cached != null) {
            return cached;
        }
        double[] result =
                memcpy
                        ? memcpy(executor, bytes)
                        : contiguous(backend, executor, deviceSpec, count, dir);
        cache.put(key, result);
        return result;
    }

    /**
     * The same bytes between two buffers kvio allocates the way it allocates pools (2 MiB aligned,
     * transparent huge pages), copied on the calling thread alone and split over as many threads as
     * kvio's executor has plus the calling thread (one slice each: kvio's cpu executor copies a job
     * of 512 KiB to 8 MiB on its workers and the submitting thread); the faster of the two is the
     * baseline (one thread wins on small copies, where handing work to threads costs more than it
     * saves).
     */
    private double[] memcpy(KvioExecutor executor, long bytes) {
        PoolSpec flat =
                PoolSpec.builder()
                        .kind(PoolKind.MLA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(1)
                        .pages(1)
                        .pageSize(1)
                        .heads(1)
                        .headBytes(bytes)
                        .build();
        try (DeviceKvPool srcPool = DeviceKvPool.allocate(flat, IoBackend.CPU);
                DeviceKvPool dstPool = DeviceKvPool.allocate(flat, IoBackend.CPU)) {
            ByteBuffer src = srcPool.buffer();
            ByteBuffer dst = dstPool.buffer();
            fill(src);
            fill(dst);
            double[] result =
                    time(
                            reps,
                            () -> {
                                src.clear();
                                dst.clear();
                                dst.put(src);
                            });
            double[] split = splitMemcpy(src, dst, bytes, executor.threads());
            return split[1] < result[1] ? split : result;
        }
    }

    /** The copy split into workers + 1 slices: one per worker, the last on the calling thread. */
    private double[] splitMemcpy(ByteBuffer src, ByteBuffer dst, long bytes, int workers) {
        List<Callable<Void>> slices = slices(src, dst, bytes, workers + 1);
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            return time(reps, () -> copySplit(pool, slices));
        } finally {
            pool.shutdownNow();
        }
    }

    /** {@code parts} slices of the copy of {@code bytes} from src to dst, in order. */
    static List<Callable<Void>> slices(ByteBuffer src, ByteBuffer dst, long bytes, int parts) {
        List<Callable<Void>> slices = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            int from = (int) (bytes * i / parts);
            int to = (int) (bytes * (i + 1) / parts);
            ByteBuffer in = src.slice(from, to - from);
            ByteBuffer out = dst.slice(from, to - from);
            slices.add(
                    () -> {
                        in.clear();
                        out.clear();
                        out.put(in);
                        return null;
                    });
        }
        return slices;
    }

    /**
     * Runs every slice but the last on {@code pool}, the last on the calling thread meanwhile, and
     * returns once all are copied. When a slice fails, it still returns only after every other
     * slice has finished (the caller frees the buffers next), then throws.
     */
    static void copySplit(ExecutorService pool, List<Callable<Void>> slices) {
        List<Future<Void>> others = new ArrayList<>();
        try {
            for (Callable<Void> s : slices.subList(0, slices.size() - 1)) {
                others.add(pool.submit(s));
            }
            slices.get(slices.size() - 1).call();
            for (Future<Void> f : others) {
                f.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        } finally {
            awaitAll(others);
        }
    }

    /**
     * Waits until every slice has finished, through interrupts (cancelling would not stop a copy
     * already running), and keeps the thread's interrupt status.
     */
    private static void awaitAll(List<Future<Void>> futures) {
        boolean interrupted = Thread.interrupted();
        for (Future<Void> f : futures) {
            while (true) {
                try {
                    f.get();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException | CancellationException e) {
                    break; // finished; the first failure is the one reported
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * One kvio transfer between pools that both hold exactly `count` tokens, so all tokens x all
     * layers is one contiguous run per component.
     */
    private double[] contiguous(
            IoBackend backend,
            KvioExecutor executor,
            PoolSpec deviceSpec,
            long count,
            Direction dir) {
        PoolSpec exact = deviceSpec.toBuilder().pages(count / BenchCommand.PAGE_SIZE).build();
        long[] all = new long[(int) count];
        for (int i = 0; i < all.length; i++) {
            all[i] = i;
        }
        try (DeviceKvPool dev = DeviceKvPool.allocate(exact, backend);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(dev)
                                .layout(KvLayout.LAYER_FIRST)
                                .executor(executor)
                                .build();
                TokenIndices a = TokenIndices.of(all)) {
            boolean backup = dir == Direction.BACKUP;
            return time(
                    reps,
                    () -> {
                        try (Transfer t =
                                Kvio.transfer(
                                        executor,
                                        backup ? dev : host,
                                        backup ? host : dev,
                                        a,
                                        a,
                                        0,
                                        0,
                                        layers)) {
                            t.await();
                        }
                    });
        }
    }
}
