/*
 * Conformance matrix of the two HiCache entry points on the CPU backend: for every pool kind,
 * host layout, page size, row size and kind of index set, backup(device) (all layers) and
 * load(device, layer) (one layer at a time) must leave the WHOLE destination equal to what the
 * oracle (io.kvio.oracle) builds by naive per-row copying (canary everywhere else) and the source
 * unchanged. Device pools are allocated by kvio, or wrapped per component / per layer over memory
 * laid out out of order, with gaps, inside another pool.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.kvio.PoolFixtures.Config;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Indices;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Placement;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class ConformanceMatrixTest {

    enum IndexKind {
        WHOLE_PAGES,
        TOKEN_GRANULAR,
        CROSSING_RUNS
    }

    enum DeviceMemory {
        ALLOCATED,
        WRAP_SINGLE,
        WRAP_COMPONENTS,
        WRAP_LAYERS
    }

    static final long DEVICE_LAYERS = 3;
    static final long[] PAGE_SIZES = {1, 16, 64};
    static final long[] ROW_BYTES = {8, 64, 576, 656, 4096};

    /** Device and host page counts per page size: small pools, host smaller than device. */
    static long devicePages(long pageSize) {
        return pageSize == 1 ? 40 : pageSize == 16 ? 6 : 3;
    }

    static long hostPages(long pageSize) {
        return pageSize == 1 ? 32 : pageSize == 16 ? 5 : 2;
    }

    /** (heads, headBytes) pairs per kind and row size: MHA 2 heads, MLA one latent head. */
    static List<long[]> rowGeometries(PoolKind kind) {
        List<long[]> out = new ArrayList<>();
        for (long row : ROW_BYTES) {
            out.add(kind == PoolKind.MHA ? new long[] {2, row / 2} : new long[] {1, row});
        }
        if (kind == PoolKind.MHA) {
            out.add(new long[] {3, 22}); // odd head count, head bytes not a multiple of 4
        }
        return out;
    }

    @DataProvider(name = "matrix")
    public static Object[][] matrix() {
        PoolFixtures.Rows rows = new PoolFixtures.Rows(1);
        for (PoolKind kind : PoolKind.values()) {
            for (KvLayout layout : PoolFixtures.hostLayouts(kind)) {
                for (long ps : PAGE_SIZES) {
                    for (long[] hg : rowGeometries(kind)) {
                        for (IndexKind ik : IndexKind.values()) {
                            Config cfg =
                                    new Config(
                                            kind, DEVICE_LAYERS, devicePages(ps), ps, hg[0], hg[1]);
                            rows.add(cfg, layout, ik, DeviceMemory.ALLOCATED);
                        }
                    }
                }
            }
        }
        return rows.toArray();
    }

    @DataProvider(name = "wrapped")
    public static Object[][] wrapped() {
        PoolFixtures.Rows rows = new PoolFixtures.Rows(10_000);
        for (DeviceMemory mem :
                new DeviceMemory[] {
                    DeviceMemory.WRAP_SINGLE, DeviceMemory.WRAP_COMPONENTS, DeviceMemory.WRAP_LAYERS
                }) {
            for (PoolKind kind : PoolKind.values()) {
                for (KvLayout layout : PoolFixtures.hostLayouts(kind)) {
                    for (long ps : new long[] {1, 16}) {
                        for (long[] hg :
                                new long[][] {
                                    {kind == PoolKind.MHA ? 2 : 1, kind == PoolKind.MHA ? 4 : 8},
                                    {kind == PoolKind.MHA ? 2 : 1, kind == PoolKind.MHA ? 328 : 656}
                                }) {
                            Config cfg =
                                    new Config(
                                            kind, DEVICE_LAYERS, devicePages(ps), ps, hg[0], hg[1]);
                            IndexKind ik =
                                    (rows.seed() & 1) == 0
                                            ? IndexKind.TOKEN_GRANULAR
                                            : IndexKind.CROSSING_RUNS;
                            rows.add(cfg, layout, ik, mem);
                        }
                    }
                }
            }
        }
        return rows.toArray();
    }

    /**
     * Transfers of more than 4 MiB with rows of at least 512 bytes (the CPU executor's
     * streaming-store path), rows whose size is not a multiple of 16 so destination rows are
     * misaligned.
     */
    @DataProvider(name = "large")
    public static Object[][] large() {
        PoolFixtures.Rows rows = new PoolFixtures.Rows(20_000);
        for (PoolKind kind : PoolKind.values()) {
            for (KvLayout layout : PoolFixtures.hostLayouts(kind)) {
                for (IndexKind ik :
                        new IndexKind[] {IndexKind.WHOLE_PAGES, IndexKind.TOKEN_GRANULAR}) {
                    Config cfg = PoolFixtures.forKind(kind, 6, 96, 16, 2, 524, 2056);
                    rows.add(cfg, layout, ik);
                }
            }
        }
        return rows.toArray();
    }

    @Test(dataProvider = "large")
    public void largeTransfersWithMisalignedRows(
            Config cfg, KvLayout layout, IndexKind indexKind, long seed) {
        // backup of all layers, then loads of layers 5 and 0
        runCase(
                cfg,
                layout,
                indexKind,
                DeviceMemory.ALLOCATED,
                80,
                new long[] {5, 0},
                seed,
                4L << 20);
    }

    @Test(dataProvider = "matrix")
    public void backupAllLayersAndLoadPerLayer(
            Config cfg, KvLayout layout, IndexKind indexKind, DeviceMemory memory, long seed) {
        runCase(cfg, layout, indexKind, memory, seed);
    }

    @Test(dataProvider = "wrapped")
    public void wrappedDevicePools(
            Config cfg, KvLayout layout, IndexKind indexKind, DeviceMemory memory, long seed) {
        runCase(cfg, layout, indexKind, memory, seed);
    }

    /** Index pairs (host slots, device slots) of one kind, same length on both sides. */
    static long[][] indexPairs(
            IndexKind kind, Random rnd, long hostTokens, long deviceTokens, long pageSize) {
        long smaller = Math.min(hostTokens, deviceTokens);
        switch (kind) {
            case WHOLE_PAGES:
                {
                    int pages = (int) Math.max(1, (smaller / pageSize) / 2);
                    return new long[][] {
                        Indices.wholePages(rnd, hostTokens / pageSize, pageSize, pages),
                        Indices.wholePages(rnd, deviceTokens / pageSize, pageSize, pages)
                    };
                }
            case TOKEN_GRANULAR:
                {
                    int n = (int) Math.max(1, smaller * 3 / 8);
                    return new long[][] {
                        Indices.tokenGranular(rnd, hostTokens, n),
                        Indices.tokenGranular(rnd, deviceTokens, n)
                    };
                }
            case CROSSING_RUNS:
                {
                    int n = (int) Math.max(1, smaller * 3 / 8);
                    return new long[][] {
                        Indices.crossingRuns(rnd, hostTokens, pageSize, n),
                        Indices.crossingRuns(rnd, deviceTokens, pageSize, n)
                    };
                }
            default:
                throw new AssertionError(kind);
        }
    }

    private static void runCase(
            Config cfg, KvLayout layout, IndexKind indexKind, DeviceMemory memory, long seed) {
        runCase(
                cfg,
                layout,
                indexKind,
                memory,
                hostPages(cfg.pageSize),
                allLayers(cfg.layers),
                seed,
                0);
    }

    /**
     * A host pool of {@code hostPages} over a device pool in {@code memory}, index pairs of {@code
     * indexKind} moving more than {@code minBytes} per backup: checkBackupAndLoads of all layers,
     * then of {@code loadLayers}.
     */
    private static void runCase(
            Config cfg,
            KvLayout layout,
            IndexKind indexKind,
            DeviceMemory memory,
            long hostPages,
            long[] loadLayers,
            long seed,
            long minBytes) {
        Random rnd = new Random(seed);
        long[][] pairs =
                indexPairs(
                        indexKind,
                        rnd,
                        hostPages * cfg.pageSize,
                        cfg.pages * cfg.pageSize,
                        cfg.pageSize);
        assertTrue(
                PoolFixtures.movedBytes(cfg, pairs[0].length, cfg.layers) > minBytes,
                "large enough");
        try (DeviceUnderTest dev = DeviceUnderTest.create(cfg, memory, seed);
                HostKvPool host = PoolFixtures.host(dev.pool(), layout, hostPages)) {
            Placement hostPlacement =
                    Placement.standard(cfg.geometry(layout, cfg.layers, hostPages), 0);
            checkBackupAndLoads(
                    cfg,
                    dev,
                    host,
                    hostPlacement,
                    pairs[0],
                    pairs[1],
                    0,
                    cfg.layers,
                    loadLayers,
                    seed);
        }
    }

    static long[] allLayers(long n) {
        long[] out = new long[(int) n];
        for (int i = 0; i < n; i++) out[i] = i;
        return out;
    }

    /**
     * Backup of device layers [layerStart, layerStart + hostLayers) into the host, then loads of
     * {@code loadLayers} (device layer ids, all held by the host) one at a time.
     */
    static void checkBackupAndLoads(
            Config cfg,
            DeviceUnderTest dev,
            HostKvPool host,
            Placement hostPlacement,
            long[] hostIdx,
            long[] devIdx,
            long layerStart,
            long hostLayers,
            long[] loadLayers,
            long seed) {
        ByteBuffer hostBuf = host.buffer();
        String what = cfg + " host " + hostPlacement.geometry() + " n=" + hostIdx.length;

        // backup: device -> host, all held layers
        byte[] devData = LayoutOracle.fill(dev.buffer(), seed);
        byte[] expectedHost = LayoutOracle.canary(hostBuf, seed);
        Oracle.applyTransfer(
                devData,
                dev.placement(),
                expectedHost,
                hostPlacement,
                devIdx,
                hostIdx,
                layerStart,
                0,
                hostLayers);
        try (TokenIndices h = TokenIndices.of(hostIdx);
                TokenIndices d = TokenIndices.of(devIdx);
                Transfer t = host.backup(dev.pool()).deviceIndices(d).hostIndices(h).submit()) {
            t.await();
            assertTrue(t.isDone());
            assertEquals(
                    t.bytes(),
                    PoolFixtures.movedBytes(cfg, hostIdx.length, hostLayers),
                    "bytes of backup");
        }
        LayoutOracle.assertPoolEquals(
                LayoutOracle.snapshot(hostBuf),
                expectedHost,
                hostPlacement,
                "host after backup, " + what);
        LayoutOracle.assertBytesEqual(
                LayoutOracle.snapshot(dev.buffer()),
                devData,
                "device (source) after backup, " + what);

        // loads: host -> device, one layer per call, cumulative
        byte[] hostData = LayoutOracle.fill(hostBuf, seed + 7);
        byte[] expectedDev = LayoutOracle.canary(dev.buffer(), seed + 7);
        try (TokenIndices h = TokenIndices.of(hostIdx);
                TokenIndices d = TokenIndices.of(devIdx)) {
            for (long layer : loadLayers) {
                Oracle.applyTransfer(
                        hostData,
                        hostPlacement,
                        expectedDev,
                        dev.placement(),
                        hostIdx,
                        devIdx,
                        layer - layerStart,
                        layer,
                        1);
                try (Transfer t =
                        host.load(dev.pool(), layer).hostIndices(h).deviceIndices(d).submit()) {
                    t.await();
                    assertEquals(
                            t.bytes(),
                            PoolFixtures.movedBytes(cfg, hostIdx.length, 1),
                            "bytes of load of layer " + layer);
                }
                LayoutOracle.assertPoolEquals(
                        LayoutOracle.snapshot(dev.buffer()),
                        expectedDev,
                        dev.placement(),
                        "device after load of layer " + layer + ", " + what);
            }
        }
        LayoutOracle.assertBytesEqual(
                LayoutOracle.snapshot(hostBuf), hostData, "host (source) after loads, " + what);
    }

    /**
     * A device pool plus the whole memory it lives in (a ByteBuffer) and the oracle's placement of
     * its rows inside that memory. Wrapped pools live in a backing pool, in shuffled order with
     * gaps, so a write through a wrong base lands on canary bytes.
     */
    record DeviceUnderTest(
            DeviceKvPool pool, ByteBuffer buffer, Placement placement, DeviceKvPool backing)
            implements AutoCloseable {

        static DeviceUnderTest create(Config cfg, DeviceMemory memory, long seed) {
            Geometry g = cfg.deviceGeometry();
            if (memory == DeviceMemory.ALLOCATED) {
                DeviceKvPool pool = cfg.allocateDevice();
                return new DeviceUnderTest(pool, pool.buffer(), Placement.standard(g, 0), null);
            }
            final long gap = 40;
            if (memory == DeviceMemory.WRAP_SINGLE) {
                return wrapSingle(cfg, g, gap);
            }
            final boolean perLayer = memory == DeviceMemory.WRAP_LAYERS;
            final int pieces = (int) (perLayer ? g.components * g.layers : g.components);
            final long pieceBytes = perLayer ? g.tokens() * g.rowBytes() : g.componentBytes();
            final long backingBytes = pieces * (pieceBytes + gap) + gap;
            DeviceKvPool backing = allocateBacking(backingBytes);
            try {
                long base = backing.regionAddress(0);
                List<Integer> order = new ArrayList<>();
                for (int i = 0; i < pieces; i++) order.add(i);
                Collections.shuffle(order, new Random(seed));
                long[] offsets = new long[pieces];
                for (int slot = 0; slot < pieces; slot++) {
                    offsets[order.get(slot)] = gap + slot * (pieceBytes + gap);
                }
                long[] addresses = new long[pieces];
                for (int i = 0; i < pieces; i++) addresses[i] = base + offsets[i];
                PoolSpec spec = cfg.spec(KvLayout.LAYER_FIRST);
                DeviceKvPool pool =
                        perLayer
                                ? DeviceKvPool.wrapLayers(
                                        spec, addresses, pieceBytes, IoBackend.CPU)
                                : DeviceKvPool.wrapComponents(
                                        spec, addresses, pieceBytes, IoBackend.CPU);
                Placement placement =
                        perLayer
                                ? Placement.layerTable(g, offsets)
                                : Placement.componentTable(g, offsets);
                assertEquals(pool.regionCount(), pieces, "regions of a wrapped pool");
                for (int i = 0; i < pieces; i++) {
                    assertEquals(pool.regionAddress(i), addresses[i], "region " + i + " address");
                    assertEquals(pool.regionBytes(i), pieceBytes, "region " + i + " bytes");
                }
                return new DeviceUnderTest(pool, backing.buffer(), placement, backing);
            } catch (RuntimeException | Error e) {
                backing.close();
                throw e;
            }
        }

        /** One region at an odd offset inside a backing pool; canary before and after it. */
        private static DeviceUnderTest wrapSingle(Config cfg, Geometry g, long gap) {
            long bytes = g.totalBytes();
            DeviceKvPool backing = allocateBacking(bytes + 2 * gap);
            try {
                DeviceKvPool pool =
                        DeviceKvPool.wrap(
                                cfg.spec(KvLayout.LAYER_FIRST),
                                backing.regionAddress(0) + gap,
                                bytes,
                                IoBackend.CPU);
                assertEquals(pool.regionCount(), 1);
                assertEquals(pool.regionAddress(0), backing.regionAddress(0) + gap);
                return new DeviceUnderTest(
                        pool, backing.buffer(), Placement.standard(g, gap), backing);
            } catch (RuntimeException | Error e) {
                backing.close();
                throw e;
            }
        }

        /** Plain memory from kvio: a one-row MLA pool of the given size. */
        static DeviceKvPool allocateBacking(long bytes) {
            return DeviceKvPool.allocate(
                    new Config(PoolKind.MLA, 1, 1, 1, 1, bytes).spec(KvLayout.LAYER_FIRST),
                    IoBackend.CPU);
        }

        @Override
        public void close() {
            pool.close();
            if (backing != null) backing.close();
        }
    }
}
