/*
 * The matrix's oracle: byte offsets of (component, layer, token, head) in every pool layout, as
 * naive formulas straight from the documented shapes, and the expected content of a destination
 * built by plain head-by-head copying. It shares no code with kvio (geometry comes from plain
 * numbers, never from PoolSpec or the native layout model); it is the CLI's copy of the test
 * oracle java/src/test/java/io/kvio/LayoutOracle.java, which the core module's tests use.
 */
package io.kvio.cli;

import java.util.Arrays;
import java.util.Locale;
import java.util.Random;

final class Oracle {
    private Oracle() {}

    /** The layouts by the shape of one component (D = headBytes, in bytes). */
    enum Shape {
        /** [L, P*ps, H, D]. */
        LAYER_FIRST,
        /** [P*ps, L, H, D]. */
        PAGE_FIRST,
        /** [P, L, ps, H, D]. */
        PAGE_FIRST_DIRECT,
        /** [P, H, ps, L, D]. */
        PAGE_HEAD
    }

    /** Plain-number geometry of a single-buffer pool; components: 2 for mha (K, V), 1 for mla. */
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

        long totalBytes() {
            return components * layers * tokens() * heads * headBytes;
        }

        /** Byte offset of (component c, layer l, token t, head h), components one after another. */
        long offset(int c, long l, long t, long h) {
            final long L = layers;
            final long S = tokens();
            final long ps = pageSize;
            final long H = heads;
            final long D = headBytes;
            final long p = t / ps;
            final long s = t % ps;
            final long inComponent;
            switch (shape) {
                case LAYER_FIRST: // [L, S, H, D]
                    inComponent = ((l * S + t) * H + h) * D;
                    break;
                case PAGE_FIRST: // [S, L, H, D]
                    inComponent = ((t * L + l) * H + h) * D;
                    break;
                case PAGE_FIRST_DIRECT: // [P, L, ps, H, D]
                    inComponent = (((p * L + l) * ps + s) * H + h) * D;
                    break;
                case PAGE_HEAD: // [P, H, ps, L, D]
                    inComponent = (((p * H + h) * ps + s) * L + l) * D;
                    break;
                default:
                    throw new IllegalStateException("no shape " + shape);
            }
            return c * (L * S * H * D) + inComponent;
        }

        /** The (c, l, t, h, byte) whose bytes hold {@code offset}, for messages; null if none. */
        String locate(long offset) {
            for (int c = 0; c < components; c++) {
                for (long l = 0; l < layers; l++) {
                    for (long t = 0; t < tokens(); t++) {
                        for (long h = 0; h < heads; h++) {
                            long o = offset(c, l, t, h);
                            if (offset >= o && offset < o + headBytes) {
                                return String.format(
                                        Locale.ROOT,
                                        "component %d, layer %d, token %d, head %d, byte %d",
                                        c,
                                        l,
                                        t,
                                        h,
                                        offset - o);
                            }
                        }
                    }
                }
            }
            return null;
        }
    }

    /**
     * Applies a transfer to {@code expected} the naive way: for each index pair, each layer j <
     * numLayers, each component and each head, copy headBytes bytes from the source content.
     */
    static void applyTransfer(
            byte[] source,
            Geometry src,
            byte[] expected,
            Geometry dst,
            long[] srcIdx,
            long[] dstIdx,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers) {
        int hb = (int) src.headBytes;
        for (int i = 0; i < srcIdx.length; i++) {
            for (long j = 0; j < numLayers; j++) {
                for (int c = 0; c < src.components; c++) {
                    for (long h = 0; h < src.heads; h++) {
                        long from = src.offset(c, srcLayerStart + j, srcIdx[i], h);
                        long to = dst.offset(c, dstLayerStart + j, dstIdx[i], h);
                        System.arraycopy(source, (int) from, expected, (int) to, hb);
                    }
                }
            }
        }
    }

    /** Seeded pseudo-random bytes; distinct seeds give distinct content. */
    static byte[] pattern(int length, long seed) {
        byte[] out = new byte[length];
        new Random(seed).nextBytes(out);
        return out;
    }

    /**
     * The first difference of a whole buffer, as "byte OFFSET (WHERE): expected 0xEE, got 0xAA (N
     * bytes differ)", or null when equal.
     */
    static String firstMismatch(byte[] actual, byte[] expected, Geometry where) {
        if (Arrays.equals(actual, expected)) {
            return null;
        }
        int first = Arrays.mismatch(actual, expected);
        long count = 0;
        for (int i = first; i < actual.length; i++) {
            if (actual[i] != expected[i]) {
                count++;
            }
        }
        String location = where.locate(first);
        return String.format(
                Locale.ROOT,
                "byte %d (%s): expected 0x%02x, got 0x%02x; %d of %d bytes differ",
                first,
                location == null ? "outside every row" : location,
                expected[first] & 0xff,
                actual[first] & 0xff,
                count,
                actual.length);
    }

    /**
     * Slot lists for one transfer with the same length on both sides: {@code wholePages} distinct
     * whole pages (page-aligned runs) followed by {@code scattered} distinct single slots taken
     * from the remaining pages, in random order.
     */
    static long[] slots(Random rnd, long pages, long pageSize, int wholePages, int scattered) {
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

    private static long[] permutation(Random rnd, long n) {
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
}
