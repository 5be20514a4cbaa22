/*
 * TokenIndices.wrap(LongBuffer), TokenIndices.of(LongBuffer / IntBuffer) and
 * HostKvPool.Builder.wrap (issue 12, item 8): wrap views a direct native-order long buffer without
 * a copy and refuses any other buffer (a silent copy would leave an engine that refills its buffer
 * moving stale slots); of(...) copies every buffer (ints widened); the lists work in transfers; a
 * host pool can be built over a caller's direct ByteBuffer. The first-call case (no kvio call before wrap) runs in a fresh JVM: FirstCallMain.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotEquals;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.List;
import org.testng.annotations.Test;

public class TokenIndicesBufferTest {

    private static LongBuffer directLongs(long... values) {
        LongBuffer b =
                ByteBuffer.allocateDirect(values.length * 8)
                        .order(ByteOrder.nativeOrder())
                        .asLongBuffer();
        b.put(values).flip();
        return b;
    }

    @Test
    public void directNativeOrderLongBufferIsViewedFromItsPosition() {
        LongBuffer b = directLongs(7, 8, 9, 10, 11);
        b.position(1).limit(4);
        try (TokenIndices list = TokenIndices.wrap(b)) {
            assertEquals(list.size(), 3);
            assertEquals(list.get(0), 8);
            assertEquals(list.get(2), 10);
            b.put(2, 42); // a view: the list sees the caller's writes
            assertEquals(list.get(1), 42);
            assertEquals(list.address(), NativeBridge.directAddress(b) + 8);
        }
        assertEquals(b.position(), 1, "wrap leaves the position");
        assertEquals(b.get(2), 42, "close() does not free the caller's buffer");
    }

    @Test
    public void wrapRefusesBuffersItCannotViewAndSaysHowToMakeOne() {
        LongBuffer heap = LongBuffer.wrap(new long[] {1, 2, 3});
        // allocateDirect(n).asLongBuffer() without order(...): big-endian, not x86's or arm's order
        LongBuffer bigEndian =
                ByteBuffer.allocateDirect(24).asLongBuffer().put(new long[] {4, 5, 6});
        bigEndian.flip();
        assertEquals(bigEndian.order(), ByteOrder.BIG_ENDIAN);
        assertNotEquals(ByteOrder.nativeOrder(), ByteOrder.BIG_ENDIAN, "this test's premise");
        for (LongBuffer b : List.of(heap, bigEndian)) {
            KvioInvalidArgumentException e =
                    expectThrows(KvioInvalidArgumentException.class, () -> TokenIndices.wrap(b));
            String m = e.getMessage();
            assertTrue(
                    m.contains(
                            "ByteBuffer.allocateDirect(8 * n).order(ByteOrder.nativeOrder())"
                                    + ".asLongBuffer()"),
                    m);
            assertTrue(m.contains("TokenIndices.of(indices)"), m);
            assertTrue(m.contains(b.isDirect() ? "BIG_ENDIAN byte order" : "heap LongBuffer"), m);
            assertEquals(b.position(), 0, "the buffer's position is left");
            assertEquals(b.get(0), b == heap ? 1 : 4, "the buffer is left");
        }
    }

    @Test
    public void ofCopiesEveryBufferEvenOneWrapCouldView() {
        LongBuffer direct = directLongs(1, 2, 3);
        direct.position(1);
        try (TokenIndices copy = TokenIndices.of(direct);
                TokenIndices view = TokenIndices.wrap(direct)) {
            direct.put(1, 20); // an engine refilling its buffer for the next batch
            assertEquals(
                    copy.toString(), "TokenIndices{size=2, [2, 3]}", "a copy keeps its values");
            assertEquals(
                    view.toString(), "TokenIndices{size=2, [20, 3]}", "a view sees the refill");
            assertNotEquals(copy.address(), NativeBridge.directAddress(direct) + 8);
        }
        assertEquals(direct.position(), 1, "of leaves the position");
    }

    @Test
    public void otherLongBuffersAndIntBuffersAreCopiedByOf() {
        LongBuffer heap = LongBuffer.wrap(new long[] {1, 2, 3});
        LongBuffer swapped =
                ByteBuffer.allocateDirect(24)
                        .order(
                                ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN
                                        ? ByteOrder.BIG_ENDIAN
                                        : ByteOrder.LITTLE_ENDIAN)
                        .asLongBuffer()
                        .put(new long[] {4, 5, 6})
                        .flip();
        IntBuffer ints =
                ByteBuffer.allocateDirect(12)
                        .order(ByteOrder.nativeOrder())
                        .asIntBuffer()
                        .put(new int[] {7, 8, 9})
                        .flip();
        try (TokenIndices a = TokenIndices.of(heap);
                TokenIndices b = TokenIndices.of(swapped);
                TokenIndices c = TokenIndices.of(ints);
                TokenIndices d = TokenIndices.of(IntBuffer.wrap(new int[] {10, 11}, 1, 1))) {
            assertEquals(a.toString(), "TokenIndices{size=3, [1, 2, 3]}");
            assertEquals(b.toString(), "TokenIndices{size=3, [4, 5, 6]}");
            assertEquals(c.toString(), "TokenIndices{size=3, [7, 8, 9]}");
            assertEquals(d.toString(), "TokenIndices{size=1, [11]}");
            heap.put(0, 99);
            assertEquals(a.get(0), 1, "a copy");
            assertNotEquals(b.address(), NativeBridge.directAddress(swapped));
        }
        assertThrows(NullPointerException.class, () -> TokenIndices.wrap((LongBuffer) null));
        assertThrows(NullPointerException.class, () -> TokenIndices.of((LongBuffer) null));
        assertThrows(NullPointerException.class, () -> TokenIndices.of((IntBuffer) null));
        try (TokenIndices empty = TokenIndices.wrap(directLongs())) {
            assertEquals(empty.size(), 0);
        }
    }

    @Test
    public void wrappedBuffersDriveATransferIntoAHostPoolOverACallerBuffer() {
        PoolSpec spec =
                PoolSpec.builder()
                        .kind(PoolKind.MLA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(1)
                        .pages(4)
                        .pageSize(4)
                        .heads(1)
                        .headBytes(8)
                        .build();
        // The pool's 4 * 4 * 8 = 128 bytes lie between a 16-byte prefix (before the position) and
        // a 16-byte suffix (after the limit); the whole buffer is canary-filled and compared whole.
        // One layer, one head of 8 bytes: slot t is bytes [8t, 8t + 8) of either pool, whatever
        // the host layout.
        ByteBuffer hostMemory =
                ByteBuffer.allocateDirect(16 + 4 * 4 * 8 + 16).order(ByteOrder.nativeOrder());
        byte[] expectedHost = LayoutOracle.canary(hostMemory, 86);
        hostMemory.position(16).limit(16 + 4 * 4 * 8); // the pool is [position, limit)
        try (DeviceKvPool device = DeviceKvPool.allocate(spec, IoBackend.CPU);
                HostKvPool host = HostKvPool.builder().forDevice(device).wrap(hostMemory).build();
                TokenIndices d = TokenIndices.wrap(directLongs(5, 6));
                TokenIndices h =
                        TokenIndices.of(
                                ByteBuffer.allocateDirect(8)
                                        .order(ByteOrder.nativeOrder())
                                        .asIntBuffer()
                                        .put(new int[] {0, 15})
                                        .flip())) {
            assertEquals(host.regionAddress(0), NativeBridge.directAddress(hostMemory) + 16);
            assertEquals(host.regionBytes(0), 4 * 4 * 8);
            byte[] deviceBytes = LayoutOracle.fill(device.buffer(), 87);
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(hostMemory), expectedHost, "host memory after build()");
            Transfer t = host.backup(device).hostIndices(h).deviceIndices(d).submit();
            t.await();
            assertEquals(t.bytes(), 2 * 8);
            // device slot 5 -> host slot 0, device slot 6 -> host slot 15
            System.arraycopy(deviceBytes, 5 * 8, expectedHost, 16 + 0 * 8, 8);
            System.arraycopy(deviceBytes, 6 * 8, expectedHost, 16 + 15 * 8, 8);
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(hostMemory),
                    expectedHost,
                    "host memory (16-byte prefix, pool, 16-byte suffix)");
            LayoutOracle.assertBufferEquals(device.buffer(), deviceBytes, "device (source)");
        }
        assertEquals(hostMemory.position(), 16, "wrap leaves the position");
        assertEquals(hostMemory.limit(), 16 + 4 * 4 * 8, "wrap leaves the limit");
        assertThrows(
                KvioInvalidArgumentException.class,
                () -> HostKvPool.builder().wrap(ByteBuffer.allocate(64)));
        KvioInvalidArgumentException e =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () ->
                                HostKvPool.builder()
                                        .kind(PoolKind.MLA)
                                        .pages(4)
                                        .pageSize(4)
                                        .heads(1)
                                        .headBytes(8)
                                        .deviceLayers(1)
                                        .wrap(ByteBuffer.allocateDirect(64))
                                        .build());
        assertTrue(e.getMessage().contains("too small"), e.getMessage());
        expectThrows(
                KvioInvalidArgumentException.class,
                () ->
                        HostKvPool.builder()
                                .kind(PoolKind.MLA)
                                .pages(1)
                                .pageSize(1)
                                .heads(1)
                                .headBytes(8)
                                .deviceLayers(1)
                                .wrap(ByteBuffer.allocateDirect(0))
                                .build());
    }

    /** The first kvio call of a fresh JVM is TokenIndices.wrap(LongBuffer). */
    @Test
    public void wrapIsTheFirstKvioCallOfAFreshJvm() throws Exception {
        String output = FreshJvm.run(List.of(), FirstCallMain.class);
        assertTrue(output.contains("TokenIndices{size=3, [3, 1, 4]}"), output);
    }
}
