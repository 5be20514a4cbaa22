/*
 * Checks the oracle itself: offsets of every layout for a tiny geometry (L=2, P=3, ps=2, H=2, D=4)
 * against numbers worked out by hand from the shapes' strides (not from the formulas), the
 * placements, the expected-destination builder, mismatch descriptions, patterns and indices.
 */
package io.kvio.oracle;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;

import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class OracleTest {
    // L=2, P=3, ps=2 (6 tokens), H=2, D=4: a component is 2*6*2*4 = 96 bytes, MHA (2 of them) 192.
    private static Geometry tiny(Shape shape) {
        return new Geometry(2, shape, 2, 3, 2, 2, 4);
    }

    @Test
    public void sizes() {
        Geometry g = tiny(Shape.PAGE_HEAD);
        assertEquals(g.tokens(), 6);
        assertEquals(g.rowBytes(), 8);
        assertEquals(g.componentBytes(), 96);
        assertEquals(g.totalBytes(), 192);
    }

    // Strides by hand (bytes): component 96 in every layout;
    //   layer_first       [L, P*ps, H, D]: layer 48, token 8, head 4
    //   page_first        [P*ps, L, H, D]: token 16, layer 8, head 4
    //   page_first_direct [P, L, ps, H, D]: page 32, layer 16, slot 8, head 4
    //   page_head         [P, H, ps, L, D]: page 32, head 16, slot 8, layer 4
    // A = (c=1, l=1, t=2 (page 1, slot 0), h=0); B = (c=0, l=0, t=5 (page 2, slot 1), h=1).
    // Each row: the shape, then the offsets of A, B and (c=0, l=1, t=0, h=0).
    @DataProvider
    public Object[][] handOffsets() {
        return new Object[][] {
            {Shape.LAYER_FIRST, 160L /* 96 + 48 + 2*8 */, 44L /* 5*8 + 4 */, 48L},
            {Shape.PAGE_FIRST, 136L /* 96 + 2*16 + 8 */, 84L /* 5*16 + 4 */, 8L},
            {Shape.PAGE_FIRST_DIRECT, 144L /* 96 + 32 + 16 */, 76L /* 2*32 + 8 + 4 */, 16L},
            {Shape.PAGE_HEAD, 132L /* 96 + 32 + 4 */, 88L /* 2*32 + 16 + 8 */, 4L},
        };
    }

    @Test(dataProvider = "handOffsets")
    public void offsetsByHand(Shape shape, long a, long b, long layerOne) {
        Geometry g = tiny(shape);
        assertEquals(g.offset(1, 1, 2, 0), a);
        assertEquals(g.offset(0, 0, 5, 1), b);
        assertEquals(g.offset(0, 1, 0, 0), layerOne);
    }

    /** Every layout places each head exactly once, tiling the whole buffer. */
    @Test
    public void everyLayoutTilesTheBuffer() {
        for (Shape shape : Shape.values()) {
            Geometry g = tiny(shape);
            Set<Long> seen = new HashSet<>();
            for (int c = 0; c < 2; c++) {
                for (long l = 0; l < 2; l++) {
                    for (long t = 0; t < 6; t++) {
                        for (long h = 0; h < 2; h++) {
                            long o = g.offset(c, l, t, h);
                            assertEquals(o % 4, 0, shape.toString());
                            assertTrue(o >= 0 && o < 192, shape + " " + o);
                            assertTrue(seen.add(o), shape + " twice " + o);
                        }
                    }
                }
            }
            assertEquals(seen.size(), 48, shape.toString());
            assertEquals(g.offset(0, 0, 0, 0), 0, shape.toString());
            assertEquals(g.offset(1, 1, 5, 1), 188, shape.toString());
        }
    }

    @Test
    public void userNames() {
        assertEquals(Shape.of("layer_first"), Shape.LAYER_FIRST);
        assertEquals(Shape.of("page_first"), Shape.PAGE_FIRST);
        assertEquals(Shape.of("page_first_direct"), Shape.PAGE_FIRST_DIRECT);
        assertEquals(Shape.of("page_head"), Shape.PAGE_HEAD);
        assertEquals(Shape.PAGE_HEAD.dims(), "[P, H, ps, L, D]");
        assertThrows(IllegalArgumentException.class, () -> Shape.of("LAYER_FIRST"));
    }

    @Test
    public void placements() {
        Geometry g = tiny(Shape.LAYER_FIRST);
        assertEquals(Placement.standard(g, 1000).offset(1, 1, 2, 0), 1160);
        // components at 1000 and 0: 1000 + layer 48 + token 2*8 + head 4
        Placement components = Placement.componentTable(g, new long[] {1000, 0});
        assertEquals(components.offset(0, 1, 2, 1), 1068);
        assertEquals(components.offset(1, 0, 0, 0), 0);
        // (c0 l0, c0 l1, c1 l0, c1 l1) at 500, 0, 300, 100
        Placement layers = Placement.layerTable(g, new long[] {500, 0, 300, 100});
        assertEquals(layers.offset(1, 1, 5, 1), 144); // 100 + 5*8 + 4
        assertEquals(layers.offset(0, 0, 1, 0), 508);
        assertThrows(
                IllegalArgumentException.class,
                () -> Placement.layerTable(tiny(Shape.PAGE_FIRST), new long[4]));
    }

    @Test
    public void locate() {
        Geometry g = tiny(Shape.PAGE_HEAD);
        assertEquals(g.locate(134), "component 1, layer 1, token 2, head 0, byte 2");
        assertNull(Placement.standard(g, 8).locate(4));
    }

    @Test
    public void applyTransferCopiesHeadsThroughTheLayerMap() {
        // 1 component, L=2, P=2, ps=1, H=1, D=2. Source layer_first [L, S, D]: (l1, t0) at 4,
        // (l1, t1) at 6. Destination page_first [S, L, D]: (t0, l0) at 0, (t1, l0) at 4.
        Geometry src = new Geometry(1, Shape.LAYER_FIRST, 2, 2, 1, 1, 2);
        Geometry dst = new Geometry(1, Shape.PAGE_FIRST, 2, 2, 1, 1, 2);
        byte[] source = {10, 11, 12, 13, 14, 15, 16, 17};
        byte[] expected = new byte[8];
        Oracle.applyTransfer(
                source, src, expected, dst, new long[] {1, 0}, new long[] {0, 1}, 1, 0, 1);
        assertEquals(expected, new byte[] {16, 17, 0, 0, 14, 15, 0, 0});
        assertThrows(
                IllegalArgumentException.class,
                () ->
                        Oracle.applyTransfer(
                                source, src, expected, dst, new long[] {1}, new long[0], 0, 0, 1));
    }

    @Test
    public void firstMismatch() {
        byte[] expected = {1, 2, 9, 8};
        assertNull(Oracle.firstMismatch(expected.clone(), expected));
        assertEquals(
                Oracle.firstMismatch(new byte[] {1, 2, 3, 4}, expected),
                "byte 2: expected 0x09, got 0x03; 2 of 4 bytes differ");
        Geometry g = new Geometry(1, Shape.LAYER_FIRST, 1, 1, 1, 2, 2);
        assertEquals(
                Oracle.firstMismatch(new byte[] {1, 2, 3, 8}, expected, g),
                "byte 2 (component 0, layer 0, token 0, head 1, byte 0): expected 0x09, got"
                        + " 0x03; 1 of 4 bytes differ");
        assertEquals(
                Oracle.firstMismatch(
                        new byte[] {0, 0, 0, 0, 0, 0},
                        new byte[] {7, 0, 0, 0, 0, 0},
                        Placement.standard(g, 2)),
                "byte 0 (outside every row): expected 0x07, got 0x00; 1 of 6 bytes differ");
        assertEquals(Oracle.firstMismatch(new byte[3], expected), "length 3, expected 4");
    }

    @Test
    public void patterns() {
        assertEquals(Oracle.pattern(64, 7), Oracle.pattern(64, 7));
        assertNotEquals(Oracle.pattern(64, 7), Oracle.pattern(64, 8));
        assertNotEquals(Oracle.canary(64, 7), Oracle.pattern(64, 7));
        // mix is SplittableRandom's finalizer: its first value is mix(seed + golden gamma)
        assertEquals(RowPattern.mix(42 + 0x9e3779b97f4a7c15L), new SplittableRandom(42).nextLong());
        RowPattern p = new RowPattern(42, 2, 4, 8, 24);
        long w = p.word(1, 3, 5, 2);
        for (int b = 0; b < 8; b++) {
            assertEquals(p.byteAt(1, 3, 5, 16 + b), (byte) (w >>> (8 * b)));
        }
        assertNotEquals(p.word(1, 3, 5, 2), p.word(1, 3, 6, 2));
        assertNotEquals(p.word(0, 3, 5, 2), new RowPattern(43, 2, 4, 8, 24).word(0, 3, 5, 2));
        assertEquals(p.word(0, 3, 5, 2), new RowPattern(42, 2, 4, 8, 24).word(0, 3, 5, 2));
        assertThrows(IllegalArgumentException.class, () -> p.word(2, 0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> p.word(0, 4, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> p.word(0, 0, 8, 0));
        assertThrows(IllegalArgumentException.class, () -> p.word(0, 0, 0, 3));
        assertThrows(IllegalArgumentException.class, () -> p.byteAt(0, 0, 0, 24));
        // more rows than 64 bits can tell apart
        assertThrows(
                IllegalArgumentException.class, () -> new RowPattern(1, 2, 1 << 20, 1L << 40, 64));
    }

    /** Every word of a small pool differs from every other (rows of 1 to 17 bytes). */
    @Test
    public void rowPatternWordsOfASmallPoolAreAllDistinct() {
        for (long rowBytes = 1; rowBytes <= 17; rowBytes++) {
            RowPattern p = new RowPattern(7, 2, 3, 50, rowBytes);
            Set<Long> seen = new HashSet<>();
            long words = (rowBytes + 7) / 8;
            for (int c = 0; c < 2; c++) {
                for (long l = 0; l < 3; l++) {
                    for (long t = 0; t < 50; t++) {
                        for (long w = 0; w < words; w++) {
                            assertTrue(
                                    seen.add(p.word(c, l, t, w)),
                                    "row " + rowBytes + ": " + c + " " + l + " " + t + " " + w);
                        }
                    }
                }
            }
            assertEquals(seen.size(), 2 * 3 * 50 * words);
        }
    }

    /**
     * The rows the first pattern confused: (component 1, layer 0, token t) and (component 0, layer
     * 1, token t + 65536) in a pool of over 65536 tokens; and large coordinates of a pool near
     * kvio's 2^62-byte limit (2^20 layers), sampled, with the neighbours where one coordinate
     * carries into the next.
     */
    @Test
    public void rowPatternTellsLargeCoordinatesApart() {
        RowPattern p = new RowPattern(42, 2, 4, 1 << 20, 64);
        for (long t : new long[] {0, 5, 70_000, (1 << 20) - 65_537}) {
            for (long w = 0; w < 8; w++) {
                assertNotEquals(p.word(1, 0, t, w), p.word(0, 1, t + 65_536, w), t + " " + w);
            }
        }
        long layers = 1 << 20;
        long tokens = 1L << 30;
        long rowBytes = 2048; // 2 x 2^20 x 2^30 x 2 KiB = 2^62 bytes
        RowPattern big = new RowPattern(3, 2, layers, tokens, rowBytes);
        long words = rowBytes / 8;
        SplittableRandom rnd = new SplittableRandom(11);
        Map<Long, String> seen = new HashMap<>();
        for (int i = 0; i < 200_000; i++) {
            int c = rnd.nextInt(2);
            long l = rnd.nextLong(layers);
            long t = rnd.nextLong(tokens);
            long w = rnd.nextLong(words);
            String at = c + " " + l + " " + t + " " + w;
            String before = seen.put(big.word(c, l, t, w), at);
            assertTrue(before == null || before.equals(at), at + " and " + before);
        }
        // a carry from one coordinate into the next gives a different word
        assertNotEquals(big.word(0, 0, 0, words - 1), big.word(0, 0, 1, 0));
        assertNotEquals(big.word(0, 0, tokens - 1, 0), big.word(0, 1, 0, 0));
        assertNotEquals(big.word(0, layers - 1, 0, 0), big.word(1, 0, 0, 0));
        assertNotEquals(big.word(1, 0, 0, 0), big.word(0, 0, 0, 0));
        assertNotEquals(big.word(1, 0, 65_536, 0), big.word(0, 1, 0, 0));
        assertNotEquals(big.word(1, layers - 1, tokens - 1, words - 1), big.word(0, 0, 0, 0));
    }

    @Test
    public void indices() {
        long[] perm = Indices.permutation(new Random(1), 10);
        long[] sorted = perm.clone();
        Arrays.sort(sorted);
        assertEquals(sorted, new long[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
        assertEquals(Indices.permutation(new Random(1), 10), perm);

        long[] slots = Indices.slots(new Random(2), 4, 2, 1, 3);
        assertEquals(slots.length, 5);
        assertEquals(slots[0] % 2, 0); // a whole page first
        assertEquals(slots[1], slots[0] + 1);
        assertDistinctBelow(slots, 8);

        long[] pages = Indices.wholePages(new Random(3), 5, 4, 2);
        assertEquals(pages.length, 8);
        assertDistinctBelow(pages, 20);
        assertDistinctBelow(Indices.tokenGranular(new Random(4), 30, 30), 30);
        assertDistinctBelow(Indices.crossingRuns(new Random(5), 64, 8, 20), 64);
        assertEquals(Indices.crossingRuns(new Random(5), 64, 8, 20).length, 20);

        long[] scattered = Indices.scatteredSlots(new SplittableRandom(6), new long[] {7, 2}, 4, 5);
        assertEquals(scattered.length, 5);
        for (long s : scattered) {
            assertTrue(s / 4 == 7 || s / 4 == 2, Arrays.toString(scattered));
        }
        assertDistinctBelow(scattered, 32);
        assertThrows(IllegalArgumentException.class, () -> Indices.distinct(new Random(), 3, 4));
    }

    private static void assertDistinctBelow(long[] values, long bound) {
        Set<Long> seen = new HashSet<>();
        for (long v : values) {
            assertTrue(v >= 0 && v < bound, Arrays.toString(values));
            assertTrue(seen.add(v), Arrays.toString(values));
        }
    }
}
