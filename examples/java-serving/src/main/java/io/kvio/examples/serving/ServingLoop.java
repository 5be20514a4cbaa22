/*
 * A serving loop over kvio's hierarchical cache (HierarchicalCache), on the cpu backend so it
 * runs anywhere: sequences arrive and come back for more turns in a skewed, seeded order; a new
 * sequence is prefilled (its KV written straight into device pages), and one whose KV was evicted
 * to the host pool under memory pressure is resumed: its layers are loaded back one transfer per
 * layer while a stand-in forward pass consumes layer i as soon as layer i's load completed. The
 * forward pass reads and checks every row of the layer (the attention's KV reads) and then
 * computes for a fixed time (the rest of the layer). The loop prints how much of the load time
 * the forward pass hid, and exits with status 1 if any byte came back wrong.
 *
 * Run: mvn verify runs it (ServingLoopTest); or, after mvn package,
 *   java -cp "examples/java-serving/target/classes:examples/java-serving/target/lib/*" \
 *       io.kvio.examples.serving.ServingLoop [--turns=N] [--compute-us=N] [--seed=N]
 */
package io.kvio.examples.serving;

import io.kvio.Transfer;
import io.kvio.examples.serving.HierarchicalCache.Sequence;
import io.kvio.examples.serving.HierarchicalCache.Tier;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

public final class ServingLoop {
    // The model: 16 layers, 8 KV heads x 128 dims in bf16 (256 bytes a head), pages of 16
    // tokens. One page of one layer is 16 tokens x (K + V) x 2 KiB = 64 KiB.
    static final long LAYERS = 16;
    static final long PAGE_SIZE = 16;
    static final long HEADS = 8;
    static final long HEAD_BYTES = 256;
    static final long ROW_BYTES = HEADS * HEAD_BYTES;
    // Memory: the device holds 4 sequences of 16 pages, the host 16. A layer of one sequence is
    // 1 MiB: above the cpu backend's 512 KiB limit for running a transfer inline on the
    // submitting thread, so the loads run on the copy thread while the forward pass computes.
    static final long DEVICE_PAGES = 64;
    static final long HOST_PAGES = 256;
    static final int PAGES_PER_SEQUENCE = 16;
    static final int SEQUENCES = 12;

    private final HierarchicalCache cache;
    private final LongBuffer deviceMemory; // the stand-in device memory, readable on cpu
    private final long computeNanos;
    private final long componentLongs;
    private final long layerLongs;
    private long rowsVerified;
    private long badRows;

    // what the resumes measured
    private int resumes;
    private long bytesLoaded;
    private long waitedNanos; // the forward pass blocked on a layer's load
    private long forwardNanos; // first load submitted to last layer computed
    private long busyNanos; // reading KV + computing

    private ServingLoop(HierarchicalCache cache, long computeNanos) {
        this.cache = cache;
        this.computeNanos = computeNanos;
        this.deviceMemory = cache.device.buffer().order(ByteOrder.nativeOrder()).asLongBuffer();
        long tokens = DEVICE_PAGES * PAGE_SIZE;
        this.layerLongs = tokens * ROW_BYTES / 8;
        this.componentLongs = LAYERS * layerLongs;
    }

    static final String USAGE = "usage: ServingLoop [--turns=N] [--compute-us=N] [--seed=N]";

    /**
     * Exits 0 if every byte came back right, 1 if not or if no sequence was resumed (too few turns
     * to check a load), 2 (with the usage) for a bad argument.
     */
    public static void main(String[] args) {
        System.exit(exitStatus(System.err, args));
    }

