/*
 * DeviceKvPool over ByteBuffers a CPU-only engine owns: one buffer (at an odd offset), one per
 * component, one per layer of each component, on the cpu backend. Each is the destination of a
 * transfer from a kvio-allocated pool and then its source, and every byte of every buffer is
 * checked against the documented layer_first shape (io.kvio.oracle), canaries included. The
 * refusals: heap and read-only buffers, buffers too small, a device backend (a ByteBuffer is host
 * memory), and none of them changes a byte.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.PoolFixtures.Config;
import io.kvio.oracle.Geometry;
import java.nio.ByteBuffer;
import org.testng.Assert.ThrowingRunnable;
import org.testng.annotations.Test;

public class DeviceBufferWrapTest {
    private static final Config CONFIG = new Config(PoolKind.MHA, 3, 4, 4, 2, 24);
    private static final PoolSpec SPEC = CONFIG.spec(KvLayout.LAYER_FIRST);
    private static final Geometry G = CONFIG.deviceGeometry();
    private static final long[] FROM = {3, 9, 0, 14};
    private static final long[] TO = {6, 1, 15, 8};

    /**
     * A direct buffer of {@code bytes} at {@code offset} bytes into a larger one, canary-filled.
     */
    private static ByteBuffer buffer(long bytes, int offset, int canary) {
        ByteBuffer whole = ByteBuffer.allocateDirect(Math.toIntExact(bytes) + offset + 5);
        for (int i = 0; i < whole.capacity(); i++) whole.put(i, (byte) canary);
        whole.position(offset).limit(offset + Math.toIntExact(bytes));
        return whole.slice();
    }

    private static void pattern(ByteBuffer b, int seed) {
        for (int i = 0; i < b.capacity(); i++) b.put(i, (byte) (i * 7 + seed));
    }

    /** Byte {@code b} of row (c, l, t) as the layer_first shape places it in one buffer. */
    private static int at(ByteBuffer whole, int c, long l, long t, int b) {
        return whole.get(Math.toIntExact(G.offset(c, l, t, 0)) + b);
    }

    /**
     * The pool over {@code parts} (one buffer, or one per component or per layer) seen as one
     * layer_first buffer: the parts' bytes laid out in order, as the shape of a single buffer.
     */
    private static ByteBuffer joined(ByteBuffer[] parts) {
        ByteBuffer whole = ByteBuffer.allocate(Math.toIntExact(G.totalBytes()));
        long each = G.totalBytes() / parts.length;
        for (int p = 0; p < parts.length; p++) {
            for (int i = 0; i < each; i++) {
                whole.put(Math.toIntExact(p * each + i), parts[p].get(i));
            }
        }
        return whole;
    }

    /** Moves FROM -> TO into the wrapped pool and back out of it, checking every byte. */
    private static void roundTrip(DeviceKvPool wrapped, ByteBuffer[] parts) {
        try (KvioExecutor cpu = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool source = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool back = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            pattern(source.buffer(), 3);
            ByteBuffer before = joined(parts);
            Kvio.transfer(cpu, source, wrapped, FROM, TO, 0, 0, CONFIG.layers).await();
            ByteBuffer after = joined(parts);
            long row = G.rowBytes();
            for (int c = 0; c < CONFIG.components(); c++) {
                for (long l = 0; l < CONFIG.layers; l++) {
                    for (long t = 0; t < G.tokens(); t++) {
                        int moved = indexOf(TO, t);
                        for (int b = 0; b < row; b++) {
                            int expected =
                                    moved >= 0
                                            ? at(source.buffer(), c, l, FROM[moved], b)
                                            : at(before, c, l, t, b);
                            assertEquals(
                                    at(after, c, l, t, b),
                                    expected,
                                    "component "
                                            + c
                                            + " layer "
                                            + l
                                            + " token "
                                            + t
                                            + " byte "
                                            + b);
                        }
                    }
                }
            }
            // And out again: the wrapped buffers as a source.
            Kvio.transfer(cpu, wrapped, back, TO, FROM, 0, 0, CONFIG.layers).await();
            for (int c = 0; c < CONFIG.components(); c++) {
                for (long l = 0; l < CONFIG.layers; l++) {
                    for (long f : FROM) {
                        for (int b = 0; b < row; b++) {
                            assertEquals(
                                    at(back.buffer(), c, l, f, b), at(source.buffer(), c, l, f, b));
                        }
                    }
                }
            }
        }
    }

    private static int indexOf(long[] v, long x) {
        for (int i = 0; i < v.length; i++) if (v[i] == x) return i;
        return -1;
    }

    /** The canary bytes around a slice made by buffer() are untouched. */
    private static void assertCanaryAround(ByteBuffer slice, int offset, int canary) {
        // The slice's memory lies at `offset` in its parent; its neighbours are the parent's.
        ByteBuffer parent =
                NativeBridge.byteBuffer(
                        NativeBridge.directAddress(slice) - offset, slice.capacity() + offset + 5);
        for (int i = 0; i < offset; i++) assertEquals(parent.get(i), (byte) canary, "before " + i);
        for (int i = 0; i < 5; i++) {
            assertEquals(parent.get(offset + slice.capacity() + i), (byte) canary, "after " + i);
        }
    }

    @Test
    public void oneBufferAtAnOddOffset() {
        ByteBuffer memory = buffer(G.totalBytes(), 3, 0x5A);
        pattern(memory, 11);
        try (DeviceKvPool pool = DeviceKvPool.wrap(SPEC, memory, IoBackend.CPU)) {
            assertEquals(pool.backend(), IoBackend.CPU);
            roundTrip(pool, new ByteBuffer[] {memory});
        }
        assertCanaryAround(memory, 3, 0x5A);
    }

    @Test
    public void oneBufferPerComponent() {
        long each = G.totalBytes() / CONFIG.components();
        ByteBuffer[] parts = {buffer(each, 1, 0x11), buffer(each, 6, 0x22)};
        pattern(parts[0], 1);
        pattern(parts[1], 2);
        try (DeviceKvPool pool = DeviceKvPool.wrapComponents(SPEC, parts, IoBackend.CPU)) {
            roundTrip(pool, parts);
        }
        assertCanaryAround(parts[0], 1, 0x11);
        assertCanaryAround(parts[1], 6, 0x22);
    }

    @Test
    public void oneBufferPerLayerOfEachComponent() {
        int n = Math.toIntExact(CONFIG.components() * CONFIG.layers);
        long each = G.totalBytes() / n;
        ByteBuffer[] parts = new ByteBuffer[n];
        for (int i = 0; i < n; i++) {
            parts[i] = buffer(each, i % 4, 0x30 + i);
            pattern(parts[i], i);
        }
        try (DeviceKvPool pool = DeviceKvPool.wrapLayers(SPEC, parts.clone(), IoBackend.CPU)) {
            roundTrip(pool, parts);
        }
        for (int i = 0; i < n; i++) assertCanaryAround(parts[i], i % 4, 0x30 + i);
    }

    @Test
    public void refusalsNameTheProblemAndChangeNothing() {
        ByteBuffer small = buffer(G.totalBytes() - 1, 0, 0x44);
        KvioException tooSmall =
                expectThrows(
                        KvioException.class, () -> DeviceKvPool.wrap(SPEC, small, IoBackend.CPU));
        assertTrue(
                tooSmall.getMessage().contains("memory.remaining() " + (G.totalBytes() - 1))
                        && tooSmall.getMessage().contains(String.valueOf(G.totalBytes())),
                tooSmall.getMessage());
        for (int i = 0; i < small.capacity(); i++) assertEquals(small.get(i), (byte) 0x44);

        KvioInvalidArgumentException heap =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () ->
                                DeviceKvPool.wrap(
                                        SPEC,
                                        ByteBuffer.allocate(Math.toIntExact(G.totalBytes())),
                                        IoBackend.CPU));
        assertTrue(heap.getMessage().contains("needs a direct buffer"), heap.getMessage());

        ByteBuffer memory = buffer(G.totalBytes(), 0, 0x44);
        assertInvalid(
                () ->
                        DeviceKvPool.wrapComponents(
                                SPEC,
                                new ByteBuffer[] {memory, memory.asReadOnlyBuffer()},
                                IoBackend.CPU),
                "read-only",
                "wrapComponents");
        // The native refusals name the arrays the caller passed, not the address forms'.
        String overlap =
                assertInvalid(
                        () ->
                                DeviceKvPool.wrapComponents(
                                        SPEC,
                                        new ByteBuffer[] {memory, memory.duplicate()},
                                        IoBackend.CPU),
                        "components[1]");
        assertFalse(overlap.contains("Addresses"), overlap);
        assertInvalid(
                () -> DeviceKvPool.wrapComponents(SPEC, new ByteBuffer[0], IoBackend.CPU),
                "components.length is 0");
        assertInvalid(
                () -> DeviceKvPool.wrapLayers(SPEC, new ByteBuffer[] {memory}, IoBackend.CPU),
                "layers.length is 1");

        for (IoBackend device : new IoBackend[] {IoBackend.KERNEL, IoBackend.KERNEL_ASCEND}) {
            KvioUnsupportedException e =
                    expectThrows(
                            KvioUnsupportedException.class,
                            () -> DeviceKvPool.wrap(SPEC, memory, device));
            assertTrue(e.getMessage().contains("a ByteBuffer is host memory"), e.getMessage());
        }
        for (int i = 0; i < memory.capacity(); i++) assertEquals(memory.get(i), (byte) 0x44);
        expectThrows(
                NullPointerException.class,
                () -> DeviceKvPool.wrap(SPEC, (ByteBuffer) null, IoBackend.CPU));
    }

    /**
     * The call throws KvioInvalidArgumentException whose message has every fragment; the message.
     */
    private static String assertInvalid(ThrowingRunnable call, String... fragments) {
        String m = expectThrows(KvioInvalidArgumentException.class, call).getMessage();
        for (String f : fragments) assertTrue(m.contains(f), "'" + f + "' missing in: " + m);
        return m;
    }
}
