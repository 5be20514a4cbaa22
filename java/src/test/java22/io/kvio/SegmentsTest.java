/*
 * io.kvio.Segments, the MemorySegment interop of Java 22+ (compiled and run only by the java22
 * profile of java/pom.xml): index lists viewing native segments (heap ones copied), a host pool
 * over a caller's segment moved into by a transfer, pools' memory as segments that die with the
 * pool, and the refusals (misaligned or odd-sized index segments, heap or read-only pool memory,
 * closed arenas, device memory of a CUDA pool). Memory whose arena a test closes is a view, in an
 * arena of its own, of memory that stays allocated (deadView): closing that arena kills the view's
 * scope as it kills a segment's, but a missing check then shows as a failed assertion (bytes moved,
 * no exception) rather than a crash of the JVM.
 */
package io.kvio;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotSame;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import org.testng.annotations.Test;

public class SegmentsTest {
    private static final PoolSpec SPEC =
            PoolSpec.builder()
                    .kind(PoolKind.MLA)
                    .layout(KvLayout.LAYER_FIRST)
                    .layers(2)
                    .pages(4)
                    .pageSize(4)
                    .heads(1)
                    .headBytes(8)
                    .build();

    /**
     * {@code backing} seen through {@code arena}: closing the arena makes the view (and the
     * ByteBuffers made from it) dead as a closed arena's segment is, while {@code backing} stays
     * allocated, so kvio writing through a dead view does not crash the test.
     */
    private static MemorySegment deadView(MemorySegment backing, Arena arena) {
        return backing.reinterpret(arena, null);
    }

    /** Fills {@code segment} with bytes that differ from a page of zeros and from each other. */
    private static byte[] fill(MemorySegment segment, int seed) {
        for (long i = 0; i < segment.byteSize(); i++) {
            segment.set(ValueLayout.JAVA_BYTE, i, (byte) (seed * 31 + i * 7 + 1));
        }
        return segment.toArray(ValueLayout.JAVA_BYTE);
    }

    private static void assertUnchanged(MemorySegment segment, byte[] before, String what) {
        assertEquals(segment.toArray(ValueLayout.JAVA_BYTE), before, what + " changed");
    }

    /**
     * wrapHostPool configures a copy of the caller's builder: reused as a template, the builder
     * wraps nothing (build() allocates memory of its own) or the next segment given, never the
     * first segment again.
     */
    @Test
    public void wrapHostPoolLeavesTheCallersBuilderAsItWas() {
        try (Arena arena = Arena.ofConfined();
                DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            HostKvPool.Builder template = HostKvPool.builder().forDevice(device);
            long bytes = template.requiredBytes();
            MemorySegment first = arena.allocate(bytes, 4096);
            MemorySegment second = arena.allocate(bytes, 4096);
            try (HostKvPool a = Segments.wrapHostPool(template, first);
                    HostKvPool own = template.build();
                    HostKvPool b = Segments.wrapHostPool(template, second)) {
                assertEquals(a.regionAddress(0), first.address());
                assertEquals(b.regionAddress(0), second.address());
                for (MemorySegment s : new MemorySegment[] {first, second}) {
                    long at = own.regionAddress(0);
                    assertTrue(
                            at + own.regionBytes(0) <= s.address()
                                    || at >= s.address() + s.byteSize(),
                            "build() of the template allocates, apart from the segments");
                }
                byte[] firstBytes = fill(first, 9);
                byte[] ownBytes = fill(Segments.region(own, 0), 10);
                assertUnchanged(first, firstBytes, "the first segment");
                assertEquals(Segments.region(own, 0).toArray(ValueLayout.JAVA_BYTE), ownBytes);
            }
        }
    }

    /**
     * The Java 22 sample of README.md, section "Java" (Segments), as it is there: if this stops
     * compiling or passing, update README.md with it.
     */
    @Test
    public void theReadmesSegmentsSampleRuns() {
        PoolSpec deviceSpec = SPEC;
        long moved = 0;
        // ---- README.md: the Segments sample ----
        try (Arena arena = Arena.ofConfined();
                DeviceKvPool device = DeviceKvPool.allocate(deviceSpec, IoBackend.CPU)) {
            HostKvPool.Builder hostConfig = HostKvPool.builder().forDevice(device);
            long hostBytes = hostConfig.requiredBytes(); // what the pool will hold
            try (HostKvPool host =
                            Segments.wrapHostPool(hostConfig, arena.allocate(hostBytes, 4096));
                    TokenIndices hostSlots =
                            Segments.wrapIndices(
                                    arena.allocateFrom(ValueLayout.JAVA_LONG, 10, 11, 12))) {
                MemorySegment hostMemory = Segments.region(host, 0);
                // ---- end of the sample ----
                Transfer t =
                        host.backup(device).deviceIndices(0, 1, 2).hostIndices(hostSlots).submit();
                t.await();
                moved += t.bytes();
                assertEquals(hostMemory.byteSize(), host.regionBytes(0));
                assertEquals(hostBytes, SPEC.totalBytes());
            }
        }
        assertEquals(moved, 3 * SPEC.numLayers() * SPEC.rowBytes());
    }

