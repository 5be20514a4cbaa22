/*
 * Token-slot index lists for transfers: whole pages, single scattered slots, runs that cross page
 * boundaries. Deterministic for a seeded generator (java.util.Random or SplittableRandom), so a
 * failing case can be replayed from its seed.
 */
package io.kvio.oracle;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.random.RandomGenerator;

public final class Indices {
    private Indices() {}

    /** 0 .. n-1 in random order (Fisher-Yates from the top). */
    public static long[] permutation(RandomGenerator rnd, long n) {
        long[] p = new long[(int) n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = (int) n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            long tmp = p[i];
            p[i] = p[j];
            p[j] = tmp;
        }
        return p;
    }

    /**
     * n distinct values of 0 .. range-1 in random order: the first n of a shuffle from the bottom
     * (a different sequence from {@link #permutation} for the same seed).
     */
    public static long[] distinct(RandomGenerator rnd, long range, int n) {
        if (n > range) {
            throw new IllegalArgumentException("oracle: " + n + " distinct of " + range);
        }
        long[] all = new long[(int) range];
        for (int i = 0; i < range; i++) {
            all[i] = i;
        }
        for (int i = 0; i < n; i++) {
            int j = i + rnd.nextInt((int) range - i);
            long tmp = all[i];
            all[i] = all[j];
            all[j] = tmp;
        }
        return Arrays.copyOf(all, n);
    }

    /** Whole pages: n distinct random pages of {@code pages}, expanded to their slots. */
    public static long[] wholePages(RandomGenerator rnd, long pages, long pageSize, int n) {
        long[] chosen = distinct(rnd, pages, n);
        long[] out = new long[(int) (n * pageSize)];
        int k = 0;
        for (long p : chosen) {
            for (long s = 0; s < pageSize; s++) {
                out[k++] = p * pageSize + s;
            }
        }
        return out;
    }

    /** n distinct random token slots out of {@code tokens}, in random order. */
    public static long[] tokenGranular(RandomGenerator rnd, long tokens, int n) {
        return distinct(rnd, tokens, n);
    }

    /**
     * Runs of consecutive slots that start at random (not page-aligned) positions and so cross page
     * boundaries; runs do not overlap each other. Total length n (n <= tokens / 2).
     */
    public static long[] crossingRuns(RandomGenerator rnd, long tokens, long pageSize, int n) {
        Set<Long> used = new LinkedHashSet<>();
        List<Long> out = new ArrayList<>();
        int guard = 0;
        while (out.size() < n) {
            if (++guard > 10_000) {
                throw new IllegalStateException("oracle: cannot place runs");
            }
            long len = Math.min(n - out.size(), 1 + rnd.nextInt((int) Math.max(2, pageSize + 3)));
            long start;
            if (pageSize > 1 && rnd.nextBoolean()) {
                // start just before a page boundary so the run crosses it
                long page = 1 + rnd.nextInt((int) Math.max(1, tokens / pageSize - 1));
                start = page * pageSize - 1 - rnd.nextInt((int) Math.min(pageSize, 3));
            } else {
                start = (long) (rnd.nextDouble() * (tokens - len));
            }
            if (start < 0 || start + len > tokens) {
                continue;
            }
            boolean free = true;
            for (long t = start; t < start + len; t++) {
                if (used.contains(t)) {
                    free = false;
                }
            }
            if (!free) {
                continue;
            }
            for (long t = start; t < start + len; t++) {
                used.add(t);
                out.add(t);
            }
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    /**
     * Slot lists for one transfer with the same length on both sides: {@code wholePages} distinct
     * whole pages (page-aligned runs) followed by {@code scattered} distinct single slots taken
     * from the remaining pages, in random order.
     */
    public static long[] slots(
            RandomGenerator rnd, long pages, long pageSize, int wholePages, int scattered) {
        long[] pageOrder = permutation(rnd, pages);
        long[] out = new long[(int) (wholePages * pageSize) + scattered];
        int k = 0;
        for (int i = 0; i < wholePages; i++) {
            for (long s = 0; s < pageSize; s++) {
                out[k++] = pageOrder[i] * pageSize + s;
            }
        }
        long rest = (pages - wholePages) * pageSize;
        long[] restOrder = permutation(rnd, rest);
        for (int i = 0; i < scattered; i++) {
            long r = restOrder[i];
            out[k++] = pageOrder[(int) (wholePages + r / pageSize)] * pageSize + r % pageSize;
        }
        return out;
    }

    /** {@code count} distinct random token slots of the given pages, in random order. */
    public static long[] scatteredSlots(
            RandomGenerator rnd, long[] pages, long pageSize, long count) {
        long[] slots = new long[(int) (pages.length * pageSize)];
        int k = 0;
        for (long p : pages) {
            for (long s = 0; s < pageSize; s++) {
                slots[k++] = p * pageSize + s;
            }
        }
        long[] perm = permutation(rnd, slots.length);
        long[] chosen = new long[(int) count];
        for (int i = 0; i < count; i++) {
            chosen[i] = slots[(int) perm[i]];
        }
        return chosen;
    }
}
