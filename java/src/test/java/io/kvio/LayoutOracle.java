/*
 * The test oracle: byte offsets of (component, layer, token, head) in every pool layout, written
 * as naive formulas straight from the shapes in reference/hicache-semantics.md §2 and kvio.h,
 * plus helpers that fill buffers with seeded patterns and canaries, build the expected content
 * of a destination by plain row-by-row copying, and compare whole buffers. It shares no code with
 * kvio: geometry comes from plain numbers, never from PoolSpec or the native layout model. Used by
 * every transfer test in io.kvio.
 */
package io.kvio;

import static org.testng.Assert.fail;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

final class LayoutOracle {
    private LayoutOracle() {}

    /** The host and device layouts, by the shape of one component (D = headBytes, in bytes). */
    enum Shape {
        /** (L, P*ps, H, D). */
        LAYER_FIRST,
        /** (P*ps, L, H, D). */
        PAGE_FIRST,
        /** (P, L, ps, H, D). */
        PAGE_FIRST_DIRECT,
        /** (P, H, ps, L, D). */
        PAGE_HEAD;

        static Shape of(KvLayout layout) {
            return valueOf(layout.name());
        }
    }

    /** Plain-number geometry of a pool; components = 2 for MHA (K, V), 1 for MLA. */
    static final class Geometry {
        final int components;
        final Shape shape;
        final long layers;
        final long pages;
        final long pageSize;
        final long heads;
        final long headBytes;

        Geometry(
                int components,
                Shape shape,
                long layers,
                long pages,
                long pageSize,
                long heads,
                long headBytes) {
            this.components = components;
            this.shape = shape;
            this.layers = layers;
            this.pages = pages;
            this.pageSize = pageSize;
            this.heads = heads;
            this.headBytes = headBytes;
        }

        long tokens() {
            return pages * pageSize;
        }

        long rowBytes() {
            return heads * headBytes;
        }

        long componentBytes() {
            return layers * tokens() * rowBytes();
        }

        long totalBytes() {
            return components * componentBytes();
        }

        @Override
        public String toString() {
            return components
                    + "x"
                    + shape
                    + "(L="
                    + layers
                    + ",P="
                    + pages
                    + ",ps="
                    + pageSize
                    + ",H="
                    + heads
                    + ",hb="
                    + headBytes
                    + ")";
        }
    }

    /**
     * Byte offset of (component c, layer l, token t, head h) from the start of a single-buffer pool
     * whose components lie one after another.
     */
    static long offset(Geometry g, int c, long l, long t, long h) {
        final long L = g.layers;
        final long S = g.tokens();
        final long ps = g.pageSize;
        final long H = g.heads;
        final long D = g.headBytes;
        final long p = t / ps;
        final long s = t % ps;
        final long inComponent;
        switch (g.shape) {
            case LAYER_FIRST: // (L, S, H, D)
                inComponent = ((l * S + t) * H + h) * D;
                break;
            case PAGE_FIRST: // (S, L, H, D)
                inComponent = ((t * L + l) * H + h) * D;
                break;
            case PAGE_FIRST_DIRECT: // (P, L, ps, H, D)
                inComponent = (((p * L + l) * ps + s) * H + h) * D;
                break;
            case PAGE_HEAD: // (P, H, ps, L, D)
                inComponent = (((p * H + h) * ps + s) * L + l) * D;
                break;
            default:
                throw new AssertionError(g.shape);
        }
        return c * (L * S * H * D) + inComponent;
    }

    /** Where (c, l, t, h) lives inside some backing byte array. */
    interface Placement {
        Geometry geometry();

        long offset(int c, long l, long t, long h);
    }

    /** A pool in one buffer, components one after another, starting at byte {@code base}. */
    static Placement standard(Geometry g, long base) {
        return new Placement() {
            @Override
            public Geometry geometry() {
                return g;
            }

            @Override
            public long offset(int c, long l, long t, long h) {
                return base + LayoutOracle.offset(g, c, l, t, h);
            }
        };
    }

