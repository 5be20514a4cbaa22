/*
 * NativeBridge.forEachChunk, the one loop of kvio's chunked copies: KvPool.copyTo/copyFrom through
 * heap buffers (8 MiB staging chunks) and NativeBridge.copyToNative (2^26 int64 values per
 * ByteBuffer view). Near Integer.MAX_VALUE a loop that advanced by the chunk size wrapped negative
 * once fewer than a chunk's items were left below Integer.MAX_VALUE (copyFrom then wrote the pool
 * and threw IndexOutOfBoundsException; copyToNative of a long[] over 2^31 - 2^26 values never
 * ended). Buffers and arrays that large do not fit a test JVM's heap, so the loop runs here with a
 * chunk action that records what it was given, for totals at and near the largest int.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class ForEachChunkTest {

    private static final int STAGING = 8 << 20; // KvPool.STAGING_BYTES
    private static final int VIEW = 1 << 26; // NativeBridge.CHUNK_LONGS

    /** The (from, length) pairs forEachChunk gives, in order; fails once there are too many. */
    private static List<long[]> chunks(int total, int max) {
        long most = (total + (long) max - 1) / max; // computed in long: no wrap
        List<long[]> seen = new ArrayList<>();
        NativeBridge.forEachChunk(
                total,
                max,
                (from, length) -> {
                    seen.add(new long[] {from, length});
                    assertTrue(seen.size() <= most, "the loop does not end");
                });
        return seen;
    }

    @DataProvider
    public Object[][] totals() {
        return new Object[][] {
            {Integer.MAX_VALUE, STAGING},
            {Integer.MAX_VALUE - 1, STAGING},
            {255 * STAGING + 1, STAGING}, // the smallest total whose old loop wrapped
            {256 * STAGING - 1, STAGING},
            {Integer.MAX_VALUE - 8, VIEW}, // the largest Java array
            {31 * VIEW + 1, VIEW},
            {3 * STAGING, STAGING}, // whole chunks
            {1, STAGING},
        };
    }

    /** Contiguous from 0, each 1 to max long, covering the total exactly, in ceil(total/max). */
    @Test(dataProvider = "totals")
    public void theChunksCoverEveryItemOnceAndEnd(int total, int max) {
        List<long[]> seen = chunks(total, max);
        long covered = 0;
        for (long[] chunk : seen) {
            assertEquals(chunk[0], covered, "chunks are contiguous");
            assertTrue(chunk[1] >= 1 && chunk[1] <= max, "a chunk of length " + chunk[1]);
            covered += chunk[1];
        }
        assertEquals(covered, total);
        assertEquals(seen.size(), (total + (long) max - 1) / max);
    }

    @Test
    public void theLastChunkBelowTheLargestIntIsWhatIsLeft() {
        List<long[]> seen = chunks(Integer.MAX_VALUE, STAGING);
        long[] last = seen.get(seen.size() - 1);
        assertEquals(last[0], 255L * STAGING); // 2139095040: adding STAGING passes the largest int
        assertEquals(last[1], 8388607L);
        assertEquals(seen.get(0)[1], (long) STAGING);
    }

    @Test
    public void nothingIsNoChunk() {
        assertEquals(chunks(0, STAGING).size(), 0);
    }
}
