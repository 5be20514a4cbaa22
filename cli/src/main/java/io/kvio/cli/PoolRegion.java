/*
 * One region of a kvio pool seen as ByteBuffers of at most 1 GiB each, little-endian, so that
 * `roundtrip` reads and writes pools larger than one ByteBuffer can address.
 */
package io.kvio.cli;

import io.kvio.KvPool;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

final class PoolRegion {
    private static final int SHIFT = 30;
    private static final long CHUNK = 1L << SHIFT;
    private static final long MASK = CHUNK - 1;
    private final ByteBuffer[] chunks;
    final long bytes;

    PoolRegion(KvPool pool, int region) {
        bytes = pool.regionBytes(region);
        int n = (int) ((bytes + CHUNK - 1) >>> SHIFT);
        chunks = new ByteBuffer[n];
        for (int i = 0; i < n; i++) {
            long off = (long) i << SHIFT;
            chunks[i] =
                    pool.slice(region, off, (int) Math.min(CHUNK, bytes - off))
                            .order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    long getLong(long pos) {
        ByteBuffer c = chunks[(int) (pos >>> SHIFT)];
        int off = (int) (pos & MASK);
        if (off + 8 <= c.capacity()) {
            return c.getLong(off);
        }
        long v = 0;
        for (int b = 0; b < 8; b++) {
            v |= (getByte(pos + b) & 0xffL) << (8 * b);
        }
        return v;
    }

    void putLong(long pos, long value) {
        ByteBuffer c = chunks[(int) (pos >>> SHIFT)];
        int off = (int) (pos & MASK);
        if (off + 8 <= c.capacity()) {
            c.putLong(off, value);
            return;
        }
        for (int b = 0; b < 8; b++) {
            putByte(pos + b, (byte) (value >>> (8 * b)));
        }
    }

    byte getByte(long pos) {
        return chunks[(int) (pos >>> SHIFT)].get((int) (pos & MASK));
    }

    void putByte(long pos, byte value) {
        chunks[(int) (pos >>> SHIFT)].put((int) (pos & MASK), value);
    }

    /** Copies this region whole into region 0 of {@code pool} (KvPool.copyFrom, synchronous). */
    void copyTo(KvPool pool) {
        for (int i = 0; i < chunks.length; i++) {
            pool.copyFrom(0, (long) i << SHIFT, chunks[i].duplicate().clear());
        }
    }

    /** Fills this region whole from region 0 of {@code pool} (KvPool.copyTo, synchronous). */
    void copyFrom(KvPool pool) {
        for (int i = 0; i < chunks.length; i++) {
            pool.copyTo(0, (long) i << SHIFT, chunks[i].duplicate().clear());
        }
    }

    /**
     * Nanoseconds of one contiguous copy of the first {@code bytes} of this region to (toPool) or
     * from region 0 of {@code pool}, at most 1 GiB (KvPool.copyFrom / copyTo: kvio_pool_copy).
     */
    long timeCopy(KvPool pool, long bytes, boolean toPool) {
        ByteBuffer b = chunks[0].duplicate().clear().limit((int) Math.min(bytes, CHUNK));
        long t0 = System.nanoTime();
        if (toPool) {
            pool.copyFrom(0, 0, b);
        } else {
            pool.copyTo(0, 0, b);
        }
        return System.nanoTime() - t0;
    }

    /**
     * Writes {@code period[p mod period.length]} at every byte p of [pos, pos + length): a pattern
     * repeated at fixed positions, so that byte p's expected value needs no snapshot. period.length
     * must be a power of two (at most CHUNK, which it then divides).
     */
    void fillPeriodic(long pos, long length, byte[] period) {
        if (Integer.bitCount(period.length) != 1 || period.length > CHUNK) {
            throw new IllegalArgumentException(
                    "the period is " + period.length + " bytes, not a power of two up to 1 GiB");
        }
        int mask = period.length - 1;
        while (length > 0) {
            ByteBuffer c = chunks[(int) (pos >>> SHIFT)];
            int off = (int) (pos & MASK);
            int from = (int) (pos & mask);
            int n = (int) Math.min(Math.min(length, c.capacity() - off), period.length - from);
            c.put(off, period, from, n);
            pos += n;
            length -= n;
        }
    }
}
