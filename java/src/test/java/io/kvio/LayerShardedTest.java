/*
 * Layer-sharded host pools (reference §4.5, seed case 1): a host pool holding device layers
 * [a, b) for every kind and layout. Backup moves exactly those layers (host layer j = device
 * layer a + j); a load of a layer the pool does not hold moves nothing and leaves the device as
 * it was; a load of a held layer restores exactly that layer.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.kvio.PoolFixtures.Config;
import io.kvio.oracle.Indices;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Placement;
import java.nio.ByteBuffer;
import java.util.Random;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class LayerShardedTest {

    static final long DEVICE_LAYERS = 6;

    @DataProvider(name = "shards")
    public static Object[][] shards() {
        long[][] ranges = {{0, 2}, {2, 3}, {5, 1}, {0, 6}, {3, 3}};
        PoolFixtures.Rows rows = new PoolFixtures.Rows(3000);
        for (PoolKind kind : PoolKind.values()) {
            for (KvLayout layout : PoolFixtures.hostLayouts(kind)) {
                for (long[] r : ranges) {
                    // device memory: allocated, or a per-layer table (shuffled, with gaps) for some
                    // ranges
                    ConformanceMatrixTest.DeviceMemory mem =
                            r[0] == 2 || r[0] == 5
                                    ? ConformanceMatrixTest.DeviceMemory.WRAP_LAYERS
                                    : ConformanceMatrixTest.DeviceMemory.ALLOCATED;
                    rows.add(kind, layout, r[0], r[1], mem);
                }
            }
        }
        return rows.toArray();
    }

    @Test(dataProvider = "shards")
    public void shardedBackupAndLoads(
            PoolKind kind,
            KvLayout layout,
            long start,
            long count,
            ConformanceMatrixTest.DeviceMemory memory,
            long seed) {
        long ps = 4;
        Config cfg = PoolFixtures.forKind(kind, DEVICE_LAYERS, 8, ps, 2, 24, 80);
        long hostPages = 6;
        Random rnd = new Random(seed);
        int n = 10;
        long[] hostIdx = Indices.crossingRuns(rnd, hostPages * ps, ps, n);
        long[] devIdx = Indices.tokenGranular(rnd, cfg.pages * ps, n);
        // the host holds only `count` layers: its geometry has exactly those
        Placement hostPlacement = Placement.standard(cfg.geometry(layout, count, hostPages), 0);
        String what =
                kind + " " + layout + " layers [" + start + ", " + (start + count) + ") " + memory;

        try (ConformanceMatrixTest.DeviceUnderTest dev =
                        ConformanceMatrixTest.DeviceUnderTest.create(cfg, memory, seed);
                HostKvPool host = PoolFixtures.host(dev.pool(), layout, hostPages, start, count);
                TokenIndices h = TokenIndices.of(hostIdx);
                TokenIndices d = TokenIndices.of(devIdx)) {
            DeviceKvPool device = dev.pool();
            ByteBuffer devBuf = dev.buffer();
            Placement devPlacement = dev.placement();
            ByteBuffer hostBuf = host.buffer();
            assertEquals(host.spec().numLayers(), count, "host layers of " + what);
            assertTrue(
                    hostBuf.capacity() >= hostPlacement.geometry().totalBytes(),
                    "host buffer holds the shard");

            // backup: exactly device layers [start, start + count)
            byte[] devData = LayoutOracle.fill(devBuf, seed);
            byte[] expectedHost = LayoutOracle.canary(hostBuf, seed);
            Oracle.applyTransfer(
                    devData,
                    devPlacement,
                    expectedHost,
                    hostPlacement,
                    devIdx,
                    hostIdx,
                    start,
                    0,
                    count);
            try (Transfer t = host.backup(device).deviceIndices(d).hostIndices(h).submit()) {
                t.await();
                assertEquals(
                        t.bytes(), PoolFixtures.movedBytes(cfg, n, count), "backup bytes, " + what);
            }
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(hostBuf),
                    expectedHost,
                    hostPlacement,
                    "host after sharded backup, " + what);
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(devBuf), devData, "device after sharded backup, " + what);

            // loads of every device layer
            byte[] hostData = LayoutOracle.fill(hostBuf, seed + 1);
            byte[] expectedDev = LayoutOracle.canary(devBuf, seed + 1);
            for (long layer = 0; layer < DEVICE_LAYERS; layer++) {
                boolean held = layer >= start && layer < start + count;
                if (held) {
                    Oracle.applyTransfer(
                            hostData,
                            hostPlacement,
                            expectedDev,
                            devPlacement,
                            hostIdx,
                            devIdx,
                            layer - start,
                            layer,
                            1);
                }
                try (Transfer t =
                        host.load(device, layer).hostIndices(h).deviceIndices(d).submit()) {
                    if (!held) {
                        assertTrue(
                                t.isDone(),
                                "load of a layer the pool does not hold is already done");
                    }
                    t.await();
                    assertEquals(
                            t.bytes(),
                            held ? PoolFixtures.movedBytes(cfg, n, 1) : 0L,
                            "bytes of load of layer " + layer + ", " + what);
                }
                LayoutOracle.assertPoolEquals(
                        LayoutOracle.snapshot(devBuf),
                        expectedDev,
                        devPlacement,
                        "device after load of "
                                + (held ? "held" : "non-held")
                                + " layer "
                                + layer
                                + ", "
                                + what);
            }
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(hostBuf), hostData, "host after loads, " + what);
        }
    }
}
