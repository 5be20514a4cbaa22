/*
 * The request forms of HostKvPool (issue 12, friction items 1, 9, 10, 11 and the host device
 * number of item 7): backup(device) and load(device, layer) name each index list by its side, so
 * a swap cannot compile silently; index lists may be long[] or int[] for one call; empty lists
 * complete at once; device layers the host pool does not hold are reported on the Transfer, or
 * refused with strictLayers(). Results are checked byte for byte against LayoutOracle.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.oracle.Geometry;
import org.testng.annotations.Test;

public class RequestFormsTest extends CpuPoolsFixture {

    /** Bytes of one token row of one layer, all components: what a 1-layer copy moves per pair. */
    private static long rowBytes() {
        return PoolFixtures.movedBytes(DEVICE, 1, 1);
    }

    /** Canary-fills the device pool with {@code seed} and the host pool with seed + 1. */
    private void canaryBoth(long seed) {
        LayoutOracle.canary(device.buffer(), seed);
        LayoutOracle.canary(host.buffer(), seed + 1);
    }

    /** Waits for the transfer and checks the bytes it moved. */
    private static void awaitBytes(Transfer t, long bytes) {
        t.await();
        assertEquals(t.bytes(), bytes);
    }

    /** Host token h of host layer hl holds device token d of device layer dl, all components. */
    private static void assertSameRows(
            DeviceKvPool device, long d, long dl, HostKvPool host, long h, long hl) {
        Geometry dg =
                DEVICE.geometry(KvLayout.LAYER_FIRST, device.spec().numLayers(), DEVICE.pages);
        Geometry hg = DEVICE.geometry(host.layout(), host.numLayers(), host.spec().numPages());
        for (int c = 0; c < DEVICE.components(); c++) {
            for (long head = 0; head < DEVICE.heads; head++) {
                long dOff = dg.offset(c, dl, d, head);
                long hOff = hg.offset(c, hl, h, head);
                for (int b = 0; b < DEVICE.headBytes; b++) {
                    assertEquals(
                            host.buffer().get((int) hOff + b),
                            device.buffer().get((int) dOff + b),
                            "component " + c + " head " + head + " byte " + b);
                }
            }
        }
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
        u.await();
        for (long l = 0; l < 4; l++) {
            assertSameRows(device, 40, l, host, 5, l);
            assertSameRows(device, 41, l, host, 6, l);
            assertSameRows(device, 50, l, host, 7, l);
        }
    }

    @Test
    public void loadNamesEachSide() {
        canaryBoth(13);
        Transfer t = host.load(device, 2).hostIndices(3, 4).deviceIndices(60, 61).submit();
        awaitBytes(t, 2 * rowBytes());
        assertSameRows(device, 60, 2, host, 3, 2);
        assertSameRows(device, 61, 2, host, 4, 2);
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
        for (long j = 0; j < 2; j++) {
            assertSameRows(device, 40, 1 + j, host, 5, 2 + j);
            assertSameRows(device, 41, 1 + j, host, 6, 2 + j);
        }
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
        for (long l = 0; l < 4; l++) {
            for (long k = 0; k < 4; k++) {
                assertSameRows(device, 36 + k, l, host, 24 + k, l);
                assertSameRows(device, 12 + k, l, host, k, l);
            }
        }
        // A load may read one host page into two device pages (the source side may repeat).
        LayoutOracle.canary(device.buffer(), 33);
        Transfer u = host.load(device, 1).hostPages(6, 6).devicePages(15, 0).submit();
        awaitBytes(u, 2 * 4 * rowBytes());
        for (long k = 0; k < 4; k++) {
            assertSameRows(device, 60 + k, 1, host, 24 + k, 1);
            assertSameRows(device, k, 1, host, 24 + k, 1);
        }
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

    @Test
    public void indexErrorsNameTheSetter() {
        assertRejected(
                KvioOutOfRangeException.class,
                () -> host.load(device, 0).hostIndices(0, 32).deviceIndices(0, 1).submit(),
                openBuffers(),
                "hostIndices[1] = 32 is out of range: the host pool has 32 token slots");
    }

    /** The deprecated forms delegate to the request forms: same bytes, same rows moved. */
    @Test
    @SuppressWarnings("removal")
    public void deprecatedFormsStillWork() {
        canaryBoth(21);
        TokenIndices h = idx(1, 2);
        TokenIndices d = idx(30, 31);
        awaitBytes(host.backupFromDevice(device, h, d), 2 * 4 * rowBytes());
        for (long l = 0; l < 4; l++) {
            assertSameRows(device, 30, l, host, 1, l);
            assertSameRows(device, 31, l, host, 2, l);
        }
        LayoutOracle.canary(device.buffer(), 23);
        awaitBytes(host.loadToDevice(device, h, d, 3), 2 * rowBytes());
        assertSameRows(device, 30, 3, host, 1, 3);
        assertSameRows(device, 31, 3, host, 2, 3);
    }

    // ---- item 9: arrays for one call ----

    @Test
    public void arraysOfLongAndIntWork() {
        canaryBoth(15);
        host.backup(device)
                .deviceIndices(new long[] {8, 9})
                .hostIndices(new int[] {0, 1})
                .submit()
                .await();
        Transfer t =
                Kvio.transfer(
                        host.executor(), device, host, new int[] {10}, new int[] {2}, 0, 0, 4);
        awaitBytes(t, 4 * rowBytes());
        Kvio.transfer(host.executor(), device, host, new long[] {11}, new long[] {3}, 1, 1, 2)
                .await();
        for (long l = 0; l < 4; l++) {
            assertSameRows(device, 8, l, host, 0, l);
            assertSameRows(device, 9, l, host, 1, l);
            assertSameRows(device, 10, l, host, 2, l);
        }
        assertSameRows(device, 11, 1, host, 3, 1);
        assertSameRows(device, 11, 2, host, 3, 2);
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

    @Test
    public void largeArraysAreCopiedWhole() {
        long[] d = new long[64];
        long[] h = new long[64];
        try (HostKvPool big =
                HostKvPool.builder()
                        .forDevice(device)
                        .layout("layer_first")
                        .pages(16)
                        .threads(1)
                        .build()) {
            for (int i = 0; i < 64; i++) {
                d[i] = 63 - i;
                h[i] = i;
            }
            LayoutOracle.canary(device.buffer(), 17);
            big.backup(device).deviceIndices(d).hostIndices(h).submit().await();
            for (int i = 0; i < 64; i++) assertSameRows(device, 63 - i, 3, big, i, 3);
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

            byte[] hostBefore = LayoutOracle.snapshot(host.buffer());
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Transfer held =
                    host.backup(device)
                            .deviceIndices(40, 41)
                            .hostIndices(5, 6)
                            .queueOnly()
                            .submit();
            assertFalse(held.isDone(), "a queue-only backup was copied by the submitting thread");
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(host.buffer()), hostBefore, "host pool while held");
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
        for (long l = 0; l < 4; l++) {
            assertSameRows(device, 50, l, host, 7, l);
            assertSameRows(device, 40, l, host, 5, l);
            assertSameRows(device, 41, l, host, 6, l);
            assertSameRows(device, 60, l, host, 9, l);
        }
    }
}
