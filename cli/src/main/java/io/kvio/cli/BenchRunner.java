/*
 * Runs the points of a `bench` sweep (BenchCommand) on each io backend: for each row size and
 * index count, a layer_first device pool of twice the tokens, whole pages in seeded random order
 * on both sides, and per direction its baseline (BenchBaseline) and one timed transfer per host
 * layout (backup: all layers in one call; load: one call per layer). Points go into BenchResult;
 * after a backend's points, the submit cost of a one-page per-layer load on the same executor
 * (BenchSubmitCost), unless --no-submit-cost.
 */
package io.kvio.cli;

import static io.kvio.cli.BenchTiming.fill;
import static io.kvio.cli.BenchTiming.time;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvioExecutor;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import io.kvio.oracle.Indices;
import java.util.List;
import java.util.Locale;
import java.util.Random;

final class BenchRunner {
    /**
     * What to sweep: row sizes x index counts x host layouts, and how; submitCost: how many submits
     * to time after each backend's points (null: --no-submit-cost).
     */
    record Plan(
            List<Long> rows,
            List<Long> tokens,
            List<KvLayout> layouts,
            long layers,
            long maxMiB,
            int repeats,
            long seed,
            int threads,
            BenchSubmitCost.Counts submitCost) {
        /** Points per backend (row sizes x index counts x layouts). */
        long points() {
            return (long) rows.size() * tokens.size() * layouts.size();
        }

        /** Whether a point moves at most --max-bytes (K and V of all layers together). */
        boolean fits(long row, long count) {
            return moved(row, count, layers) <= maxMiB << 20;
        }
    }

    /** One point's pools and indices: the device pool and the token slots on both sides. */
    private record Pools(DeviceKvPool device, TokenIndices h, TokenIndices d) {}

    private final Plan plan;
    private final BenchResult result;
    private final Progress progress;
    private final BenchBaseline baseline;
    private long done;

    BenchRunner(Plan plan, BenchResult result, Progress progress) {
        this.plan = plan;
        this.result = result;
        this.progress = progress;
        this.baseline = new BenchBaseline(plan.layers, plan.repeats);
    }

