/*
 * The host cost of a small per-layer load through the Java API, measured by `bench` after each
 * backend's sweep (BenchRunner) on that backend's executor: the shape of kvio_cuda_bench's submit
 * cost (native/bench/cuda_transfer_bench.cpp measureSubmitCost), so that on a GPU machine the two
 * figures can be subtracted. One 64-token page of one layer, MHA 8 heads x 256 B, from host page 3
 * of a page_first host pool to device page 17 of a layer_first device pool (4 layers, 64 pages),
 * layer l to layer l with l cycling 0..3; pools allocated as the sweep allocates them (a pinned
 * host pool and device memory for a device backend, host memory for cpu and auto without a GPU).
 * "submit": the request built and submitted (host.load(device, l).hostIndices(..)
 * .deviceIndices(..).submit()), each call timed alone, in steps of 32 queued transfers awaited
 * after the step, after untimed steps that let the JIT compile the call path (kvio_cuda_bench has
 * one untimed step; Java needs more). "submit+await": submit then await, one at a time.
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvioExecutor;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;

final class BenchSubmitCost {
    private BenchSubmitCost() {}

    static final long PAGE_SIZE = 64;
    static final long HEADS = 8;
    static final long HEAD_BYTES = 256;
    static final long LAYERS = 4;
    static final long PAGES = 64;
    static final long HOST_PAGE = 3;
    static final long DEVICE_PAGE = 17;

    /** Transfers queued per step before they are awaited (kvio_cuda_bench's kStepLayers). */
    static final int STEP = 32;

    /**
     * Untimed steps before the timed ones. kvio_cuda_bench has one (the executor's spare events are
     * there after it); the Java call path also needs the JIT: on a 2-core VM with one untimed step
     * the cpu submit figure was 24-51 us in six runs, with 100 (3,200 transfers) 8-13 us in five
     * runs of seven (22-23 us in the other two).
     */
    static final int WARM_UP_STEPS = 100;

    /** Untimed submit+await transfers before the timed ones (after the submit steps). */
    static final int WARM_UP = 8;

    /** How many of each to time: at least `submits` timed submits, `completions` round trips. */
    record Counts(int submits, int completions) {
        static Counts of(boolean full) {
            return full ? new Counts(640, 500) : new Counts(320, 200);
        }

        /** Timed steps of STEP submits: enough for at least `submits`. */
        int steps() {
            return (submits + STEP - 1) / STEP;
        }
    }

    /** The shape in words, for the heading of the text output. */
    static final String SHAPE =
            "one page of one layer: mha, "
                    + HEADS
                    + " heads x "
                    + HEAD_BYTES
                    + " B, "
                    + PAGE_SIZE
                    + " tokens; page_first host pool -> layer_first device pool, "
                    + LAYERS
                    + " layers, "
                    + PAGES
                    + " pages";

    /** {submit, submit+await} microseconds per transfer, means, on this executor's backend. */
    static double[] measure(IoBackend backend, KvioExecutor executor, Counts counts) {
        PoolSpec deviceSpec =
                PoolSpec.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(LAYERS)
                        .pages(PAGES)
                        .pageSize(PAGE_SIZE)
                        .heads(HEADS)
                        .headBytes(HEAD_BYTES)
                        .build();
        try (DeviceKvPool device = DeviceKvPool.allocate(deviceSpec, backend);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout(KvLayout.PAGE_FIRST)
                                .pages(PAGES)
                                .executor(executor)
                                .build();
                TokenIndices h = TokenIndices.of(slots(HOST_PAGE));
                TokenIndices d = TokenIndices.of(slots(DEVICE_PAGE))) {
            BenchTiming.fill(host.buffer());
            if (!backend.isDevice()) { // host memory: cpu, and auto without a GPU
                BenchTiming.fill(device.buffer());
            }
            Load load = l -> host.load(device, l).hostIndices(h).deviceIndices(d).submit();
            return new double[] {submitUs(load, counts.steps()), roundTripUs(load, counts)};
        }
    }

    /** One per-layer load of the measured page, submitted. */
    @FunctionalInterface
    private interface Load {
        Transfer submit(long layer);
    }

    /** The token slots of one page. */
    private static long[] slots(long page) {
        long[] s = new long[(int) PAGE_SIZE];
        for (int i = 0; i < s.length; i++) {
            s[i] = page * PAGE_SIZE + i;
        }
        return s;
    }

    /**
     * Mean microseconds of one submit call: steps of STEP queued transfers, each step awaited
     * before the next; WARM_UP_STEPS untimed, then `steps` timed.
     */
    private static double submitUs(Load load, int steps) {
        long nanos = 0;
        long layer = 0;
        Transfer[] queued = new Transfer[STEP];
        for (int step = -WARM_UP_STEPS; step < steps; step++) {
            try {
                for (int i = 0; i < STEP; i++) {
                    long t0 = System.nanoTime();
                    queued[i] = load.submit(layer);
                    long t1 = System.nanoTime();
                    if (step >= 0) {
                        nanos += t1 - t0;
                    }
                    layer = (layer + 1) % LAYERS;
                }
                for (Transfer t : queued) {
                    t.await();
                }
            } finally {
                // every transfer submitted is awaited and closed, also when one failed
                MatrixRunner.awaitAndClose(queued);
                java.util.Arrays.fill(queued, null);
            }
        }
        return nanos / 1e3 / ((long) steps * STEP);
    }

    /** Mean microseconds of submit then await, one at a time, after WARM_UP untimed. */
    private static double roundTripUs(Load load, Counts counts) {
        long nanos = 0;
        long layer = 0;
        for (int i = 0; i < WARM_UP + counts.completions(); i++) {
            long t0 = System.nanoTime();
            try (Transfer t = load.submit(layer)) {
                t.await();
                long t1 = System.nanoTime();
                if (i >= WARM_UP) {
                    nanos += t1 - t0;
                }
            }
            layer = (layer + 1) % LAYERS;
        }
        return nanos / 1e3 / counts.completions();
    }
}