    @Test
    public void aPoolWhoseSegmentsArenaClosedRefusesEveryUseAndMovesNothing() {
        // Transfers into a host pool over a segment whose arena was closed afterwards wrote freed
        // memory (a crash in kvio::copyRow), and its region() segment still said it was alive.
        try (Arena keep = Arena.ofConfined();
                DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 1)) {
            MemorySegment backing = keep.allocate(16 * 8, 4096); // one layer of SPEC
            Arena arena = Arena.ofShared();
            HostKvPool host =
                    Segments.wrapHostPool(
                            HostKvPool.builder().forDevice(device).layerRange(0, 1),
                            deadView(backing, arena));
            MemorySegment region = Segments.region(host, 0);
            MemorySegment deviceMemory = Segments.region(device, 0);
            byte[] hostBytes = fill(backing, 1);
            byte[] deviceBytes = fill(deviceMemory, 2);
            ByteBuffer out = ByteBuffer.allocateDirect(64);
            for (int i = 0; i < 64; i++) {
                out.put(i, (byte) 0x5a);
            }
            ByteBuffer in = ByteBuffer.allocateDirect(64);
            arena.close();

            assertFalse(region.scope().isAlive(), "region() of the pool outlives the arena");
            assertThrows(IllegalStateException.class, () -> region.get(JAVA_LONG, 0));
            KvioClosedException e =
                    expectThrows(KvioClosedException.class, () -> Segments.region(host, 0));
            assertTrue(e.getMessage().contains("arena was closed"), e.getMessage());
            e =
                    expectThrows(
                            KvioClosedException.class,
                            () ->
                                    host.load(device, 0)
                                            .hostIndices(0, 1)
                                            .deviceIndices(2, 3)
                                            .submit());
            assertTrue(
                    e.getMessage()
                            .contains(
                                    "the host pool wraps the MemorySegment given to"
                                            + " Segments.wrapHostPool whose arena was closed"),
                    e.getMessage());
            assertUnchanged(deviceMemory, deviceBytes, "the device pool (load)");
            expectThrows(
                    KvioClosedException.class,
                    () -> host.backup(device).deviceIndices(2, 3).hostIndices(0, 1).submit());
            assertUnchanged(backing, hostBytes, "the host pool's memory (backup)");
            expectThrows( // not held: only checked (Kvio.check), never moved
                    KvioClosedException.class,
                    () -> host.load(device, 1).hostIndices(0).deviceIndices(1).submit());
            expectThrows( // empty lists: checked only
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
                                            host,
                                            device,
                                            new long[] {0},
                                            new long[] {5},
                                            0,
                                            1,
                                            1));
            assertTrue(e.getMessage().startsWith("src (the host pool) wraps"), e.getMessage());
            assertUnchanged(deviceMemory, deviceBytes, "the device pool (Kvio.transfer)");
            expectThrows(KvioClosedException.class, () -> host.copyTo(0, 8, out));
            for (int i = 0; i < 64; i++) {
                assertEquals(out.get(i), (byte) 0x5a, "copyTo's dst byte " + i);
            }
            assertEquals(out.position(), 0);
            expectThrows(KvioClosedException.class, () -> host.copyFrom(0, 8, in));
            assertEquals(in.position(), 0);
            assertUnchanged(backing, hostBytes, "the host pool's memory (copyFrom)");
            expectThrows(KvioClosedException.class, host::buffer);
            expectThrows(KvioClosedException.class, () -> host.slice(0, 0, 8));
            host.closeAndWait(); // closing still works
            assertUnchanged(backing, hostBytes, "the host pool's memory");
        }
    }

    @Test
    public void byteBuffersOfAClosedArenaAreRefused() {
        // JNI's GetDirectBufferAddress ignores a buffer's arena: copyTo, copyFrom,
        // wrap(ByteBuffer) and TokenIndices.wrap(LongBuffer) took such buffers and crashed.
        try (Arena keep = Arena.ofConfined();
                DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                HostKvPool host = HostKvPool.builder().forDevice(device).build()) {
            MemorySegment backing = keep.allocate(4096, 4096);
            MemorySegment wrappedBacking = keep.allocate(SPEC.numLayers() * 16 * 8, 4096);
            Arena arena = Arena.ofShared();
            ByteBuffer dead = deadView(backing, arena).asByteBuffer();
            ByteBuffer dst = dead.slice(0, 64);
            LongBuffer slots = dead.order(ByteOrder.nativeOrder()).asLongBuffer();
            slots.put(0, 1).put(1, 2).limit(2);
            TokenIndices viewed = TokenIndices.wrap(slots); // alive now
            HostKvPool.Builder pending = HostKvPool.builder().forDevice(device).wrap(dead);
            HostKvPool overBuffer =
                    HostKvPool.builder()
                            .forDevice(device)
                            .wrap(deadView(wrappedBacking, arena).asByteBuffer())
                            .build();
            MemorySegment overBufferRegion = Segments.region(overBuffer, 0);
            MemorySegment hostMemory = Segments.region(host, 0);
            MemorySegment deviceMemory = Segments.region(device, 0);
            byte[] hostBytes = fill(hostMemory, 3);
            byte[] deviceBytes = fill(deviceMemory, 4);
            byte[] wrappedBytes = fill(wrappedBacking, 5);
            arena.close();
            byte[] deadBytes = fill(backing, 6);

            KvioClosedException e =
                    expectThrows(KvioClosedException.class, () -> host.copyTo(0, 0, dst));
            assertTrue(
                    e.getMessage()
                            .startsWith(
                                    "dst is a ByteBuffer view of a MemorySegment"
                                            + " whose arena was closed"),
                    e.getMessage());
            assertUnchanged(backing, deadBytes, "copyTo's dst");
            e = expectThrows(KvioClosedException.class, () -> host.copyFrom(0, 0, dst));
            assertTrue(e.getMessage().startsWith("src is"), e.getMessage());
            assertUnchanged(hostMemory, hostBytes, "the host pool (copyFrom)");
            expectThrows(KvioClosedException.class, () -> host.copyTo(0, 0, dst.slice(0, 0)));
            expectThrows(
                    KvioClosedException.class,
                    () -> HostKvPool.builder().forDevice(device).wrap(dead));
            e = expectThrows(KvioClosedException.class, pending::build);
            assertTrue(e.getMessage().contains("closed before build()"), e.getMessage());
            expectThrows(KvioClosedException.class, () -> TokenIndices.wrap(slots));
            e =
                    expectThrows(
                            KvioClosedException.class,
                            () ->
                                    host.backup(device)
                                            .deviceIndices(viewed)
                                            .hostIndices(0, 1)
                                            .submit());
            assertTrue(e.getMessage().contains("arena was closed"), e.getMessage());
            assertUnchanged(hostMemory, hostBytes, "the host pool (backup)");
            // A pool built over a buffer view while its arena was open: refused afterwards.
            assertFalse(overBufferRegion.scope().isAlive(), "region() outlives the arena");
            expectThrows(KvioClosedException.class, () -> Segments.region(overBuffer, 0));
            e =
                    expectThrows(
                            KvioClosedException.class,
                            () ->
                                    overBuffer
                                            .load(device, 1)
                                            .hostIndices(0, 1)
                                            .deviceIndices(2, 3)
                                            .submit());
            assertTrue(
                    e.getMessage().contains("the ByteBuffer given to wrap(ByteBuffer)"),
                    e.getMessage());
            assertUnchanged(deviceMemory, deviceBytes, "the device pool (load)");
            expectThrows(
                    KvioClosedException.class,
                    () -> overBuffer.backup(device).deviceIndices(2).hostIndices(0).submit());
            assertUnchanged(wrappedBacking, wrappedBytes, "the pool over the buffer");
            overBuffer.closeAndWait();
        }
    }

    @Test
    public void regionReturnsOneSegmentPerRegion() {
        // Each call made a new segment with a cleanup action in the pool's arena, kept until the
        // pool closed (about 72 bytes a call, without bound).
        PoolSpec mha =
                PoolSpec.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(2)
                        .pages(4)
                        .pageSize(4)
                        .heads(2)
                        .headBytes(8)
                        .build();
        try (Arena arena = Arena.ofConfined();
                DeviceKvPool device = DeviceKvPool.allocate(mha, IoBackend.CPU);
                HostKvPool host = HostKvPool.builder().forDevice(device).build();
                HostKvPool wrapped =
                        Segments.wrapHostPool(
                                HostKvPool.builder().forDevice(device),
                                arena.allocate(2 * 2 * 16 * 16, 4096));
                DeviceKvPool components = // K and V apart: two regions
                        DeviceKvPool.wrapComponents(
                                mha,
                                new long[] {
                                    arena.allocate(512, 64).address(),
                                    arena.allocate(512, 64).address()
                                },
                                512,
                                IoBackend.CPU)) {
            assertEquals(components.regionCount(), 2);
            for (KvPool pool : new KvPool[] {device, host, wrapped, components}) {
                int regions = pool.regionCount();
                MemorySegment[] first = new MemorySegment[regions];
                for (int r = 0; r < regions; r++) {
                    first[r] = Segments.region(pool, r);
                    assertEquals(first[r].address(), pool.regionAddress(r));
                    assertEquals(first[r].byteSize(), pool.regionBytes(r));
                }
                for (int i = 0; i < 1000; i++) {
                    for (int r = 0; r < regions; r++) {
                        assertSame(Segments.region(pool, r), first[r], pool + " region " + r);
                    }
                }
                if (regions > 1) {
                    assertNotSame(first[0], first[1]);
                }
            }
            assertEquals(Segments.region(wrapped, 0).scope(), arena.allocate(1).scope());
        }
    }

    @Test
    public void heapSegmentsOfAnyArrayAreCopiedIntoIndexLists() {
        // toArray(JAVA_LONG) refused heap segments not backed by a long[] (alignment) with an
        // IllegalArgumentException.
        byte[] bytes = new byte[17];
        MemorySegment odd = MemorySegment.ofArray(bytes).asSlice(1);
        odd.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 3);
        odd.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, 14);
        ByteBuffer heap = ByteBuffer.allocate(16).order(ByteOrder.nativeOrder());
        heap.putLong(0, 5).putLong(8, 6);
        try (TokenIndices fromBytes = Segments.wrapIndices(odd);
                TokenIndices fromBuffer = Segments.wrapIndices(MemorySegment.ofBuffer(heap));
                TokenIndices zeros = Segments.wrapIndices(MemorySegment.ofArray(new byte[16]));
                DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                HostKvPool host = HostKvPool.builder().forDevice(device).build()) {
            assertEquals(fromBytes.toString(), "TokenIndices{size=2, [3, 14]}");
            assertEquals(fromBuffer.toString(), "TokenIndices{size=2, [5, 6]}");
            assertEquals(zeros.toString(), "TokenIndices{size=2, [0, 0]}");
            MemorySegment deviceMemory = Segments.region(device, 0);
            deviceMemory.setAtIndex(JAVA_LONG, 3, 33);
            deviceMemory.setAtIndex(JAVA_LONG, 14, 44);
            host.backup(device).deviceIndices(fromBytes).hostIndices(fromBuffer).submit().await();
            MemorySegment hostMemory = Segments.region(host, 0);
            assertEquals(hostMemory.getAtIndex(JAVA_LONG, 5), 33);
            assertEquals(hostMemory.getAtIndex(JAVA_LONG, 6), 44);
        }
        KvioInvalidArgumentException e =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () -> Segments.wrapIndices(MemorySegment.ofArray(new byte[12])));
        assertTrue(e.getMessage().contains("multiple of 8"), e.getMessage());
    }

    @Test
    public void indexListsViewNativeSegmentsAndCopyHeapOnes() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment slots = arena.allocateFrom(ValueLayout.JAVA_LONG, 3, 1, 4, 1, 5);
            try (TokenIndices list = Segments.wrapIndices(slots.asSlice(8, 24))) {
                assertEquals(list.toString(), "TokenIndices{size=3, [1, 4, 1]}");
                assertEquals(list.address(), slots.address() + 8);
                slots.setAtIndex(ValueLayout.JAVA_LONG, 2, 9); // a view
                assertEquals(list.get(1), 9);
            }
            MemorySegment heap = MemorySegment.ofArray(new long[] {6, 7});
            try (TokenIndices list = Segments.wrapIndices(heap)) {
                heap.setAtIndex(ValueLayout.JAVA_LONG, 0, 60);
                assertEquals(list.toString(), "TokenIndices{size=2, [6, 7]}", "a copy");
            }
            KvioInvalidArgumentException e =
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () -> Segments.wrapIndices(slots.asSlice(0, 12)));
            assertTrue(e.getMessage().contains("multiple of 8"), e.getMessage());
            e =
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () -> Segments.wrapIndices(slots.asSlice(4, 16)));
            assertTrue(e.getMessage().contains("not 8-byte aligned"), e.getMessage());
            try (TokenIndices empty = Segments.wrapIndices(slots.asSlice(0, 0))) {
                assertEquals(empty.size(), 0);
            }
        }
    }

    @Test
    public void aListWhoseArenaClosedIsRefusedAtSubmit() {
        Arena arena = Arena.ofShared();
        TokenIndices list = Segments.wrapIndices(arena.allocateFrom(ValueLayout.JAVA_LONG, 0, 1));
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                HostKvPool host = HostKvPool.builder().forDevice(device).build();
                TokenIndices other = TokenIndices.of(2, 3)) {
            host.backup(device).hostIndices(list).deviceIndices(other).submit().await();
            arena.close();
            KvioClosedException e =
                    expectThrows(
                            KvioClosedException.class,
                            () ->
                                    host.backup(device)
                                            .hostIndices(list)
                                            .deviceIndices(other)
                                            .submit());
            assertTrue(e.getMessage().contains("arena was closed"), e.getMessage());
        }
    }

    @Test
    public void aHostPoolOverACallerSegmentReceivesABackup() {
        try (Arena arena = Arena.ofConfined();
                DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            MemorySegment memory = arena.allocate(SPEC.numLayers() * 16 * 8, 4096);
            try (HostKvPool host =
                            Segments.wrapHostPool(HostKvPool.builder().forDevice(device), memory);
                    TokenIndices d =
                            Segments.wrapIndices(arena.allocateFrom(ValueLayout.JAVA_LONG, 5, 6));
                    TokenIndices h = TokenIndices.of(0, 15)) {
                assertEquals(host.regionAddress(0), memory.address());
                MemorySegment deviceMemory = Segments.region(device, 0);
                deviceMemory.setAtIndex(ValueLayout.JAVA_LONG, 5, 0x55); // layer 0
                deviceMemory.setAtIndex(ValueLayout.JAVA_LONG, 16 + 6, 0x66); // layer 1
                host.backup(device).hostIndices(h).deviceIndices(d).submit().await();
                assertEquals(memory.getAtIndex(ValueLayout.JAVA_LONG, 0), 0x55);
                assertEquals(memory.getAtIndex(ValueLayout.JAVA_LONG, 16 + 15), 0x66);
            }
            expectThrows(
                    KvioInvalidArgumentException.class,
                    () ->
                            Segments.wrapHostPool(
                                    HostKvPool.builder().forDevice(device),
                                    MemorySegment.ofArray(new byte[256])));
            expectThrows(
                    KvioInvalidArgumentException.class,
                    () ->
                            Segments.wrapHostPool(
                                    HostKvPool.builder().forDevice(device),
                                    arena.allocate(256).asReadOnly()));
            KvioInvalidArgumentException e =
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () ->
                                    Segments.wrapHostPool(
                                            HostKvPool.builder().forDevice(device),
                                            arena.allocate(64)));
            assertTrue(e.getMessage().contains("too small"), e.getMessage());
        }
    }

    @Test
    public void poolSegmentsDieWithThePool() {
        MemorySegment region;
        try (HostKvPool host =
                HostKvPool.builder()
                        .kind(PoolKind.MLA)
                        .pages(4)
                        .pageSize(4)
                        .heads(1)
                        .headBytes(8)
                        .deviceLayers(2)
                        .build()) {
            region = Segments.region(host, 0);
            assertEquals(region.byteSize(), host.regionBytes(0));
            assertEquals(region.address(), host.regionAddress(0));
            region.set(ValueLayout.JAVA_LONG, 8, 42);
            ByteBuffer out = ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder());
            host.copyTo(0, 8, out);
            assertEquals(out.getLong(0), 42);
            assertTrue(Segments.region(host, 0).scope().equals(region.scope()), "one arena");
            expectThrows(KvioOutOfRangeException.class, () -> Segments.region(host, 1));
        }
        assertThrows(IllegalStateException.class, () -> region.get(ValueLayout.JAVA_LONG, 8));
        assertTrue(!region.scope().isAlive());
    }

    /** What {@link #closeFromUpcall} saw, on the test's thread (the upcall runs there). */
    private static HostKvPool closing;

    private static Throwable closeFailure;

    /**
     * qsort's comparator: closes {@link #closing} while qsort, a downcall holding the pool's
     * segment, is still running (an exception must not leave an upcall: it is recorded).
     */
    static int closeFromUpcall(MemorySegment a, MemorySegment b) {
        try {
            closing.close();
        } catch (Throwable t) {
            closeFailure = t;
        }
        return 0;
    }

    @Test
    public void aPoolWhoseSegmentIsInUseStaysOpenUntilItCanClose() throws Throwable {
        // A downcall given a pool's segment holds its arena: Arena.close() throws then. close()
        // marked the pool closed first and threw before freeing it: a second close() did nothing,
        // the pool and its memory stayed allocated, and closeAndWait() later freed the memory
        // under segments still alive (a crash of the JVM on their next access).
        HostKvPool host =
                HostKvPool.builder()
                        .kind(PoolKind.MLA)
                        .pages(4)
                        .pageSize(4)
                        .heads(1)
                        .headBytes(8)
                        .deviceLayers(2)
                        .build();
        MemorySegment region = Segments.region(host, 0);
        region.setAtIndex(ValueLayout.JAVA_LONG, 0, 2);
        region.setAtIndex(ValueLayout.JAVA_LONG, 1, 1);
        Linker linker = Linker.nativeLinker();
        MethodHandle qsort =
                linker.downcallHandle(
                        linker.defaultLookup().find("qsort").orElseThrow(),
                        FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
        try (Arena upcalls = Arena.ofConfined()) {
            MemorySegment comparator =
                    linker.upcallStub(
                            MethodHandles.lookup()
                                    .findStatic(
                                            SegmentsTest.class,
                                            "closeFromUpcall",
                                            MethodType.methodType(
                                                    int.class,
                                                    MemorySegment.class,
                                                    MemorySegment.class)),
                            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS),
                            upcalls);
            closing = host;
            closeFailure = null;
            qsort.invokeExact(region, 2L, 8L, comparator);
        } finally {
            closing = null;
        }
        assertTrue(closeFailure instanceof IllegalStateException, String.valueOf(closeFailure));
        assertTrue(closeFailure.getMessage().contains("was not closed"), closeFailure.getMessage());
        assertTrue(!host.isClosed(), "left open");
        assertEquals(region.getAtIndex(ValueLayout.JAVA_LONG, 0), 2, "still usable");
        host.close(); // nothing holds the segment now
        assertTrue(host.isClosed());
        assertThrows(IllegalStateException.class, () -> region.get(ValueLayout.JAVA_LONG, 0));
        host.closeAndWait();
    }

    @Test
    public void closedPoolsAndCudaDeviceMemoryAreRefused() {
        HostKvPool host =
                HostKvPool.builder()
                        .kind(PoolKind.MLA)
                        .pages(1)
                        .pageSize(1)
                        .heads(1)
                        .headBytes(8)
                        .deviceLayers(1)
                        .build();
        host.close();
        expectThrows(KvioClosedException.class, () -> Segments.region(host, 0));
        if (IoBackend.DIRECT.isAvailable()) {
            try (DeviceKvPool gpu = DeviceKvPool.allocate(SPEC, IoBackend.DIRECT)) {
                expectThrows(KvioUnsupportedException.class, () -> Segments.region(gpu, 0));
            }
        }
    }

    /** The Java 22+ example of README.md, section "Java" (keep the two in sync). */
    @Test
    public void segmentExampleOfTheReadmeRuns() {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            long hostBytes = 2 * 16 * 8;
            MemorySegment seen;
            // ---- README.md, section "Java", MemorySegment ----
            try (Arena arena = Arena.ofConfined();
                    HostKvPool host =
                            Segments.wrapHostPool(
                                    HostKvPool.builder().forDevice(device),
                                    arena.allocate(hostBytes, 4096));
                    TokenIndices hostSlots =
                            Segments.wrapIndices(
                                    arena.allocateFrom(ValueLayout.JAVA_LONG, 10, 11, 12))) {
                MemorySegment hostMemory = Segments.region(host, 0);
                // ---- end of the example ----
                seen = hostMemory;
                assertEquals(hostMemory.byteSize(), hostBytes);
                assertEquals(hostSlots.size(), 3);
            }
            assertTrue(!seen.scope().isAlive());
        }
    }
}