    /**
     * Bytes a point moves: count tokens x layers x 2 (K and V) x row bytes; Long.MAX_VALUE where
     * that overflows.
     */
    static long moved(long row, long count, long layers) {
        try {
            return Math.multiplyExact(
                    Math.multiplyExact(Math.multiplyExact(count, layers), 2), row);
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    /** (heads, head bytes) of a row: heads of at least 64 bytes, at most 8 heads. */
    static long[] heads(long row) {
        long heads = Math.max(1, Math.min(8, row / 64));
        while (row % heads != 0) {
            heads--;
        }
        return new long[] {heads, row / heads};
    }

    /** Every point on each backend; an unavailable backend is listed with its cause. */
    void run(List<IoBackend> backends) {
        try {
            for (IoBackend b : backends) {
                String cause = b.unavailabilityCause();
                result.backends.add(new MatrixReport.Backend(b.userName(), cause));
                if (cause == null) {
                    runBackend(b);
                }
            }
        } finally {
            progress.clear();
        }
    }

    private void runBackend(IoBackend b) {
        try (KvioExecutor executor =
                KvioExecutor.create(b, Converters.executorThreads(b, plan.threads))) {
            // the device backends' executors run on a device stream or queue: no io threads
            result.threads.put(b.userName(), b.hasIoThreads() ? executor.threads() : null);
            result.baselines.put(b.userName(), BenchBaseline.describe(b, executor.threads()));
            done = 0;
            for (long row : plan.rows) {
                for (long count : plan.tokens) {
                    if (!plan.fits(row, count)) {
                        done += plan.layouts.size();
                        // as result.points counts: one per layout and direction
                        result.skipped += (long) plan.layouts.size() * Direction.values().length;
                        continue;
                    }
                    runPoint(b, executor, row, count);
                }
            }
            if (plan.submitCost != null) {
                progress.update("bench: " + b.userName() + " submit cost", 1, 1);
                double[] us = BenchSubmitCost.measure(b, executor, plan.submitCost);
                result.submitCosts.add(new BenchResult.SubmitCost(b.userName(), us[0], us[1]));
            }
        }
    }

    private void runPoint(IoBackend backend, KvioExecutor executor, long row, long count) {
        long[] hg = heads(row);
        long pages = count / BenchCommand.PAGE_SIZE;
        PoolSpec deviceSpec =
                PoolSpec.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(plan.layers)
                        .pages(2 * pages)
                        .pageSize(BenchCommand.PAGE_SIZE)
                        .heads(hg[0])
                        .headBytes(hg[1])
                        .build();
        Random rnd = new Random(plan.seed ^ row * 31 ^ count);
        long[] devSlots = Indices.slots(rnd, 2 * pages, BenchCommand.PAGE_SIZE, (int) pages, 0);
        long[] hostSlots = Indices.slots(rnd, pages, BenchCommand.PAGE_SIZE, (int) pages, 0);
        try (DeviceKvPool device = DeviceKvPool.allocate(deviceSpec, backend);
                TokenIndices d = TokenIndices.of(devSlots);
                TokenIndices h = TokenIndices.of(hostSlots)) {
            if (!backend.isDevice()) { // host memory: cpu, and auto without a GPU
                fill(device.buffer());
            }
            Pools pools = new Pools(device, h, d);
            for (Direction dir : Direction.values()) {
                double[] base = baseline.seconds(backend, executor, deviceSpec, count, dir);
                for (KvLayout layout : plan.layouts) {
                    progress.update(
                            String.format(
                                    Locale.ROOT,
                                    "bench: %s %s %s row %d B, %d tokens",
                                    backend.userName(),
                                    layout.userName(),
                                    dir.userName,
                                    row,
                                    count),
                            done + 1,
                            plan.points());
                    double[] seconds = timeLayout(executor, layout, pages, pools, dir);
                    result.points.add(point(backend, layout, dir, row, count, seconds, base));
                    if (dir == Direction.LOAD) {
                        done++;
                    }
                }
            }
        }
    }

    /** {median, best} seconds of the transfer into or out of a host pool of this layout. */
    private double[] timeLayout(
            KvioExecutor executor, KvLayout layout, long pages, Pools pools, Direction dir) {
        try (HostKvPool host =
                HostKvPool.builder()
                        .forDevice(pools.device)
                        .layout(layout)
                        .pages(pages)
                        .executor(executor)
                        .build()) {
            fill(host.buffer());
            return time(plan.repeats, () -> transfer(dir, host, pools));
        }
    }

    private BenchResult.Point point(
            IoBackend backend,
            KvLayout layout,
            Direction dir,
            long row,
            long count,
            double[] seconds,
            double[] base) {
        long[] hg = heads(row);
        return new BenchResult.Point(
                backend.userName(),
                layout.userName(),
                dir,
                BenchBaseline.kind(backend),
                row,
                hg[0],
                hg[1],
                count,
                plan.layers,
                count * plan.layers * 2 * row,
                seconds[0],
                seconds[1],
                base[0],
                base[1],
                result.threads.get(backend.userName()));
    }

    /** backup: all layers in one call; load: one call per layer, awaited together. */
    private void transfer(Direction dir, HostKvPool host, Pools pools) {
        if (dir == Direction.BACKUP) {
            try (Transfer t =
                    host.backup(pools.device)
                            .deviceIndices(pools.d)
                            .hostIndices(pools.h)
                            .submit()) {
                t.await();
            }
            return;
        }
        // every load submitted is awaited and closed, also when one fails
        MatrixRunner.eachLayer(
                (int) plan.layers,
                l ->
                        host.load(pools.device, l)
                                .hostIndices(pools.h)
                                .deviceIndices(pools.d)
                                .submit());
    }
}