    /**
     * A layer_first pool whose (component, layer) buffers start at {@code layerBases[c * L + l]}
     * inside the backing array; each is (S, H, D).
     */
    static Placement layerTable(Geometry g, long[] layerBases) {
        if (g.shape != Shape.LAYER_FIRST)
            throw new IllegalArgumentException("layer tables are layer_first");
        return new Placement() {
            @Override
            public Geometry geometry() {
                return g;
            }

            @Override
            public long offset(int c, long l, long t, long h) {
                return layerBases[(int) (c * g.layers + l)] + (t * g.heads + h) * g.headBytes;
            }
        };
    }

    /**
     * A layer_first pool whose components start at {@code componentBases[c]}; each (L, S, H, D).
     */
    static Placement componentTable(Geometry g, long[] componentBases) {
        long[] layerBases = new long[(int) (g.components * g.layers)];
        for (int c = 0; c < g.components; c++) {
            for (long l = 0; l < g.layers; l++) {
                layerBases[(int) (c * g.layers + l)] =
                        componentBases[c] + l * g.tokens() * g.rowBytes();
            }
        }
        return layerTable(g, layerBases);
    }

    /**
     * Applies a transfer to {@code expected} the naive way: for each index pair, each layer j of
     * the layer map, each component and each head, copy headBytes bytes from the source snapshot.
     */
    static void applyTransfer(
            byte[] source,
            Placement src,
            byte[] expected,
            Placement dst,
            long[] srcIdx,
            long[] dstIdx,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers) {
        Geometry sg = src.geometry();
        Geometry dg = dst.geometry();
        if (sg.components != dg.components
                || sg.heads != dg.heads
                || sg.headBytes != dg.headBytes) {
            throw new IllegalArgumentException("oracle: row geometry differs");
        }
        if (srcIdx.length != dstIdx.length) throw new IllegalArgumentException("oracle: lengths");
        int hb = (int) sg.headBytes;
        for (int i = 0; i < srcIdx.length; i++) {
            for (long j = 0; j < numLayers; j++) {
                for (int c = 0; c < sg.components; c++) {
                    for (long h = 0; h < sg.heads; h++) {
                        long from = src.offset(c, srcLayerStart + j, srcIdx[i], h);
                        long to = dst.offset(c, dstLayerStart + j, dstIdx[i], h);
                        System.arraycopy(source, (int) from, expected, (int) to, hb);
                    }
                }
            }
        }
    }

    // ---- buffers ----

    static byte[] snapshot(ByteBuffer buffer) {
        ByteBuffer d = buffer.duplicate();
        d.clear();
        byte[] out = new byte[d.capacity()];
        d.get(out);
        return out;
    }

    static void write(ByteBuffer buffer, byte[] content) {
        ByteBuffer d = buffer.duplicate();
        d.clear();
        d.put(content);
    }

    /** Seeded pseudo-random bytes; distinct seeds give distinct content. */
    static byte[] pattern(int length, long seed) {
        byte[] out = new byte[length];
        new Random(seed).nextBytes(out);
        return out;
    }

    /** Fills the buffer with a seeded pattern and returns what was written. */
    static byte[] fill(ByteBuffer buffer, long seed) {
        byte[] content = pattern(buffer.capacity(), seed);
        write(buffer, content);
        return content;
    }

    /** Canary: a seeded pattern distinct from any data seed (data seeds are small). */
    static byte[] canary(ByteBuffer buffer, long seed) {
        return fill(buffer, 0x5EED_CA4A_0000_0000L ^ seed);
    }

    /** Compares the whole buffer against the expectation; reports the first differing bytes. */
    static void assertBufferEquals(ByteBuffer actualBuffer, byte[] expected, String what) {
        assertBytesEqual(snapshot(actualBuffer), expected, what);
    }

