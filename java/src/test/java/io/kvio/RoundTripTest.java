/*
 * Round trips through host pools: back up device rows into a canary-filled host pool and check it
 * whole against the oracle, wipe the device, load them back layer by layer into OTHER device slots
 * and check the device against the oracle (restored rows where they were sent, canary everywhere
 * else) and the host (the loads' source) unchanged; and the general Kvio.transfer between two
 * host pools of different layouts (e.g. page_first -> page_head), including layer offsets.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;

import io.kvio.PoolFixtures.Config;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Indices;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Placement;
import java.nio.ByteBuffer;
import java.util.Random;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class RoundTripTest {

    @DataProvider(name = "layouts")
    public static Object[][] layouts() {
        PoolFixtures.Rows rows = new PoolFixtures.Rows(500);
        for (PoolKind kind : PoolKind.values()) {
            for (KvLayout layout : PoolFixtures.hostLayouts(kind)) {
                for (long ps : new long[] {1, 16}) {
                    rows.add(kind, layout, ps);
                }
            }
        }
        return rows.toArray();
    }

    @Test(dataProvider = "layouts")
    public void backupWipeAndLoadIntoOtherSlots(
            PoolKind kind, KvLayout layout, long ps, long seed) {
        long heads = kind == PoolKind.MHA ? 4 : 1;
        long headBytes = kind == PoolKind.MHA ? 16 : 576;
        Config cfg = new Config(kind, 4, ps == 1 ? 48 : 6, ps, heads, headBytes);
        long hostPages = ps == 1 ? 32 : 4;
        Random rnd = new Random(seed);
        long deviceTokens = cfg.pages * ps;
        long hostTokens = hostPages * ps;
        int n = (int) (hostTokens / 2);
        // source and destination device slots disjoint: split the device slots in two halves
        long[] shuffled = Indices.tokenGranular(rnd, deviceTokens, (int) deviceTokens);
        long[] devFrom = java.util.Arrays.copyOfRange(shuffled, 0, n);
        long[] devTo = java.util.Arrays.copyOfRange(shuffled, n, 2 * n);
        long[] hostIdx = Indices.crossingRuns(rnd, hostTokens, ps, n);

        try (DeviceKvPool device = cfg.allocateDevice();
                HostKvPool host = PoolFixtures.host(device, layout, hostPages);
                TokenIndices h = TokenIndices.of(hostIdx);
                TokenIndices from = TokenIndices.of(devFrom);
                TokenIndices to = TokenIndices.of(devTo)) {
            ByteBuffer devBuf = device.buffer();
            Geometry dg = cfg.deviceGeometry();
            Placement devPlacement = Placement.standard(dg, 0);
            Placement hostPlacement =
                    Placement.standard(cfg.geometry(layout, cfg.layers, hostPages), 0);
            byte[] original = LayoutOracle.fill(devBuf, seed);
            byte[] expectedHost = LayoutOracle.canary(host.buffer(), seed);
            Oracle.applyTransfer(
                    original,
                    devPlacement,
                    expectedHost,
                    hostPlacement,
                    devFrom,
                    hostIdx,
                    0,
                    0,
                    cfg.layers);
            try (Transfer t = host.backup(device).deviceIndices(from).hostIndices(h).submit()) {
                t.await();
                assertEquals(t.bytes(), PoolFixtures.movedBytes(cfg, n, cfg.layers));
            }
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(host.buffer()),
                    expectedHost,
                    hostPlacement,
                    "host after backup via " + layout + " " + cfg);
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(devBuf),
                    original,
                    "device (source) after backup via " + layout + " " + cfg);
            byte[] wiped = LayoutOracle.canary(devBuf, seed + 1);
            byte[] expected = wiped.clone();
            for (long layer = 0; layer < cfg.layers; layer++) {
                // restored row of (devFrom[i], layer) lands at (devTo[i], layer); nothing else
                // changes
                Oracle.applyTransfer(
                        original,
                        devPlacement,
                        expected,
                        devPlacement,
                        devFrom,
                        devTo,
                        layer,
                        layer,
                        1);
                try (Transfer t =
                        host.load(device, layer).hostIndices(h).deviceIndices(to).submit()) {
                    t.await();
                }
                LayoutOracle.assertPoolEquals(
                        LayoutOracle.snapshot(devBuf),
                        expected,
                        devPlacement,
                        "device after round trip of layer " + layer + " via " + layout + " " + cfg);
                LayoutOracle.assertBytesEqual(
                        LayoutOracle.snapshot(host.buffer()),
                        expectedHost,
                        "host (source) after load of layer " + layer + " via " + layout);
            }
        }
    }

    @DataProvider(name = "hostPairs")
    public static Object[][] hostPairs() {
        PoolFixtures.Rows rows = new PoolFixtures.Rows(900);
        for (PoolKind kind : PoolKind.values()) {
            for (KvLayout src : PoolFixtures.hostLayouts(kind)) {
                for (KvLayout dst : PoolFixtures.hostLayouts(kind)) {
                    rows.add(kind, src, dst);
                }
            }
        }
        return rows.toArray();
    }

    /** Kvio.transfer between two host pools of any layouts, all layers, then with a layer map. */
    @Test(dataProvider = "hostPairs")
    public void hostToHostAnyLayout(
            PoolKind kind, KvLayout srcLayout, KvLayout dstLayout, long seed) {
        long ps = 8;
        Config cfg = PoolFixtures.forKind(kind, 4, 6, ps, 3, 24, 72);
        long srcPages = 5;
        long dstPages = 4;
        Random rnd = new Random(seed);
        int n = 20;
        long[] srcIdx = Indices.crossingRuns(rnd, srcPages * ps, ps, n);
        long[] dstIdx = Indices.tokenGranular(rnd, dstPages * ps, n);
        // all layers, then src layers [1, 3) -> dst layers [2, 4)
        long[][] layerMaps = {{0, 0, cfg.layers}, {1, 2, 2}};
        checkHostToHost(
                cfg, srcLayout, srcPages, dstLayout, dstPages, srcIdx, dstIdx, layerMaps, seed);
    }

    /**
     * Index sets the planner can coalesce as far as possible (consecutive whole pages, in order, on
     * both sides) with partial layer maps, so runs merged across tokens and layers must stop at the
     * edge of the mapped layers and of the index runs.
     */
    @Test(dataProvider = "hostPairs")
    public void hostToHostCoalescedRunsWithLayerMaps(
            PoolKind kind, KvLayout srcLayout, KvLayout dstLayout, long seed) {
        long ps = 4;
        Config cfg = PoolFixtures.forKind(kind, 4, 8, ps, 2, 8, 16);
        long pages = 8;
        // src pages 1..3 -> dst pages 4..6, then src slots 24..30 -> dst slots 0..6: contiguous on
        // both sides across a page boundary, ending one slot short of a page end
        long[] srcIdx =
                concat(range(1 * ps, 4 * ps), range(6 * ps, 7 * ps), range(7 * ps, 8 * ps - 1));
        long[] dstIdx = concat(range(4 * ps, 7 * ps), range(0, ps), range(ps, 2 * ps - 1));
        long[][] layerMaps = {{0, 0, 4}, {1, 2, 2}, {1, 0, 3}, {3, 3, 1}, {0, 3, 1}};
        checkHostToHost(cfg, srcLayout, pages, dstLayout, pages, srcIdx, dstIdx, layerMaps, seed);
    }

    /**
     * Kvio.transfer between two host pools over one device pool, once per layer map {src layer
     * start, dst layer start, layers}: each destination is canary-filled first and compared whole
     * with what the oracle builds; the source must stay unchanged.
     */
    private static void checkHostToHost(
            Config cfg,
            KvLayout srcLayout,
            long srcPages,
            KvLayout dstLayout,
            long dstPages,
            long[] srcIdx,
            long[] dstIdx,
            long[][] layerMaps,
            long seed) {
        Placement sp = Placement.standard(cfg.geometry(srcLayout, cfg.layers, srcPages), 0);
        Placement dp = Placement.standard(cfg.geometry(dstLayout, cfg.layers, dstPages), 0);
        try (DeviceKvPool device = cfg.allocateDevice();
                HostKvPool src = PoolFixtures.host(device, srcLayout, srcPages);
                HostKvPool dst = PoolFixtures.host(device, dstLayout, dstPages);
                KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                TokenIndices si = TokenIndices.of(srcIdx);
                TokenIndices di = TokenIndices.of(dstIdx)) {
            byte[] srcData = LayoutOracle.fill(src.buffer(), seed);
            for (long[] m : layerMaps) {
                byte[] expected =
                        LayoutOracle.canary(dst.buffer(), seed + m[0] * 16 + m[1] * 4 + m[2]);
                Oracle.applyTransfer(srcData, sp, expected, dp, srcIdx, dstIdx, m[0], m[1], m[2]);
                try (Transfer t = Kvio.transfer(executor, src, dst, si, di, m[0], m[1], m[2])) {
                    t.await();
                    assertEquals(t.bytes(), PoolFixtures.movedBytes(cfg, srcIdx.length, m[2]));
                }
                String what =
                        String.format(
                                "%s -> %s layers [%d,%d) -> [%d,%d)",
                                srcLayout, dstLayout, m[0], m[0] + m[2], m[1], m[1] + m[2]);
                LayoutOracle.assertPoolEquals(
                        LayoutOracle.snapshot(dst.buffer()), expected, dp, what);
                LayoutOracle.assertBytesEqual(
                        LayoutOracle.snapshot(src.buffer()), srcData, "source after " + what);
            }
        }
    }

    static long[] range(long from, long to) {
        long[] out = new long[(int) (to - from)];
        for (int i = 0; i < out.length; i++) out[i] = from + i;
        return out;
    }

    static long[] concat(long[]... parts) {
        return java.util.Arrays.stream(parts).flatMapToLong(java.util.Arrays::stream).toArray();
    }

    /**
     * A host pool whose page size differs from the device's (the reference's DCP case, host
     * page_size = device page_size / dcp_size, and its inverse): slots are slots, each side is
     * addressed with its own page size.
     */
    @Test(dataProvider = "layouts")
    public void hostPageSizeDiffersFromDevice(
            PoolKind kind, KvLayout layout, long devicePageSize, long seed) {
        long hostPageSize = devicePageSize == 1 ? 4 : devicePageSize / 4;
        Config cfg =
                PoolFixtures.forKind(
                        kind, 3, devicePageSize == 1 ? 64 : 4, devicePageSize, 2, 12, 40);
        long hostPages = 48 / hostPageSize;
        Random rnd = new Random(seed);
        long[] hostIdx = Indices.crossingRuns(rnd, hostPages * hostPageSize, hostPageSize, 20);
        long[] devIdx = Indices.crossingRuns(rnd, cfg.pages * devicePageSize, devicePageSize, 20);
        try (DeviceKvPool device = cfg.allocateDevice();
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout(layout)
                                .ioBackend(IoBackend.CPU)
                                .pageSize(hostPageSize)
                                .pages(hostPages)
                                .threads(1)
                                .build();
                TokenIndices h = TokenIndices.of(hostIdx);
                TokenIndices d = TokenIndices.of(devIdx)) {
            assertEquals(host.spec().pageSize(), hostPageSize);
            Placement dp = Placement.standard(cfg.deviceGeometry(), 0);
            Placement hp =
                    Placement.standard(
                            new Geometry(
                                    cfg.components(),
                                    LayoutOracle.shape(layout),
                                    cfg.layers,
                                    hostPages,
                                    hostPageSize,
                                    cfg.heads,
                                    cfg.headBytes),
                            0);
            byte[] devData = LayoutOracle.fill(device.buffer(), seed);
            byte[] expectedHost = LayoutOracle.canary(host.buffer(), seed);
            Oracle.applyTransfer(devData, dp, expectedHost, hp, devIdx, hostIdx, 0, 0, cfg.layers);
            try (Transfer t = host.backup(device).deviceIndices(d).hostIndices(h).submit()) {
                t.await();
            }
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(host.buffer()),
                    expectedHost,
                    hp,
                    "host (page size "
                            + hostPageSize
                            + ") after backup from device (page size "
                            + devicePageSize
                            + ")");
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(device.buffer()),
                    devData,
                    "device (source) after backup");
            byte[] expectedDev = LayoutOracle.canary(device.buffer(), seed + 1);
            Oracle.applyTransfer(expectedHost, hp, expectedDev, dp, hostIdx, devIdx, 1, 1, 1);
            try (Transfer t = host.load(device, 1).hostIndices(h).deviceIndices(d).submit()) {
                t.await();
            }
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(device.buffer()),
                    expectedDev,
                    dp,
                    "device after load of layer 1 from a host with page size " + hostPageSize);
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(host.buffer()),
                    expectedHost,
                    "host (source, page size " + hostPageSize + ") after the load");
        }
    }

    /** Repeated source slots (one row broadcast to several destinations) are valid. */
    @Test
    public void repeatedSourceSlotsBroadcast() {
        Config cfg = new Config(PoolKind.MHA, 2, 4, 4, 2, 16);
        long[] hostIdx = {0, 1, 2, 3, 9};
        long[] devIdx = {5, 5, 5, 7, 5};
        try (DeviceKvPool device = cfg.allocateDevice();
                HostKvPool host = PoolFixtures.host(device, KvLayout.PAGE_HEAD, 4);
                TokenIndices h = TokenIndices.of(hostIdx);
                TokenIndices d = TokenIndices.of(devIdx)) {
            Placement dp = Placement.standard(cfg.deviceGeometry(), 0);
            Placement hp = Placement.standard(cfg.geometry(KvLayout.PAGE_HEAD, cfg.layers, 4), 0);
            byte[] devData = LayoutOracle.fill(device.buffer(), 5);
            byte[] expected = LayoutOracle.canary(host.buffer(), 5);
            Oracle.applyTransfer(devData, dp, expected, hp, devIdx, hostIdx, 0, 0, cfg.layers);
            try (Transfer t = host.backup(device).deviceIndices(d).hostIndices(h).submit()) {
                t.await();
            }
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(host.buffer()), expected, hp, "broadcast backup");
        }
    }

    /**
     * Same pool, other layers, same slots: layer 0 copied onto layer 2 in place is not an overlap.
     */
    @Test
    public void samePoolOtherLayers() {
        Config cfg = new Config(PoolKind.MLA, 4, 4, 4, 1, 24);
        long[] idx = {1, 2, 3, 8};
        try (DeviceKvPool device = cfg.allocateDevice();
                HostKvPool host = PoolFixtures.host(device, KvLayout.PAGE_FIRST, 4);
                KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 1);
                TokenIndices i = TokenIndices.of(idx)) {
            Placement hp = Placement.standard(cfg.geometry(KvLayout.PAGE_FIRST, cfg.layers, 4), 0);
            byte[] data = LayoutOracle.fill(host.buffer(), 6);
            byte[] expected = data.clone();
            Oracle.applyTransfer(data, hp, expected, hp, idx, idx, 0, 2, 2);
            try (Transfer t = Kvio.transfer(executor, host, host, i, i, 0, 2, 2)) {
                t.await();
            }
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(host.buffer()),
                    expected,
                    hp,
                    "layers [0,2) copied onto [2,4) of the same pool");
        }
    }
}
