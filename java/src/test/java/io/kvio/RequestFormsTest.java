/*
 * The request forms of HostKvPool (issue 12, friction items 1, 9, 10, 11 and the host device
 * number of item 7): backup(device) and load(device, layer) name each index list by its side, so
 * a swap cannot compile silently; index lists may be long[] or int[] for one call; empty lists
 * complete at once; device layers the host pool does not hold are reported on the Transfer, or
 * refused with strictLayers(). After each transfer both pools are compared whole against the
 * oracle's expectation (io.kvio.oracle.Oracle.applyTransfer on the canary-filled pools, geometries
 * from plain numbers): the moved rows where they belong, every other byte unchanged.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.oracle.Geometry;
import io.kvio.oracle.Oracle;
import java.nio.ByteBuffer;
import java.util.List;
import org.testng.annotations.Test;

public class RequestFormsTest extends CpuPoolsFixture {

    /** Bytes of one token row of one layer, all components: what a 1-layer copy moves per pair. */
    private static long rowBytes() {
        return PoolFixtures.movedBytes(DEVICE, 1, 1);
    }

    /** The fixture's device pool: layer_first, 4 layers, 16 pages of 4 slots. */
    private static final Geometry DEVICE_GEOMETRY = DEVICE.geometry(KvLayout.LAYER_FIRST, 4, 16);

    /** The fixture's host pool: page_first, all 4 layers, 8 pages of 4 slots. */
    private static final Geometry HOST_GEOMETRY = DEVICE.geometry(KvLayout.PAGE_FIRST, 4, 8);

    /** What the device and the host pool must hold: the canary, with the oracle's transfers. */
    private byte[] expectedDevice;

    private byte[] expectedHost;

    /** Canary-fills the device pool with {@code seed} and the host pool with seed + 1. */
    private void canaryBoth(long seed) {
        expectedDevice = LayoutOracle.canary(device.buffer(), seed);
        expectedHost = LayoutOracle.canary(host.buffer(), seed + 1);
    }

    /** Canary-fills the device pool again (the host keeps its content). */
    private void canaryDevice(long seed) {
        expectedDevice = LayoutOracle.canary(device.buffer(), seed);
    }

    /** Waits for the transfer and checks the bytes it moved. */
    private static void awaitBytes(Transfer t, long bytes) {
        t.await();
        assertEquals(t.bytes(), bytes);
    }

    /**
     * The oracle's backup: device slots d[i] of device layers [dl, dl + n) into host slots h[i] of
     * host layers [hl, hl + n).
     */
    private void expectBackup(long[] d, long[] h, long dl, long hl, long n) {
        Oracle.applyTransfer(
                expectedDevice, DEVICE_GEOMETRY, expectedHost, HOST_GEOMETRY, d, h, dl, hl, n);
    }

    /** The oracle's load of one layer: host slots h[i] into device slots d[i]. */
    private void expectLoad(long[] h, long[] d, long layer) {
        Oracle.applyTransfer(
                expectedHost,
                HOST_GEOMETRY,
                expectedDevice,
                DEVICE_GEOMETRY,
                h,
                d,
                layer,
                layer,
                1);
    }

    /** Both pools compared whole with the expectation. */
    private void assertBothPools(String what) {
        LayoutOracle.assertPoolEquals(
                LayoutOracle.snapshot(device.buffer()),
                expectedDevice,
                DEVICE_GEOMETRY,
                "device pool " + what);
        LayoutOracle.assertPoolEquals(
                LayoutOracle.snapshot(host.buffer()),
                expectedHost,
                HOST_GEOMETRY,
                "host pool " + what);
    }

    /** The token slots of whole pages of 4 slots, in the order given. */
    private static long[] slotsOfPages(long... pages) {
        long[] slots = new long[pages.length * 4];
        for (int i = 0; i < pages.length; i++) {
            for (int k = 0; k < 4; k++) slots[4 * i + k] = pages[i] * 4 + k;
        }
        return slots;
    }

    // ---- item 1: each list named by its side ----

    @Test
    public void backupNamesEachSideSoOrderDoesNotMatter() {
        canaryBoth(11);
        Transfer t =
                host.backup(device)
                        .hostIndices(TokenIndices.of(5, 6))
                        .deviceIndices(TokenIndices.of(40, 41))
                        .submit();
        awaitBytes(t, 2 * 4 * rowBytes());
        Transfer u = host.backup(device).deviceIndices(50).hostIndices(7).submit();
        awaitBytes(u, 4 * rowBytes());
        expectBackup(new long[] {40, 41}, new long[] {5, 6}, 0, 0, 4);
        expectBackup(new long[] {50}, new long[] {7}, 0, 0, 4);
        assertBothPools("after two backups");
    }

    @Test
    public void loadNamesEachSide() {
        canaryBoth(13);
        Transfer t = host.load(device, 2).hostIndices(3, 4).deviceIndices(60, 61).submit();
        awaitBytes(t, 2 * rowBytes());
        expectLoad(new long[] {3, 4}, new long[] {60, 61}, 2);
        assertBothPools("after a load of layer 2");
    }

    @Test
    public void aMissingSideIsNamed() {
        // A KvioException like the builders' refusals (it was a NullPointerException, which a
        // catch of KvioException missed).
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.backup(device).deviceIndices(1).submit(),
                openBuffers(),
                "hostIndices is not set: call hostIndices(...) before submit()");
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.load(device, 0).hostIndices(0, 1).submit(),
                openBuffers(),
                "deviceIndices is not set: call deviceIndices(...) before submit()");
    }

    // ---- the general transfer by name ----

    @Test
    public void generalRequestNamesEverything() {
        canaryBoth(35);
        // device layers 1-2 of slots 40, 41 into host layers 2-3 of slots 5, 6
        Transfer t =
                Kvio.request(host.executor(), device, host)
                        .dstIndices(5, 6)
                        .srcIndices(idx(40, 41))
                        .srcLayerStart(1)
                        .dstLayerStart(2)
                        .layers(2)
                        .submit();
        awaitBytes(t, 2 * 2 * rowBytes());
        expectBackup(new long[] {40, 41}, new long[] {5, 6}, 1, 2, 2);
        assertBothPools("after device layers [1, 3) into host layers [2, 4)");
        // Not set, and set to what is not a count (named as such, not as "not set").
        for (Long layers : new Long[] {null, -1L, 0L}) {
            Kvio.Request r =
                    Kvio.request(host.executor(), device, host).srcIndices(1).dstIndices(2);
            if (layers != null) r.layers(layers);
            assertRejected(
                    KvioInvalidArgumentException.class,
                    r::submit,
                    openBuffers(),
                    layers == null
                            ? "layers is not set: call layers(...) before submit()"
                            : "numLayers must be at least 1, got " + layers);
        }
        // More pairs than the host pool has slots: refused by their count, in the caller's names.
        long slots = host.spec().tokens();
        long[] many = new long[Math.toIntExact(slots + 1)];
        assertRejected(
                KvioInvalidArgumentException.class,
                () ->
                        Kvio.request(host.executor(), device, host)
                                .srcIndices(many)
                                .dstIndices(many)
                                .layers(1)
                                .submit(),
                openBuffers(),
                (slots + 1) + " index pairs are more than the " + slots + " token slots of dst",
                "at most " + slots + " pairs (the length of srcIndices and of dstIndices)");
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> Kvio.request(host.executor(), device, host).srcIndices(1).layers(1).submit(),
                openBuffers(),
                "dstIndices is not set");
        assertRejected(
                KvioOutOfRangeException.class,
                () ->
                        Kvio.request(host.executor(), device, host)
                                .srcIndices(1)
                                .dstIndices(2)
                                .dstLayerStart(3)
                                .layers(2)
                                .submit(),
                openBuffers(),
                "dst layer range [3, 5)",
                "dstLayerStart + numLayers <= 4");
    }

    // ---- whole pages by id ----

    @Test
    public void pagesByIdMoveTheirSlots() {
        canaryBoth(31);
        // page size 4: device pages 9 and 3 are slots 36-39 and 12-15, host pages 6 and 0 are
        // slots 24-27 and 0-3
        Transfer t = host.backup(device).devicePages(9, 3).hostPages(6, 0).submit();
        awaitBytes(t, 2 * 4 * 4 * rowBytes());
        expectBackup(slotsOfPages(9, 3), slotsOfPages(6, 0), 0, 0, 4);
        assertBothPools("after a backup of device pages 9, 3 into host pages 6, 0");
        // A load may read one host page into two device pages (the source side may repeat).
        canaryDevice(33);
        Transfer u = host.load(device, 1).hostPages(6, 6).devicePages(15, 0).submit();
        awaitBytes(u, 2 * 4 * rowBytes());
        expectLoad(slotsOfPages(6, 6), slotsOfPages(15, 0), 1);
        assertBothPools("after a load of host page 6 into device pages 15, 0");
    }

    @Test
    public void pageIdsAreCheckedAsPages() {
        assertRejected(
                KvioOutOfRangeException.class,
                () -> host.backup(device).devicePages(0).hostPages(8).submit(),
                openBuffers(),
                "hostPages[0] = 8 is out of range: the host pool has 8 pages (valid: 0 to 7)");
        assertRejected(
                KvioOutOfRangeException.class,
                () -> host.load(device, 0).hostPages(0).devicePages(-1).submit(),
                openBuffers(),
                "devicePages[0] = -1 is out of range: the device pool has 16 pages");
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.backup(device).devicePages(1, 2, 3).hostPages(4, 5, 4).submit(),
                openBuffers(),
                "hostPages[2] = 4 repeats hostPages[0]",
                "a page may be written once per transfer");
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.load(device, 0).hostPages(1, 2).devicePages(7, 7).submit(),
                openBuffers(),
                "devicePages[1] = 7 repeats devicePages[0]");
    }

    /**
     * A length mismatch between page lists is told in pages, as the caller typed them, with the
     * token slots they stand for at each pool's page size; not in token slots alone, which the
     * caller never wrote.
     */
    @Test
    public void pageListsOfDifferentLengthsAreToldInPages() {
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.backup(device).devicePages(0, 1).hostPages(0).submit(),
                openBuffers(),
                "hostPages has 1 page (4 token slots at the host's page size 4) but devicePages"
                        + " has 2 pages (8 token slots at the device's page size 4)");
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.load(device, 0).hostPages(2, 3).deviceIndices(0, 1, 2).submit(),
                openBuffers(),
                "hostPages has 2 pages (8 token slots at the host's page size 4) but"
                        + " deviceIndices has 3 entries");
        // Page sizes differ: one host page of 8 slots against one device page of 4.
        HostKvPool wide =
                open(
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout(KvLayout.PAGE_FIRST)
                                .pageSize(8)
                                .pages(4)
                                .build());
        List<ByteBuffer> buffers = List.of(device.buffer(), wide.buffer());
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> wide.backup(device).devicePages(5).hostPages(1).submit(),
                buffers,
                "hostPages has 1 page (8 token slots at the host's page size 8) but devicePages"
                        + " has 1 page (4 token slots at the device's page size 4)");
        // Equal slot counts pass the length check: two device pages fill one wide host page.
        Transfer t = wide.backup(device).devicePages(5, 6).hostPages(1).submit();
        t.await();
        assertEquals(t.bytes(), 8 * 4 * rowBytes());
    }

    @Test
    public void indexErrorsNameTheSetter() {
        assertRejected(
                KvioOutOfRangeException.class,
                () -> host.load(device, 0).hostIndices(0, 32).deviceIndices(0, 1).submit(),
                openBuffers(),
                "hostIndices[1] = 32 is out of range: the host pool has 32 token slots");
    }

    // ---- item 9: arrays for one call ----

    @Test
    public void arraysOfLongAndIntWork() {
        canaryBoth(15);
        awaitBytes(
                host.backup(device)
                        .deviceIndices(new long[] {8, 9})
                        .hostIndices(new int[] {0, 1})
                        .submit(),
                2 * 4 * rowBytes());
        Transfer t =
                Kvio.transfer(
                        host.executor(), device, host, new int[] {10}, new int[] {2}, 0, 0, 4);
        awaitBytes(t, 4 * rowBytes());
        awaitBytes(
                Kvio.transfer(
                        host.executor(), device, host, new long[] {11}, new long[] {3}, 1, 1, 2),
                2 * rowBytes());
        expectBackup(new long[] {8, 9}, new long[] {0, 1}, 0, 0, 4);
        expectBackup(new long[] {10}, new long[] {2}, 0, 0, 4);
        expectBackup(new long[] {11}, new long[] {3}, 1, 1, 2);
        assertBothPools("after transfers with long[] and int[] lists");
    }

    @Test
    public void arrayErrorsNameTheArgument() {
        long[] src = {0, 1, 64};
        long[] dst = {0, 1, 2};
        assertRejected(
                KvioOutOfRangeException.class,
                () -> Kvio.transfer(host.executor(), device, host, src, dst, 0, 0, 1),
                openBuffers(),
                "srcIndices[2] = 64");
    }

    /**
     * Index lists as long as the pools (64 pairs, every device slot reversed into every slot of a
     * layer_first host pool of 16 pages): both pools compared whole, and the byte count.
     */
    @Test
    public void largeArraysAreCopiedWhole() {
        long[] d = new long[64];
        long[] h = new long[64];
        for (int i = 0; i < 64; i++) {
            d[i] = 63 - i;
            h[i] = i;
        }
        Geometry bigGeometry = DEVICE.geometry(KvLayout.LAYER_FIRST, 4, 16);
        try (HostKvPool big =
                HostKvPool.builder()
                        .forDevice(device)
                        .layout("layer_first")
                        .pages(16)
                        .threads(1)
                        .build()) {
            byte[] deviceBytes = LayoutOracle.canary(device.buffer(), 17);
            byte[] expected = LayoutOracle.canary(big.buffer(), 18);
            Oracle.applyTransfer(
                    deviceBytes, DEVICE_GEOMETRY, expected, bigGeometry, d, h, 0, 0, 4);
            // 64 pairs x 4 layers x 2 components x 2 heads x 8 bytes
            awaitBytes(big.backup(device).deviceIndices(d).hostIndices(h).submit(), 8192);
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(big.buffer()), expected, bigGeometry, "host pool");
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(device.buffer()), deviceBytes, "device pool (source)");
        }
    }

    // ---- item 10: empty lists on the request forms ----

    @Test
    public void emptyRequestsCompleteAtOnce() {
        Transfer t =
                host.backup(device).deviceIndices(new long[0]).hostIndices(new int[0]).submit();
        assertTrue(t.isDone());
        assertEquals(t.bytes(), 0);
        t.await();
        t = host.load(device, 1).deviceIndices(new long[0]).hostIndices(new long[0]).submit();
        assertTrue(t.isDone());
        assertEquals(t.bytes(), 0);
        t = Kvio.transfer(host.executor(), host, device, new long[0], new long[0], 0, 0, 1);
        assertTrue(t.isDone());
        assertEquals(t.bytes(), 0);
    }

    // ---- item 11: layers the host pool does not hold ----

    @Test
    public void loadOfALayerNotHeldSaysSo() {
        HostKvPool sharded = open(PoolFixtures.host(device, KvLayout.LAYER_FIRST, 4, 1, 2));
        Transfer t = sharded.load(device, 3).hostIndices(0).deviceIndices(0).submit();
        assertTrue(t.isDone());
        assertEquals(t.bytes(), 0);
        assertEquals(t.skippedLayers(), new long[] {3});
        assertTrue(t.toString().contains("skipped device layers [3]"), t.toString());
        assertEquals(t.cudaEvent(), 0L, "nothing queued: nothing to wait on");
        // It moves nothing, but its indices are checked as a held layer's load's would be.
        byte[] before = LayoutOracle.canary(device.buffer(), 23);
        KvioOutOfRangeException bad =
                expectThrows(
                        KvioOutOfRangeException.class,
                        () -> sharded.load(device, 3).hostIndices(-5).deviceIndices(0).submit());
        assertTrue(bad.getMessage().contains("-5"), bad.getMessage());
        bad =
                expectThrows(
                        KvioOutOfRangeException.class,
                        () ->
                                sharded.load(device, 3)
                                        .hostIndices(0)
                                        .deviceIndices(1 << 20)
                                        .submit());
        assertTrue(bad.getMessage().contains("1048576"), bad.getMessage());
        expectThrows(
                KvioInvalidArgumentException.class,
                () -> sharded.load(device, 3).hostIndices(0, 1).deviceIndices(0).submit());
        LayoutOracle.assertBytesEqual(LayoutOracle.snapshot(device.buffer()), before, "device");
        Transfer held = sharded.load(device, 2).hostIndices(0).deviceIndices(0).submit();
        held.await();
        assertEquals(held.skippedLayers(), new long[0]);
        Transfer b = sharded.backup(device).hostIndices(0).deviceIndices(0).submit();
        awaitBytes(b, 2 * rowBytes());
        assertEquals(b.skippedLayers(), new long[] {0, 3});
    }

    @Test
    public void aLargerDevicePoolIsReported() {
        // Built for 4 device layers, used with a 6-layer device pool (draft-model layers).
        try (DeviceKvPool six =
                DeviceKvPool.allocate(DEVICE.spec(KvLayout.LAYER_FIRST, 6, 16), IoBackend.CPU)) {
            Transfer t = host.load(device, 3).hostIndices(0).deviceIndices(0).submit();
            t.await();
            assertEquals(t.skippedLayers(), new long[0]);
            Transfer skip = host.load(six, 5).hostIndices(0).deviceIndices(0).submit();
            assertEquals(skip.skippedLayers(), new long[] {5});
            Transfer b = host.backup(six).hostIndices(0).deviceIndices(0).submit();
            b.await();
            assertEquals(b.skippedLayers(), new long[] {4, 5});
        }
    }

    @Test
    public void strictLayersRefuses() {
        HostKvPool strict =
                open(
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout("page_first")
                                .pages(8)
                                .layerRange(0, 2)
                                .strictLayers()
                                .threads(1)
                                .build());
        assertTrue(strict.strictLayers());
        byte[] before = LayoutOracle.canary(device.buffer(), 19);
        KvioOutOfRangeException e =
                expectThrows(
                        KvioOutOfRangeException.class,
                        () -> strict.load(device, 3).hostIndices(0).deviceIndices(0).submit());
        assertTrue(
                e.getMessage().contains("device layer 3 is not held by this host pool"),
                e.getMessage());
        assertTrue(e.getMessage().contains("[0, 2)"), e.getMessage());
        assertTrue(e.getMessage().contains("strictLayers()"), e.getMessage());
        LayoutOracle.assertBytesEqual(LayoutOracle.snapshot(device.buffer()), before, "device");
        try (DeviceKvPool six =
                DeviceKvPool.allocate(DEVICE.spec(KvLayout.LAYER_FIRST, 6, 16), IoBackend.CPU)) {
            e =
                    expectThrows(
                            KvioOutOfRangeException.class,
                            () -> strict.backup(six).hostIndices(0).deviceIndices(0).submit());
            assertTrue(
                    e.getMessage().contains("built for a device pool of 4 layers"), e.getMessage());
            assertTrue(e.getMessage().contains("6 layers"), e.getMessage());
        }
        strict.load(device, 1).hostIndices(0).deviceIndices(0).submit().await();
    }

    // ---- item 7 ----

    @Test
    public void hostDeviceConstant() {
        assertEquals(Kvio.HOST_DEVICE, -1);
        assertEquals(device.device(), Kvio.HOST_DEVICE);
        assertEquals(host.executor().device(), Kvio.HOST_DEVICE);
        assertEquals(
                KvioExecutor.shared(IoBackend.CPU, Kvio.HOST_DEVICE).device(), Kvio.HOST_DEVICE);
    }

    // ---- queue-only: the submitting thread copies nothing ----

    /**
     * A small backup to an idle cpu executor is copied at submit (done when it returns), even with
     * the hold armed, which only catches transfers the submitting thread never copies. {@code
     * queueOnly()} makes it such a transfer: held when submit returns, the host pool untouched;
     * released, every row arrives. The Kvio.request form likewise.
     */
    @Test
    public void queueOnlyLeavesEveryCopyToTheExecutorsThreads() {
        canaryBoth(17);
        try {
            // The contrast first, while the pool's executor is idle.
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Transfer inline = host.backup(device).deviceIndices(50).hostIndices(7).submit();
            assertTrue(inline.isDone(), "a small backup to an idle executor was not copied inline");
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            inline.await();
            expectBackup(new long[] {50}, new long[] {7}, 0, 0, 4);
            assertBothPools("after the inline backup");

            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Transfer held =
                    host.backup(device)
                            .deviceIndices(40, 41)
                            .hostIndices(5, 6)
                            .queueOnly()
                            .submit();
            assertFalse(held.isDone(), "a queue-only backup was copied by the submitting thread");
            assertBothPools("while the queue-only backup is held");
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            awaitBytes(held, 2 * 4 * rowBytes());

            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Transfer request =
                    Kvio.request(host.executor(), device, host)
                            .srcIndices(60)
                            .dstIndices(9)
                            .layers(4)
                            .queueOnly()
                            .submit();
            assertFalse(request.isDone(), "a queue-only request was copied by this thread");
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            awaitBytes(request, 4 * rowBytes());
        } finally {
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
        }
        expectBackup(new long[] {40, 41}, new long[] {5, 6}, 0, 0, 4);
        expectBackup(new long[] {60}, new long[] {9}, 0, 0, 4);
        assertBothPools("after the queue-only transfers");
    }
}
