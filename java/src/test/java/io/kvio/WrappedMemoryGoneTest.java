/*
 * A host pool over caller memory that its owner can end while the pool is open (on Java 22+ a
 * MemorySegment's arena, or that of the segment a ByteBuffer views: Segments.wrapHostPool,
 * HostKvPool.Builder.wrap(ByteBuffer)), seen through the liveness the pool keeps: once it says the
 * memory is gone, every use that would touch it (a transfer, a check-only load, copyTo/copyFrom,
 * buffer/slice) is refused with KvioClosedException before any native call, and no byte of either
 * pool changes. The liveness here is a flag over memory that stays allocated, so a missing check
 * shows as moved bytes, not as a crash of the JVM; SegmentsTest (java22) closes real arenas.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.testng.annotations.Test;

public class WrappedMemoryGoneTest {
    private static final PoolSpec SPEC = PoolFixtures.smallMha(4, 8);

    /** K and V of one layer of SPEC: 2 * 16 tokens * 2 heads * 8 bytes. */
    private static final int ONE_LAYER_BYTES = 2 * 16 * 2 * 8;

    /**
     * A host pool of {@code device}'s layer 0 over {@code memory}, which {@code alive} says is
     * there, named "the test's memory".
     */
    private static HostKvPool.Builder overMemory(
            DeviceKvPool device, ByteBuffer memory, BooleanSupplier alive) {
        return HostKvPool.builder()
                .forDevice(device)
                .layerRange(0, 1)
                .wrap(
                        NativeBridge.directAddress(memory),
                        ONE_LAYER_BYTES,
                        memory,
                        alive,
                        "the test's memory");
    }

    @Test
    public void aPoolWhoseMemoryIsGoneRefusesEveryUseAndMovesNothing() {
        ByteBuffer memory =
                ByteBuffer.allocateDirect(ONE_LAYER_BYTES).order(ByteOrder.nativeOrder());
        AtomicBoolean alive = new AtomicBoolean(true);
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 1);
                HostKvPool host = overMemory(device, memory, alive::get).build()) {
            byte[] deviceBytes = LayoutOracle.canary(device.buffer(), 1);
            byte[] hostBytes = LayoutOracle.canary(memory, 2);
            host.backup(device).deviceIndices(1).hostIndices(0).submit().await(); // alive: works
            hostBytes = LayoutOracle.snapshot(memory);
            ByteBuffer out = ByteBuffer.allocateDirect(64);
            byte[] outBytes = LayoutOracle.canary(out, 3);
            ByteBuffer in = ByteBuffer.allocateDirect(64);
            LayoutOracle.canary(in, 4);
            alive.set(false);

            KvioClosedException e =
                    expectThrows(
                            KvioClosedException.class,
                            () ->
                                    host.load(device, 0)
                                            .hostIndices(0, 1)
                                            .deviceIndices(2, 3)
                                            .submit());
            assertEquals(
                    e.getMessage(),
                    "the host pool wraps the test's memory whose arena was closed: its memory is"
                            + " gone, so kvio neither reads nor writes it; close the pool (and close"
                            + " a pool before the arena of the memory it wraps)");
            expectThrows(
                    KvioClosedException.class,
                    () -> host.backup(device).deviceIndices(2, 3).hostIndices(0, 1).submit());
            expectThrows( // a layer the pool does not hold: checked natively, moved never
                    KvioClosedException.class,
                    () -> host.load(device, 1).hostIndices(0).deviceIndices(1).submit());
            expectThrows(
                    KvioClosedException.class,
                    () ->
                            host.load(device, 0)
                                    .hostIndices(new long[0])
                                    .deviceIndices(new long[0])
                                    .submit());
            e =
                    expectThrows(
                            KvioClosedException.class,
                            () ->
                                    Kvio.transfer(
                                            executor,
                                            device,
                                            host,
                                            new long[] {4},
                                            new long[] {5},
                                            1,
                                            0,
                                            1));
            assertTrue(e.getMessage().startsWith("dst (the host pool) wraps"), e.getMessage());
            expectThrows(KvioClosedException.class, () -> host.copyTo(0, 0, out));
            expectThrows(KvioClosedException.class, () -> host.copyFrom(0, 0, in));
            expectThrows(KvioClosedException.class, host::buffer);
            expectThrows(KvioClosedException.class, () -> host.slice(0, 0, 8));
            assertEquals(out.position(), 0);
            assertEquals(in.position(), 0);
            LayoutOracle.assertBufferEquals(device.buffer(), deviceBytes, "the device pool");
            LayoutOracle.assertBufferEquals(memory, hostBytes, "the host pool's memory");
            LayoutOracle.assertBufferEquals(out, outBytes, "copyTo's dst");
            host.close(); // closing still works, and the pool is then closed, not "gone"
            e = expectThrows(KvioClosedException.class, () -> host.copyTo(0, 0, out));
            assertTrue(e.getMessage().contains("is closed"), e.getMessage());
        }
    }

    @Test
    public void memoryGoneBeforeBuildIsRefusedAtBuild() {
        ByteBuffer memory = ByteBuffer.allocateDirect(ONE_LAYER_BYTES);
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            HostKvPool.Builder builder = overMemory(device, memory, () -> false);
            KvioClosedException e = expectThrows(KvioClosedException.class, builder::build);
            assertEquals(
                    e.getMessage(),
                    "memory, the test's memory, is no longer alive: its arena was closed before"
                            + " build()");
        }
    }
}