    /** What main exits with; a bad argument is printed to {@code err} with the usage. */
    static int exitStatus(java.io.PrintStream err, String... args) {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            err.println("ServingLoop: " + e.getMessage());
            err.println(USAGE);
            return 2;
        }
        return run(options);
    }

    /**
     * Runs the loop; 0 if every byte came back right, else 1, also when no sequence was resumed
     * (what main exits with). IllegalArgumentException for a bad argument, before anything runs.
     */
    public static int run(String... args) {
        return run(Options.parse(args));
    }

    /** The command line: turns, compute time per layer, seed. */
    record Options(int turns, long computeMicros, long seed) {
        static Options parse(String... args) {
            int turns = 96;
            long computeMicros = 400;
            long seed = 42;
            for (String a : args) {
                if (a.startsWith("--turns=")) {
                    turns = (int) number(a, "--turns=", 0, Integer.MAX_VALUE);
                } else if (a.startsWith("--compute-us=")) {
                    computeMicros = number(a, "--compute-us=", 0, Long.MAX_VALUE / 1000);
                } else if (a.startsWith("--seed=")) {
                    seed = number(a, "--seed=", Long.MIN_VALUE, Long.MAX_VALUE);
                } else {
                    throw new IllegalArgumentException("unknown argument '" + a + "'");
                }
            }
            return new Options(turns, computeMicros, seed);
        }

        private static long number(String arg, String prefix, long min, long max) {
            String text = arg.substring(prefix.length());
            long value;
            try {
                value = Long.parseLong(text);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        prefix + " takes a whole number, not '" + text + "'");
            }
            if (value < min || value > max) {
                throw new IllegalArgumentException(
                        prefix + text + " is out of range (" + min + " to " + max + ")");
            }
            return value;
        }
    }

    private static int run(Options options) {
        int turns = options.turns();
        long computeMicros = options.computeMicros();
        long seed = options.seed();
        try (HierarchicalCache cache =
                new HierarchicalCache(
                        HierarchicalCache.spec(LAYERS, DEVICE_PAGES, PAGE_SIZE, HEADS, HEAD_BYTES),
                        HOST_PAGES,
                        1)) {
            ServingLoop loop = new ServingLoop(cache, computeMicros * 1000);
            return loop.run(turns, new Random(seed)) ? 0 : 1;
        }
    }

    private boolean run(int turns, Random random) {
        System.out.printf(
                "kvio java-serving: cpu backend, %d layers, pages of %d tokens, rows of %d B (K and"
                        + " V); device pool %d pages (%d MiB), host pool %d pages; %d sequences of"
                        + " %d pages; forward pass: read + check the layer's KV, then %d us of"
                        + " compute%n",
                LAYERS,
                PAGE_SIZE,
                ROW_BYTES,
                DEVICE_PAGES,
                cache.device.regionBytes(0) >> 20,
                HOST_PAGES,
                SEQUENCES,
                PAGES_PER_SEQUENCE,
                computeNanos / 1000);
        long faultStart = System.nanoTime();
        cache.prefaultHostPool();
        System.out.printf(
                "host pool (%d MiB) faulted in at start-up: %.1f ms%n",
                cache.host.regionBytes(0) >> 20, (System.nanoTime() - faultStart) / 1e6);
        long loadAlone = calibrateLoadAlone();
        System.out.printf(
                "loads alone: one sequence's %d per-layer loads (%d MiB), awaited in turn, take"
                        + " %.2f ms (median of 5)%n",
                LAYERS, bytesOfSequence() >> 20, loadAlone / 1e6);

        List<Sequence> sequences = new ArrayList<>();
        int prefills = 0;
        int hits = 0;
        long start = System.nanoTime();
        for (int turn = 0; turn < turns; turn++) {
            // Skewed traffic: 3 hot conversations get half the turns.
            int id = random.nextInt(2) == 0 ? random.nextInt(3) : random.nextInt(SEQUENCES);
            while (sequences.size() <= id) {
                sequences.add(new Sequence(sequences.size(), PAGES_PER_SEQUENCE));
            }
            Sequence s = sequences.get(id);
            if (s.tier == null) {
                cache.placeOnDevice(s);
                prefill(s);
                prefills++;
            } else if (s.tier == Tier.DEVICE) {
                cache.touch(s);
                hits++;
            } else {
                resume(s, turn);
            }
        }
        long total = System.nanoTime() - start;
        System.out.printf(
                "%d turns in %.1f ms: %d prefills, %d hits on the device, %d resumes from the host;"
                        + " %d evictions backed up %d MiB in %.1f ms%n",
                turns,
                total / 1e6,
                prefills,
                hits,
                resumes,
                cache.evictions,
                cache.bytesBackedUp >> 20,
                cache.backupNanos / 1e6);
        if (resumes > 0) {
            double hidden = 1 - (double) waitedNanos / ((double) loadAlone * resumes);
            System.out.printf(
                    "overlap: %d resumes loaded %d MiB layer by layer; forward passes took %.1f ms,"
                            + " of which %.1f ms waiting for loads; loads alone would take %.1f"
                            + " ms: %.0f%% of the load time was hidden behind compute%n",
                    resumes,
                    bytesLoaded >> 20,
                    forwardNanos / 1e6,
                    waitedNanos / 1e6,
                    loadAlone * resumes / 1e6,
                    100 * Math.max(0, Math.min(1, hidden)));
        }
        System.out.printf(
                "verified %d rows: %s%n",
                rowsVerified, badRows == 0 ? "all correct" : badRows + " WRONG");
        if (resumes == 0) {
            System.out.printf(
                    "no sequence was resumed in %d turns: nothing was loaded back from the host"
                            + " pool to check (more turns, e.g. the default 96)%n",
                    turns);
        }
        return badRows == 0 && resumes > 0;
    }

    /**
     * A resume: place the sequence (evicting others), submit its per-layer loads, then run the
     * forward pass, layer i as soon as layer i's load completed.
     */
    private void resume(Sequence s, int turn) {
        cache.placeOnDevice(s);
        long start = System.nanoTime();
        Transfer[] loads = cache.submitLayerLoads(s);
        long waited = 0;
        long busy = 0;
        for (int layer = 0; layer < loads.length; layer++) {
            long w = System.nanoTime();
            loads[layer].await(); // layer's KV is on the device now
            long b = System.nanoTime();
            waited += b - w;
            forwardLayer(s, layer);
            busy += System.nanoTime() - b;
            bytesLoaded += loads[layer].bytes();
        }
        long forward = System.nanoTime() - start;
        cache.releaseHostPages(s);
        resumes++;
        waitedNanos += waited;
        forwardNanos += forward;
        busyNanos += busy;
        System.out.printf(
                "turn %2d: resume sequence %2d: %d layers, forward %.2f ms, waited %.2f ms%n",
                turn, s.id, loads.length, forward / 1e6, waited / 1e6);
    }

    /** Stand-in forward pass of one layer: read and check its KV rows, then compute. */
    private void forwardLayer(Sequence s, int layer) {
        long rowLongs = ROW_BYTES / 8;
        for (int c = 0; c < 2; c++) {
            for (int p = 0; p < s.pages; p++) {
                for (long slot = 0; slot < PAGE_SIZE; slot++) {
                    long token = p * PAGE_SIZE + slot;
                    long at = rowAt(c, layer, s.devicePages[p] * PAGE_SIZE + slot);
                    long expected = rowSeed(s.id, token, layer, c);
                    boolean ok = true;
                    for (long k = 0; k < rowLongs; k++) {
                        ok &= deviceMemory.get((int) (at + k)) == expected + k;
                    }
                    rowsVerified++;
                    if (!ok) badRows++;
                }
            }
        }
        long until = System.nanoTime() + computeNanos; // the rest of the layer (MLP, ...)
        while (System.nanoTime() < until) {
            Thread.onSpinWait();
        }
    }

    /** A prefill computes the sequence's KV on the device: here, a pattern written in place. */
    private void prefill(Sequence s) {
        long rowLongs = ROW_BYTES / 8;
        for (int layer = 0; layer < LAYERS; layer++) {
            for (int c = 0; c < 2; c++) {
                for (int p = 0; p < s.pages; p++) {
                    for (long slot = 0; slot < PAGE_SIZE; slot++) {
                        long at = rowAt(c, layer, s.devicePages[p] * PAGE_SIZE + slot);
                        long value = rowSeed(s.id, p * PAGE_SIZE + slot, layer, c);
                        for (long k = 0; k < rowLongs; k++) {
                            deviceMemory.put((int) (at + k), value + k);
                        }
                    }
                }
            }
        }
    }

    /**
     * The median time of one sequence's per-layer loads with nothing to overlap them with: a
     * scratch sequence is prefilled, evicted, then loaded back and awaited layer after layer.
     */
    private long calibrateLoadAlone() {
        long[] times = new long[5];
        Sequence scratch = new Sequence(-1, PAGES_PER_SEQUENCE);
        for (int i = 0; i < times.length; i++) {
            cache.placeOnDevice(scratch);
            prefill(scratch);
            cache.evictAll();
            cache.placeOnDevice(scratch);
            long start = System.nanoTime();
            for (Transfer t : cache.submitLayerLoads(scratch)) t.await();
            times[i] = System.nanoTime() - start;
            cache.releaseHostPages(scratch);
            cache.drop(scratch);
        }
        cache.resetCounters();
        Arrays.sort(times);
        return times[times.length / 2];
    }

    private long bytesOfSequence() {
        return LAYERS * PAGES_PER_SEQUENCE * PAGE_SIZE * 2 * ROW_BYTES;
    }

    /** Index (in longs) of the row of component c, layer l, device token slot t: layer_first. */
    private long rowAt(int c, long layer, long slot) {
        return c * componentLongs + layer * layerLongs + slot * (ROW_BYTES / 8);
    }

    private static long rowSeed(int sequence, long token, long layer, int c) {
        long h = sequence * 0x9E3779B97F4A7C15L;
        h ^= token * 0xC2B2AE3D27D4EB4FL + layer * 0x165667B19E3779F9L + c;
        return h * 0x94D049BB133111EBL;
    }
}
