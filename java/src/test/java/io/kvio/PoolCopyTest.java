/*
 * KvPool.copyTo / copyFrom (issue 12, item 6): reading and writing a pool's memory through its
 * backend, on pools of every memory kind this machine has (cpu device pools and host pools here;
 * the CUDA path in CudaBackendTest's group, the Ascend path in native/tests/pool_copy_test.cpp
 * through the ACL host emulation). Direct and heap buffers, offsets, regions, and the rejections:
 * a range outside the region, a bad region, a read-only buffer, a closed pool.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.oracle.Oracle;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import org.testng.annotations.Test;

public class PoolCopyTest {
    private static final PoolSpec SPEC = PoolFixtures.smallMha(16, 64);

    private static ByteBuffer pattern(ByteBuffer b, int seed) {
        for (int i = b.position(); i < b.limit(); i++) {
            b.put(i, (byte) (i * 31 + seed));
        }
        return b;
    }

    @Test
    public void directBufferRoundTripOnACpuDevicePool() {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            int bytes = (int) device.regionBytes(0);
            ByteBuffer in = pattern(ByteBuffer.allocateDirect(1000), 5);
            device.copyFrom(0, 777, in);
            assertEquals(in.remaining(), 0, "copyFrom advances the position");
            ByteBuffer whole = ByteBuffer.allocateDirect(bytes);
            device.copyTo(whole);
            assertEquals(whole.position(), bytes);
            ByteBuffer view = device.buffer(); // host memory: the same bytes, seen directly
            for (int i = 0; i < bytes; i++) {
                byte expected = i >= 777 && i < 1777 ? (byte) ((i - 777) * 31 + 5) : 0;
                assertEquals(whole.get(i), expected, "byte " + i);
                assertEquals(view.get(i), expected, "byte " + i);
            }
        }
    }

    /**
     * Heap buffers with a position and a limit inside them: copyFrom writes exactly [position,
     * limit) of the source at the offset, copyTo fills exactly [position, limit) of the destination
     * from the offset. The whole pool is pattern-filled first and the destination canary-filled, so
     * a copy that ignores the position or the limit moves bytes that differ from the expectation;
     * both are compared whole.
     */
    @Test
    public void heapBuffersAndBufferPositionsAreHonoured() {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                HostKvPool host = HostKvPool.builder().forDevice(device).build()) {
            long seed = 40;
            for (KvPool pool : new KvPool[] {device, host}) {
                byte[] poolBytes = LayoutOracle.fill(pool.buffer(), seed++);
                byte[] source = Oracle.pattern(600, seed++);
                ByteBuffer in = ByteBuffer.wrap(source.clone());
                in.position(100).limit(500);
                pool.copyFrom(0, 64, in);
                assertEquals(in.position(), 500);
                assertEquals(in.limit(), 500, "copyFrom leaves the limit");
                byte[] expectedPool = poolBytes.clone();
                System.arraycopy(source, 100, expectedPool, 64, 400);
                LayoutOracle.assertBufferEquals(
                        pool.buffer(), expectedPool, pool + " after copyFrom of [100, 500)");
                LayoutOracle.assertBytesEqual(in.array(), source, "copyFrom's source");

                byte[] canary = Oracle.canary(420, seed++);
                ByteBuffer out = ByteBuffer.wrap(canary.clone());
                out.position(10).limit(410);
                pool.copyTo(0, 64, out);
                assertEquals(out.position(), 410);
                assertEquals(out.limit(), 410, "copyTo leaves the limit");
                byte[] expectedOut = canary.clone();
                System.arraycopy(expectedPool, 64, expectedOut, 10, 400);
                LayoutOracle.assertBytesEqual(
                        out.array(), expectedOut, pool + ": copyTo into [10, 410) of 420 bytes");
                LayoutOracle.assertBufferEquals(
                        pool.buffer(), expectedPool, pool + " after copyTo (its source)");
            }
        }
    }

    /**
     * Heap buffers go through 8 MiB staging chunks: a copy of two chunks and a part, from a
     * position and to an offset that are not chunk-aligned, lands whole, each byte once, in both
     * directions (the pool pattern-filled first, the copyTo destination canary-filled).
     */
    @Test
    public void heapCopiesSpanningSeveralStagingChunksAreWhole() {
        PoolSpec spec =
                PoolSpec.builder()
                        .kind(PoolKind.MLA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(1)
                        .pages(1100)
                        .pageSize(16)
                        .heads(1)
                        .headBytes(1024)
                        .build(); // 18 MiB in region 0
        int length = 2 * (8 << 20) + 12345;
        try (DeviceKvPool pool = DeviceKvPool.allocate(spec, IoBackend.CPU)) {
            assertTrue(pool.regionBytes(0) >= 7 + length, "the premise: " + pool.regionBytes(0));
            byte[] poolBytes = LayoutOracle.fill(pool.buffer(), 71);
            byte[] source = Oracle.pattern(length + 3, 72);
            ByteBuffer in = ByteBuffer.wrap(source.clone()).position(3);
            pool.copyFrom(0, 7, in);
            assertEquals(in.position(), length + 3);
            byte[] expectedPool = poolBytes.clone();
            System.arraycopy(source, 3, expectedPool, 7, length);
            LayoutOracle.assertBufferEquals(pool.buffer(), expectedPool, "after copyFrom");

            byte[] canary = Oracle.canary(length + 10, 73);
            ByteBuffer out = ByteBuffer.wrap(canary.clone()).position(5).limit(5 + length);
            pool.copyTo(0, 7, out);
            assertEquals(out.position(), 5 + length);
            byte[] expectedOut = canary.clone();
            System.arraycopy(expectedPool, 7, expectedOut, 5, length);
            LayoutOracle.assertBytesEqual(out.array(), expectedOut, "copyTo's destination");
        }
    }

    @Test
    public void everyRegionOfAComponentWrappedPoolIsReachable() {
        long componentBytes = NativeBridge.componentBytes(SPEC);
        ByteBuffer k = ByteBuffer.allocateDirect((int) componentBytes);
        ByteBuffer v = ByteBuffer.allocateDirect((int) componentBytes);
        long[] addresses = {NativeBridge.directAddress(k), NativeBridge.directAddress(v)};
        try (DeviceKvPool device =
                DeviceKvPool.wrapComponents(SPEC, addresses, componentBytes, IoBackend.CPU)) {
            device.copyFrom(1, componentBytes - 4, ByteBuffer.wrap(new byte[] {1, 2, 3, 4}));
            assertEquals(v.get((int) componentBytes - 1), 4);
            assertEquals(k.get((int) componentBytes - 1), 0);
        }
    }

    @Test
    public void rejectionsNameTheRangeAndCopyNothing() {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            long bytes = device.regionBytes(0);
            ByteBuffer eight = pattern(ByteBuffer.allocateDirect(8), 1);
            KvioOutOfRangeException e =
                    expectThrows(
                            KvioOutOfRangeException.class,
                            () -> device.copyFrom(0, bytes - 7, eight));
            assertTrue(
                    e.getMessage()
                            .contains(
                                    "copyFrom: bytes ["
                                            + (bytes - 7)
                                            + ", "
                                            + (bytes - 7)
                                            + " + 8) are outside region 0 of this device pool,"
                                            + " which has "
                                            + bytes
                                            + " bytes"),
                    e.getMessage());
            assertEquals(eight.position(), 0, "a rejected copy leaves the position");
            assertThrows(KvioOutOfRangeException.class, () -> device.copyTo(0, -1, eight));
            e = expectThrows(KvioOutOfRangeException.class, () -> device.copyTo(1, 0, eight));
            assertTrue(e.getMessage().contains("region 1 is out of range"), e.getMessage());
            assertThrows(
                    ReadOnlyBufferException.class,
                    () -> device.copyTo(ByteBuffer.allocate(8).asReadOnlyBuffer()));
            assertThrows(NullPointerException.class, () -> device.copyTo(null));
            ByteBuffer all = ByteBuffer.allocateDirect((int) bytes);
            device.copyTo(all);
            for (int i = 0; i < bytes; i++) {
                assertEquals(all.get(i), 0, "byte " + i);
            }
            device.copyFrom(0, bytes, ByteBuffer.allocate(0)); // empty, at the end: fine
            device.close();
            assertThrows(KvioClosedException.class, () -> device.copyTo(eight));
        }
    }

    @Test
    public void readOnlySourcesAreFine() {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            ByteBuffer src = pattern(ByteBuffer.allocateDirect(16), 3).asReadOnlyBuffer();
            device.copyFrom(src);
            ByteBuffer out = ByteBuffer.allocate(16);
            device.copyTo(out);
            assertEquals(out.flip(), src.flip());
        }
    }
}
