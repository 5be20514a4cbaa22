/*
 * KvPool.prefault() (kvio_pool_prefault): the pool's bytes are kept, for memory kvio allocated
 * and for a wrapped direct ByteBuffer, and a closed pool is refused. That the pages are backed
 * afterwards is the kernel's to tell (mincore); native/tests/prefault_test.cpp checks it.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.expectThrows;

import java.nio.ByteBuffer;
import java.util.Random;
import org.testng.annotations.Test;

public class PrefaultTest {
    /** 2 layers x 64 pages x 16 slots x (K and V) x 4 heads x 256 B: 8 MiB. */
    private static final PoolSpec SPEC =
            PoolSpec.builder().layers(2).pages(64).pageSize(16).heads(4).headBytes(256).build();

    private static byte[] random(int bytes, long seed) {
        byte[] b = new byte[bytes];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    public void aPoolKvioAllocatedKeepsItsBytes() {
        try (DeviceKvPool pool = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            int size = (int) pool.regionBytes(0);
            byte[] written = random(12_345, 1);
            int offset = size / 2 + 100;
            pool.copyFrom(0, offset, ByteBuffer.wrap(written));
            pool.prefault();
            byte[] expected = new byte[size];
            System.arraycopy(written, 0, expected, offset, written.length);
            ByteBuffer actual = ByteBuffer.allocate(size);
            pool.copyTo(0, 0, actual);
            assertEquals(actual.array(), expected);
            pool.prefault(); // again: nothing left to do
        }
    }

    @Test
    public void aWrappedDirectBufferKeepsEveryByte() {
        ByteBuffer memory = ByteBuffer.allocateDirect((int) SPEC.totalBytes() + 300);
        byte[] content = random(memory.capacity(), 2);
        memory.put(0, content);
        ByteBuffer region = memory.slice(100, (int) SPEC.totalBytes());
        try (DeviceKvPool pool = DeviceKvPool.wrap(SPEC, region, IoBackend.CPU)) {
            pool.prefault();
        }
        byte[] after = new byte[memory.capacity()];
        memory.get(0, after);
        assertEquals(after, content);
    }

    @Test
    public void aClosedPoolIsRefused() {
        DeviceKvPool pool = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
        pool.close();
        expectThrows(KvioClosedException.class, pool::prefault);
    }
}