    static void assertBytesEqual(byte[] actual, byte[] expected, String what) {
        if (actual.length != expected.length) {
            fail(what + ": buffer length " + actual.length + " != expected " + expected.length);
        }
        if (Arrays.equals(actual, expected)) return;
        int first = -1;
        int count = 0;
        for (int i = 0; i < actual.length; i++) {
            if (actual[i] != expected[i]) {
                if (first < 0) first = i;
                count++;
            }
        }
        fail(
                String.format(
                        "%s: %d of %d bytes differ; first at byte %d (actual 0x%02x, expected 0x%02x)",
                        what,
                        count,
                        actual.length,
                        first,
                        actual[first] & 0xff,
                        expected[first] & 0xff));
    }

    /** Like {@link #assertBytesEqual} but names the (c, l, t, h) of the first wrong row. */
    static void assertPoolEquals(byte[] actual, byte[] expected, Placement where, String what) {
        if (Arrays.equals(actual, expected)) return;
        Geometry g = where.geometry();
        for (int c = 0; c < g.components; c++) {
            for (long l = 0; l < g.layers; l++) {
                for (long t = 0; t < g.tokens(); t++) {
                    for (long h = 0; h < g.heads; h++) {
                        int off = (int) where.offset(c, l, t, h);
                        for (int b = 0; b < g.headBytes; b++) {
                            if (actual[off + b] != expected[off + b]) {
                                fail(
                                        String.format(
                                                "%s: first wrong row at component %d, layer %d, token %d, head %d"
                                                        + " (byte %d)",
                                                what, c, l, t, h, off + b));
                            }
                        }
                    }
                }
            }
        }
        assertBytesEqual(actual, expected, what + " (outside every row)");
    }

    // ---- index sets ----

    /** Whole pages: n distinct random pages of a pool of {@code pages} pages, expanded to slots. */
    static long[] wholePages(Random rnd, long pages, long pageSize, int n) {
        long[] chosen = distinct(rnd, pages, n);
        long[] out = new long[(int) (n * pageSize)];
        int k = 0;
        for (long p : chosen) {
            for (long s = 0; s < pageSize; s++) out[k++] = p * pageSize + s;
        }
        return out;
    }

    /** n distinct random token slots out of {@code tokens}, in random order. */
    static long[] tokenGranular(Random rnd, long tokens, int n) {
        return distinct(rnd, tokens, n);
    }

    /**
     * Runs of consecutive slots that start at random (not page-aligned) positions and so cross page
     * boundaries; runs do not overlap each other. Total length n (n <= tokens / 2).
     */
    static long[] crossingRuns(Random rnd, long tokens, long pageSize, int n) {
        Set<Long> used = new LinkedHashSet<>();
        List<Long> out = new ArrayList<>();
        int guard = 0;
        while (out.size() < n) {
            if (++guard > 10_000) throw new IllegalStateException("cannot place runs");
            long len = Math.min(n - out.size(), 1 + rnd.nextInt((int) Math.max(2, pageSize + 3)));
            long start;
            if (pageSize > 1 && rnd.nextBoolean()) {
                // start just before a page boundary so the run crosses it
                long page = 1 + rnd.nextInt((int) Math.max(1, tokens / pageSize - 1));
                start = page * pageSize - 1 - rnd.nextInt((int) Math.min(pageSize, 3));
            } else {
                start = (long) (rnd.nextDouble() * (tokens - len));
            }
            if (start < 0 || start + len > tokens) continue;
            boolean free = true;
            for (long t = start; t < start + len; t++) {
                if (used.contains(t)) free = false;
            }
            if (!free) continue;
            for (long t = start; t < start + len; t++) {
                used.add(t);
                out.add(t);
            }
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    private static long[] distinct(Random rnd, long range, int n) {
        if (n > range) throw new IllegalArgumentException(n + " distinct of " + range);
        long[] all = new long[(int) range];
        for (int i = 0; i < range; i++) all[i] = i;
        for (int i = 0; i < n; i++) {
            int j = i + rnd.nextInt((int) range - i);
            long tmp = all[i];
            all[i] = all[j];
            all[j] = tmp;
        }
        return Arrays.copyOf(all, n);
    }
}
