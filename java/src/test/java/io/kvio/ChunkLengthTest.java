/*
 * The chunking of KvPool.copyTo/copyFrom through heap buffers (8 MiB staging chunks) and of
 * NativeBridge.copyToNative (2^26 int64 values per ByteBuffer view), near Integer.MAX_VALUE: a
 * loop that advanced by the chunk size wrapped negative once fewer than a chunk's bytes were left
 * below Integer.MAX_VALUE (copyFrom then wrote the pool and threw IndexOutOfBoundsException;
 * copyToNative of a long[] over 2^31 - 2^26 values never ended). Buffers and arrays that large do
 * not fit a test JVM's heap, so the loops' arithmetic is checked here as the loops run it: from 0,
 * advancing by chunkLength, for totals at and near the largest int.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class ChunkLengthTest {

    @DataProvider
    public Object[][] totals() {
        int staging = 8 << 20; // KvPool.STAGING_BYTES
        int view = 1 << 26; // NativeBridge.CHUNK_LONGS
        return new Object[][] {
            {Integer.MAX_VALUE, staging},
            {Integer.MAX_VALUE - 1, staging},
            {255 * staging + 1, staging}, // the smallest total whose old loop wrapped
            {256 * staging - 1, staging},
            {Integer.MAX_VALUE - 8, view}, // the largest Java array
            {31 * view + 1, view},
            {3 * staging, staging}, // whole chunks
            {1, staging},
        };
    }

    /**
     * The chunks the loop visits: contiguous from 0, each 1 to max long, covering total exactly.
     */
    @Test(dataProvider = "totals")
    public void theLoopCoversEveryByteOnceAndEnds(int total, int max) {
        long expectedChunks = (total + (long) max - 1) / max; // computed in long: no wrap
        long chunks = 0;
        long covered = 0;
        int n;
        for (int done = 0; done < total; done += n) { // the loops' own shape
            assertEquals(done, covered, "chunks are contiguous");
            n = NativeBridge.chunkLength(done, total, max);
            assertTrue(n >= 1 && n <= max, "chunk " + chunks + " has length " + n);
            covered += n;
            chunks++;
            assertTrue(chunks <= expectedChunks, "the loop does not end");
        }
        assertEquals(covered, total);
        assertEquals(chunks, expectedChunks);
    }

    @Test
    public void theLastChunkBelowTheLargestIntIsWhatIsLeft() {
        int staging = 8 << 20;
        int last = 255 * staging; // 2139095040: adding staging passes Integer.MAX_VALUE
        assertEquals(NativeBridge.chunkLength(last, Integer.MAX_VALUE, staging), 8388607);
        assertEquals(NativeBridge.chunkLength(0, Integer.MAX_VALUE, staging), staging);
        assertEquals(NativeBridge.chunkLength(10, 11, staging), 1);
    }
}
