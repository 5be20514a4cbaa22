/*
 * The per-transfer launch shape of the request builders (HostKvPool.TransferRequest.launch,
 * Kvio.Request.launch; kvio_submit_with / kvio_check_transfer_with underneath) on the cpu backend,
 * which ignores the shape but checks its limits: a shape within them moves exactly the bytes a
 * request without one moves (whole destination compared against the oracle over a canary), 0 or
 * less is the executor's setting, a shape past the limits is refused before any byte moves, for
 * empty index lists and loads of a layer the host pool does not hold as well, and the shape
 * combines with the overlaps-compute mark.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;

import io.kvio.oracle.Oracle;
import io.kvio.oracle.Placement;
import java.util.List;
import org.testng.Assert.ThrowingRunnable;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class TransferLaunchShapeTest extends CpuPoolsFixture {

    private static final String[] LIMITS = {
        "CTA budget 1 to 65535", "warps per CTA 1 to 32", "0 or less for the executor's setting"
    };

    private static Placement devicePlacement() {
        return Placement.standard(DEVICE.deviceGeometry(), 0);
    }

    private static Placement hostPlacement() {
        return Placement.standard(DEVICE.geometry(KvLayout.PAGE_FIRST, 4, HOST_PAGES), 0);
    }

    /** Bytes of one token row of one layer, all components. */
    private static long rowBytes() {
        return PoolFixtures.movedBytes(DEVICE, 1, 1);
    }

    /** A backup with the shape moves what the oracle says, into a canary-filled host pool. */
    private void assertBackupMoves(ThrowingShape shape, long seed) {
        byte[] deviceBytes = LayoutOracle.fill(device.buffer(), seed);
        byte[] expected = LayoutOracle.canary(host.buffer(), seed + 1);
        long[] d = {40, 41, 7, 63};
        long[] h = {5, 6, 0, 31};
        Transfer t = shape.apply(host.backup(device).deviceIndices(d).hostIndices(h)).submit();
        t.await();
        assertSame(t.backend(), IoBackend.CPU);
        assertEquals(t.bytes(), 4 * 4 * rowBytes());
        Oracle.applyTransfer(
                deviceBytes, devicePlacement(), expected, hostPlacement(), d, h, 0, 0, 4);
        LayoutOracle.assertBufferEquals(host.buffer(), expected, "host after backup");
        LayoutOracle.assertBufferEquals(device.buffer(), deviceBytes, "device (the source)");
    }

    /** Sets a shape (or not) on a backup request. */
    @FunctionalInterface
    private interface ThrowingShape {
        HostKvPool.TransferRequest apply(HostKvPool.TransferRequest request);
    }

    @DataProvider
    public Object[][] acceptedShapes() {
        return new Object[][] {
            {1, 1}, // the smallest
            {65535, 32}, // the limits themselves
            {4, 16},
            {0, 0}, // the executor's setting
            {-1, -7}, // 0 or less: the executor's setting
            {0, 32}, // one from the executor, one given
            {-3, 8},
            {Integer.MIN_VALUE, 1},
        };
    }

    @Test(dataProvider = "acceptedShapes")
    public void aShapeWithinTheLimitsIsIgnoredOnCpu(int ctaBudget, int warpsPerCta) {
        long seed = 100 + (ctaBudget & 0xff) * 64L + (warpsPerCta & 0x3f);
        assertBackupMoves(r -> r.launch(ctaBudget, warpsPerCta), seed);
        assertBackupMoves(r -> r.launch(ctaBudget, warpsPerCta).overlapsCompute(), seed + 2);
    }

    @Test
    public void aLoadWithAShapeAndTheOverlapMarkMovesItsLayer() {
        byte[] hostBytes = LayoutOracle.fill(host.buffer(), 21);
        byte[] expected = LayoutOracle.canary(device.buffer(), 22);
        long[] h = {3, 4, 30};
        long[] d = {60, 61, 0};
        Transfer t =
                host.load(device, 2)
                        .hostIndices(h)
                        .deviceIndices(d)
                        .overlapsCompute()
                        .launch(2, 4)
                        .submit();
        t.await();
        assertSame(t.backend(), IoBackend.CPU);
        assertEquals(t.bytes(), 3 * rowBytes());
        Oracle.applyTransfer(
                hostBytes, hostPlacement(), expected, devicePlacement(), h, d, 2, 2, 1);
        LayoutOracle.assertBufferEquals(device.buffer(), expected, "device after load");
    }

    @Test
    public void theGeneralRequestTakesAShape() {
        byte[] deviceBytes = LayoutOracle.fill(device.buffer(), 31);
        byte[] expected = LayoutOracle.canary(host.buffer(), 32);
        long[] s = {40, 41};
        long[] d = {5, 6};
        Transfer t =
                Kvio.request(host.executor(), device, host)
                        .srcIndices(s)
                        .dstIndices(d)
                        .srcLayerStart(1)
                        .dstLayerStart(2)
                        .layers(2)
                        .launch(3, 8)
                        .overlapsCompute()
                        .submit();
        t.await();
        assertEquals(t.bytes(), 2 * 2 * rowBytes());
        Oracle.applyTransfer(
                deviceBytes, devicePlacement(), expected, hostPlacement(), s, d, 1, 2, 2);
        LayoutOracle.assertBufferEquals(host.buffer(), expected, "host after the general request");
    }

    @DataProvider
    public Object[][] refusedShapes() {
        return new Object[][] {
            {65536, 1}, {1, 33}, {Integer.MAX_VALUE, 0}, {0, 33}, {-1, 64}, {70000, 64},
        };
    }

    @Test(dataProvider = "refusedShapes")
    public void aShapePastTheLimitsIsRefusedAndNothingMoves(int ctaBudget, int warpsPerCta) {
        String named = "launch(" + ctaBudget + ", " + warpsPerCta + ")"; // as given
        assertRefused(
                () ->
                        host.backup(device)
                                .deviceIndices(1, 2)
                                .hostIndices(3, 4)
                                .launch(ctaBudget, warpsPerCta)
                                .submit(),
                named);
        assertRefused(
                () ->
                        host.load(device, 1)
                                .hostIndices(3)
                                .deviceIndices(9)
                                .overlapsCompute()
                                .launch(ctaBudget, warpsPerCta)
                                .submit(),
                named);
        assertRefused(
                () ->
                        Kvio.request(host.executor(), host, device)
                                .srcIndices(idx(0, 1))
                                .dstIndices(idx(10, 11))
                                .layers(4)
                                .launch(ctaBudget, warpsPerCta)
                                .submit(),
                named);
    }

    @Test(dataProvider = "refusedShapes")
    public void emptyListsWithABadShapeAreRefused(int ctaBudget, int warpsPerCta) {
        assertRefused(
                () ->
                        host.backup(device)
                                .deviceIndices(new long[0])
                                .hostIndices(new int[0])
                                .launch(ctaBudget, warpsPerCta)
                                .submit(),
                "launch(");
        assertRefused(
                () ->
                        host.load(device, 0)
                                .hostIndices(idx())
                                .deviceIndices(idx())
                                .launch(ctaBudget, warpsPerCta)
                                .submit(),
                "launch(");
        assertRefused(
                () ->
                        Kvio.request(host.executor(), device, host)
                                .srcIndices(new long[0])
                                .dstIndices(new long[0])
                                .layers(1)
                                .launch(ctaBudget, warpsPerCta)
                                .submit(),
                "launch(");
    }

    @Test
    public void aLoadOfALayerNotHeldChecksTheShape() {
        // Holds device layers [0, 2): a load of layer 3 moves nothing but is checked.
        HostKvPool shard = open(PoolFixtures.host(device, KvLayout.PAGE_FIRST, 8, 0, 2));
        List<java.nio.ByteBuffer> buffers = List.of(device.buffer(), host.buffer(), shard.buffer());
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> shard.load(device, 3).hostIndices(1).deviceIndices(2).launch(1, 64).submit(),
                buffers,
                LIMITS);
        Transfer t = shard.load(device, 3).hostIndices(1).deviceIndices(2).launch(1, 32).submit();
        assertTrue(t.isDone());
        assertEquals(t.bytes(), 0);
        assertEquals(t.skippedLayers(), new long[] {3});
    }

    @Test
    public void emptyListsWithAGoodShapeComplete() {
        Transfer t =
                host.backup(device)
                        .deviceIndices(new long[0])
                        .hostIndices(new long[0])
                        .launch(65535, 32)
                        .overlapsCompute()
                        .submit();
        assertTrue(t.isDone());
        assertEquals(t.bytes(), 0);
        Transfer u =
                Kvio.request(host.executor(), device, host)
                        .srcIndices(new int[0])
                        .dstIndices(new int[0])
                        .layers(4)
                        .launch(1, 1)
                        .submit();
        assertTrue(u.isDone());
        assertEquals(u.bytes(), 0);
    }

    @Test
    public void aRequestKeepsItsShapeUntilChanged() {
        HostKvPool.TransferRequest request =
                host.backup(device).deviceIndices(40).hostIndices(5).launch(1, 33);
        assertRefused(request::submit, "launch(1, 33)");
        assertRefused(request::submit, "launch(1, 33)"); // still set
        request.launch(0, 0); // back to the executor's setting
        assertBackupMoves(r -> request.deviceIndices(40, 41, 7, 63).hostIndices(5, 6, 0, 31), 51);
        request.launch(1, 33).launch(-1, -1); // the last call wins
        request.submit().await();
    }

    @Test
    public void otherErrorsKeepTheirMessagesWithAShape() {
        // A shape within the limits changes neither what else is checked nor how it is named.
        assertRejected(
                KvioOutOfRangeException.class,
                () ->
                        host.load(device, 0)
                                .hostIndices(0, 32)
                                .deviceIndices(0, 1)
                                .launch(2, 2)
                                .submit(),
                openBuffers(),
                "hostIndices[1] = 32 is out of range: the host pool has 32 token slots");
        assertRejected(
                KvioOutOfRangeException.class,
                () ->
                        Kvio.request(host.executor(), device, host)
                                .srcIndices(64)
                                .dstIndices(0)
                                .layers(1)
                                .launch(2, 2)
                                .submit(),
                openBuffers(),
                "srcIndices[0] = 64 is out of range");
    }

    /** KvioInvalidArgumentException naming the shape and its limits; no pool byte changed. */
    private void assertRefused(ThrowingRunnable call, String named) {
        KvioInvalidArgumentException e =
                assertRejected(KvioInvalidArgumentException.class, call, openBuffers(), LIMITS);
        assertMessage(e, named, "is not valid");
        assertTrue(e.getMessage().startsWith("launch("), e.getMessage());
    }
}
