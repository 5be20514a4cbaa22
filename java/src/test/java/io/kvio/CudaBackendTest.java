/*
 * The CUDA io backends through the Java API (TestNG group "gpu"; mvn -Pgpu runs it, and each test
 * skips with the native cause where no CUDA device is present). For kernel and direct, every host
 * layout: a pinned host pool is loaded into a GPU device pool layer by layer, then backed up to a
 * second pinned host pool of another layout, and that pool must equal the oracle's direct replay
 * of source -> destination (device memory is not host-readable, so the round trip checks both
 * directions). Also: device pools refuse ByteBuffer access, and the kernel launch shape can be set,
 * per executor and per transfer.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.oracle.Indices;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Placement;
import java.util.Random;
import org.testng.SkipException;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

@Test(groups = "gpu")
public class CudaBackendTest {

    private static void requireGpu(IoBackend backend) {
        if (!backend.isAvailable()) {
            throw new SkipException("no CUDA device: " + backend.unavailabilityCause());
        }
    }

    @DataProvider
    public Object[][] backends() {
        return new Object[][] {{IoBackend.KERNEL}, {IoBackend.DIRECT}};
    }

    private static HostKvPool host(DeviceKvPool device, KvLayout layout, long pages) {
        return HostKvPool.builder().forDevice(device).layout(layout).pages(pages).build();
    }

    @Test(dataProvider = "backends")
    public void loadThenBackupMatchesOracle(IoBackend backend) {
        requireGpu(backend);
        for (PoolKind kind : PoolKind.values()) {
            PoolFixtures.Config cfg =
                    kind == PoolKind.MHA
                            ? new PoolFixtures.Config(kind, 4, 16, 16, 4, 128)
                            : new PoolFixtures.Config(kind, 4, 16, 16, 1, 656);
            Random rnd = new Random(17 + kind.ordinal());
            for (KvLayout from : PoolFixtures.hostLayouts(kind)) {
                for (KvLayout to : PoolFixtures.hostLayouts(kind)) {
                    try (DeviceKvPool device =
                                    DeviceKvPool.allocate(cfg.spec(KvLayout.LAYER_FIRST), backend);
                            HostKvPool source = host(device, from, 24);
                            HostKvPool destination = host(device, to, 20)) {
                        byte[] src = LayoutOracle.fill(source.buffer(), rnd.nextLong());
                        byte[] expected = LayoutOracle.canary(destination.buffer(), rnd.nextLong());
                        long[] hostFrom = Indices.wholePages(rnd, 24, 16, 5);
                        long[] deviceSlots = Indices.wholePages(rnd, 16, 16, 5);
                        long[] hostTo = Indices.tokenGranular(rnd, 20 * 16, hostFrom.length);
                        for (long layer = 0; layer < cfg.layers; layer++) {
                            try (Transfer t =
                                    source.load(device, layer)
                                            .hostIndices(hostFrom)
                                            .deviceIndices(deviceSlots)
                                            .submit()) {
                                t.await();
                            }
                        }
                        try (Transfer t =
                                destination
                                        .backup(device)
                                        .deviceIndices(deviceSlots)
                                        .hostIndices(hostTo)
                                        .submit()) {
                            assertTrue(t.hasCudaEvent(), backend + ": a CUDA backup has one");
                            assertFalse(t.hasAscendEvent(), backend + ": not an Ascend transfer");
                            t.await();
                            assertEquals(
                                    t.bytes(),
                                    PoolFixtures.movedBytes(cfg, hostTo.length, cfg.layers));
                        }
                        Oracle.applyTransfer(
                                src,
                                Placement.standard(cfg.geometry(from, 4, 24), 0),
                                expected,
                                Placement.standard(cfg.geometry(to, 4, 20), 0),
                                hostFrom,
                                hostTo,
                                0,
                                0,
                                cfg.layers);
                        LayoutOracle.assertBufferEquals(
                                destination.buffer(),
                                expected,
                                backend + " " + kind + " " + from + " -> device -> " + to);
                    }
                }
            }
        }
    }

    @Test(dataProvider = "backends")
    public void devicePoolsAreNotHostReadable(IoBackend backend) {
        requireGpu(backend);
        PoolFixtures.Config cfg = new PoolFixtures.Config(PoolKind.MLA, 1, 2, 4, 1, 64);
        try (DeviceKvPool device = DeviceKvPool.allocate(cfg.spec(KvLayout.LAYER_FIRST), backend)) {
            KvioUnsupportedException e =
                    expectThrows(KvioUnsupportedException.class, device::buffer);
            assertTrue(e.getMessage().contains("CUDA device memory"), e.getMessage());
        }
    }

    /** Every device the count names takes a pool; the ordinal after the last is refused. */
    @Test
    public void cudaDeviceCountNamesTheDevicesPoolsGoOn() {
        requireGpu(IoBackend.KERNEL);
        int count = Kvio.cudaDeviceCount();
        assertTrue(count >= 1, "a usable CUDA backend with " + count + " devices");
        PoolFixtures.Config cfg = new PoolFixtures.Config(PoolKind.MLA, 1, 2, 4, 1, 64);
        PoolSpec spec = cfg.spec(KvLayout.LAYER_FIRST);
        for (int d = 0; d < count; d++) {
            try (DeviceKvPool device = DeviceKvPool.allocate(spec, IoBackend.KERNEL, d)) {
                assertEquals(device.device(), d);
            }
        }
        expectThrows(
                KvioException.class, () -> DeviceKvPool.allocate(spec, IoBackend.KERNEL, count));
    }

    @Test
    public void kernelLaunchShape() {
        requireGpu(IoBackend.KERNEL);
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.KERNEL, 0)) {
            executor.setLaunch(1, 4);
            executor.setLaunch(0, 0);
            expectThrows(KvioInvalidArgumentException.class, () -> executor.setLaunch(1, 64));
        }
    }

    @DataProvider
    public Object[][] cudaBackends() {
        return new Object[][] {{IoBackend.KERNEL}, {IoBackend.DIRECT}, {IoBackend.STAGED}};
    }

    /**
     * A launch shape per transfer (TransferRequest.launch): kernel launches with it (one CTA of one
     * warp still moves every row), the others ignore it; the bytes are the oracle's either way, and
     * a shape past the limits is refused on every backend with nothing moved.
     */
    @Test(dataProvider = "cudaBackends")
    public void perTransferLaunchShape(IoBackend backend) {
        requireGpu(backend);
        PoolFixtures.Config cfg = new PoolFixtures.Config(PoolKind.MHA, 4, 16, 16, 4, 128);
        Random rnd = new Random(29 + backend.ordinal());
        try (DeviceKvPool device = DeviceKvPool.allocate(cfg.spec(KvLayout.LAYER_FIRST), backend);
                HostKvPool source = host(device, KvLayout.PAGE_FIRST, 24);
                HostKvPool destination = host(device, KvLayout.LAYER_FIRST, 20)) {
            byte[] src = LayoutOracle.fill(source.buffer(), rnd.nextLong());
            byte[] expected = LayoutOracle.canary(destination.buffer(), rnd.nextLong());
            long[] hostFrom = Indices.wholePages(rnd, 24, 16, 5);
            long[] deviceSlots = Indices.wholePages(rnd, 16, 16, 5);
            long[] hostTo = Indices.tokenGranular(rnd, 20 * 16, hostFrom.length);
            int[][] shapes = {{1, 1}, {3, 2}, {0, 32}, {65535, 32}};
            for (long layer = 0; layer < cfg.layers; layer++) {
                int[] shape = shapes[(int) layer % shapes.length];
                try (Transfer t =
                        source.load(device, layer)
                                .hostIndices(hostFrom)
                                .deviceIndices(deviceSlots)
                                .overlapsCompute()
                                .launch(shape[0], shape[1])
                                .submit()) {
                    t.await();
                }
            }
            KvioInvalidArgumentException e =
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () ->
                                    destination
                                            .backup(device)
                                            .deviceIndices(deviceSlots)
                                            .hostIndices(hostTo)
                                            .launch(1, 33)
                                            .submit());
            assertTrue(e.getMessage().startsWith("launch(1, 33): "), e.getMessage());
            LayoutOracle.assertBufferEquals(
                    destination.buffer(), expected, backend + ": refused backup moved bytes");
            try (Transfer t =
                    destination
                            .backup(device)
                            .deviceIndices(deviceSlots)
                            .hostIndices(hostTo)
                            .launch(1, 1)
                            .submit()) {
                t.await();
            }
            Oracle.applyTransfer(
                    src,
                    Placement.standard(cfg.geometry(KvLayout.PAGE_FIRST, 4, 24), 0),
                    expected,
                    Placement.standard(cfg.geometry(KvLayout.LAYER_FIRST, 4, 20), 0),
                    hostFrom,
                    hostTo,
                    0,
                    0,
                    cfg.layers);
            LayoutOracle.assertBufferEquals(
                    destination.buffer(), expected, backend + " with per-transfer launch shapes");
        }
    }

    @Test
    public void stagedLaunchShapeAndDirectHasNone() {
        requireGpu(IoBackend.STAGED);
        try (KvioExecutor staged = KvioExecutor.create(IoBackend.STAGED, 0);
                KvioExecutor direct = KvioExecutor.create(IoBackend.DIRECT, 0)) {
            staged.setLaunch(2, 8);
            staged.setLaunch(0, 0);
            expectThrows(KvioInvalidArgumentException.class, () -> staged.setLaunch(1, 64));
            KvioUnsupportedException e =
                    expectThrows(KvioUnsupportedException.class, () -> direct.setLaunch(2, 8));
            assertTrue(e.getMessage().contains("'direct' executor"), e.getMessage());
        }
    }
}
