/*
 * The expected content of a transfer's destination, built the naive way (head by head), the data
 * and canary patterns the pools are filled with, and the first difference between a pool's bytes
 * and the expectation. Callers decide how to fail: the core tests turn a description into a TestNG
 * failure, the CLI's matrix into a FAIL cell.
 */
package io.kvio.oracle;

import java.util.Arrays;
import java.util.Locale;
import java.util.Random;

public final class Oracle {
    private Oracle() {}

    /**
     * Applies a transfer to {@code expected} the naive way: for each index pair i, each layer j <
     * numLayers of the layer map (source layer srcLayerStart + j to destination layer dstLayerStart
     * + j), each component and each head, copy headBytes bytes from the source content.
     */
    public static void applyTransfer(
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
        if (srcIdx.length != dstIdx.length) {
            throw new IllegalArgumentException("oracle: index lists differ in length");
        }
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

    /** Seeded pseudo-random bytes (java.util.Random); distinct seeds give distinct content. */
    public static byte[] pattern(int length, long seed) {
        byte[] out = new byte[length];
        new Random(seed).nextBytes(out);
        return out;
    }

    /** A canary: a seeded pattern distinct from any data pattern with a small seed. */
    public static byte[] canary(int length, long seed) {
        return pattern(length, 0x5EED_CA4A_0000_0000L ^ seed);
    }

    /**
     * The first difference of a whole buffer, as "byte OFFSET: expected 0xEE, got 0xAA; N of M
     * bytes differ" (or "length A, expected E"), or null when equal.
     */
    public static String firstMismatch(byte[] actual, byte[] expected) {
        return describe(actual, expected, null);
    }

    /**
     * Like {@link #firstMismatch(byte[], byte[])}, naming the (component, layer, token, head, byte)
     * of the first differing byte in {@code where}: "byte OFFSET (component C, layer L, token T,
     * head H, byte B): ..." or "byte OFFSET (outside every row): ...".
     */
    public static String firstMismatch(byte[] actual, byte[] expected, Placement where) {
        return describe(actual, expected, where);
    }

    private static String describe(byte[] actual, byte[] expected, Placement where) {
        if (actual.length != expected.length) {
            return String.format(
                    Locale.ROOT, "length %d, expected %d", actual.length, expected.length);
        }
        int first = Arrays.mismatch(actual, expected);
        if (first < 0) {
            return null;
        }
        long count = 0;
        for (int i = first; i < actual.length; i++) {
            if (actual[i] != expected[i]) {
                count++;
            }
        }
        String location = "";
        if (where != null) {
            String at = where.locate(first);
            location = " (" + (at == null ? "outside every row" : at) + ")";
        }
        return String.format(
                Locale.ROOT,
                "byte %d%s: expected 0x%02x, got 0x%02x; %d of %d bytes differ",
                first,
                location,
                expected[first] & 0xff,
                actual[first] & 0xff,
                count,
                actual.length);
    }
}
