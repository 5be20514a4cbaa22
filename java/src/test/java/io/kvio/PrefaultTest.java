/*
 * KvPool.prefault() (kvio_pool_prefault): the pool's bytes are kept, for memory kvio allocated
 * and for a wrapped direct ByteBuffer, a read-only mapping is refused as an invalid argument, and
 * a closed pool is refused. That the pages are backed afterwards is the kernel's to tell
 * (mincore); native/tests/prefault_test.cpp checks it. Caller memory needs
 * madvise(MADV_POPULATE_WRITE) (Linux 5.14; not in gVisor): where the kernel lacks it, kvio
 * refuses to prefault caller memory (UNSUPPORTED, naming MADV_POPULATE_WRITE), and those tests
 * skip; any other failure still fails them.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.io.IOException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;
import org.testng.SkipException;
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

    /**
     * Rethrows {@code e} as a SkipException if it is kvio's refusal to prefault caller memory on a
     * kernel without madvise(MADV_POPULATE_WRITE); returns otherwise.
     */
    private static void skipIfTheKernelCannotPopulate(KvioException e) {
        if (e instanceof KvioUnsupportedException
                && e.getMessage() != null
                && e.getMessage().contains("MADV_POPULATE_WRITE")) {
            throw new SkipException(
                    "this kernel has no madvise(MADV_POPULATE_WRITE), which kvio needs to prefault"
                            + " caller memory: "
                            + e.getMessage());
        }
    }

    /** prefault() of a pool over caller memory, skipping where the kernel cannot populate it. */
    private static void prefaultCallerMemory(KvPool pool) {
        try {
            pool.prefault();
        } catch (KvioException e) {
            skipIfTheKernelCannotPopulate(e);
            throw e;
        }
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
            prefaultCallerMemory(pool);
        }
        byte[] after = new byte[memory.capacity()];
        memory.get(0, after);
        assertEquals(after, content);
    }

    /**
     * A read-only file mapping wrapped by address (a ByteBuffer wrap refuses read-only buffers
     * itself) cannot be backed for writing: KvioInvalidArgumentException, its bytes untouched.
     */
    @Test
    public void aReadOnlyMappingIsAnInvalidArgument() throws IOException {
        Path file = Files.createTempFile("kvio-prefault", ".bin");
        try {
            byte[] content = random((int) SPEC.totalBytes(), 3);
            Files.write(file, content);
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                MappedByteBuffer mapped =
                        channel.map(FileChannel.MapMode.READ_ONLY, 0, SPEC.totalBytes());
                long address = NativeBridge.directAddress(mapped);
                try (DeviceKvPool pool =
                        DeviceKvPool.wrap(SPEC, address, SPEC.totalBytes(), IoBackend.CPU)) {
                    KvioException e = expectThrows(KvioException.class, pool::prefault);
                    skipIfTheKernelCannotPopulate(e);
                    assertTrue(e instanceof KvioInvalidArgumentException, String.valueOf(e));
                    assertTrue(
                            e.getMessage().contains("cannot be backed for writing"),
                            e.getMessage());
                }
                byte[] after = new byte[content.length];
                mapped.get(0, after);
                assertEquals(after, content);
                Reference.reachabilityFence(mapped);
            }
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /**
     * Where the kernel has no madvise(MADV_POPULATE_WRITE) (injected here), the tests over caller
     * memory skip rather than fail: kvio refuses that memory as unsupported; kvio's own memory is
     * still prefaulted (touched page by page) with its bytes kept. Any other failure is not turned
     * into a skip.
     */
    @Test
    public void withoutPopulateCallerMemoryIsSkippedAndKviosOwnIsTouched() {
        ByteBuffer memory = ByteBuffer.allocateDirect((int) SPEC.totalBytes());
        try (DeviceKvPool wrapped = DeviceKvPool.wrap(SPEC, memory, IoBackend.CPU);
                DeviceKvPool own = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            try {
                KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_NO_POPULATE, 1);
                SkipException skip =
                        expectThrows(SkipException.class, () -> prefaultCallerMemory(wrapped));
                assertTrue(skip.getMessage().contains("MADV_POPULATE_WRITE"), skip.getMessage());
                byte[] written = random(4096, 4);
                own.copyFrom(0, 8192, ByteBuffer.wrap(written));
                KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_NO_POPULATE, 1);
                own.prefault();
                ByteBuffer back = ByteBuffer.allocate(written.length);
                own.copyTo(0, 8192, back);
                assertEquals(back.array(), written);
            } finally {
                KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_NO_POPULATE, 0);
            }
        }
        DeviceKvPool closed = DeviceKvPool.wrap(SPEC, memory, IoBackend.CPU);
        closed.close();
        expectThrows(KvioClosedException.class, () -> prefaultCallerMemory(closed));
        KvioUnsupportedException other = new KvioUnsupportedException("no such thing here");
        skipIfTheKernelCannotPopulate(other); // returns: not the kernel's refusal
    }

    @Test
    public void aClosedPoolIsRefused() {
        DeviceKvPool pool = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
        pool.close();
        expectThrows(KvioClosedException.class, pool::prefault);
    }
}
