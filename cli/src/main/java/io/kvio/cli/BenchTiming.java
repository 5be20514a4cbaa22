/*
 * How `bench` measures a copy: its buffers filled first (untouched memory reads as the kernel's
 * shared zero page), then a warm-up run and timed runs, reported as {median, best} seconds.
 */
package io.kvio.cli;

import io.kvio.oracle.Oracle;
import java.nio.ByteBuffer;
import java.util.Arrays;

final class BenchTiming {
    private BenchTiming() {}

    private static final byte[] CHUNK = Oracle.pattern(1 << 20, 0x6b76696fL);

    /**
     * Writes data into every page of a buffer before timing: untouched memory would read as the
     * kernel's shared zero page, which is faster than real memory.
     */
    static void fill(ByteBuffer buffer) {
        ByteBuffer b = buffer.duplicate();
        b.clear();
        while (b.remaining() > 0) {
            b.put(CHUNK, 0, Math.min(CHUNK.length, b.remaining()));
        }
    }

    /** {median, best} seconds of reps timed runs after one warm-up run. */
    static double[] time(int reps, Runnable r) {
        r.run();
        double[] s = new double[reps];
        for (int i = 0; i < reps; i++) {
            long t0 = System.nanoTime();
            r.run();
            s[i] = (System.nanoTime() - t0) / 1e9;
        }
        Arrays.sort(s);
        return new double[] {s[reps / 2], s[0]};
    }
}
