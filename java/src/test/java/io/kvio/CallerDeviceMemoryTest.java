/*
 * Caller device memory made of separate allocations, through the Java API (TestNG group "gpu";
 * mvn -Pgpu runs it, and each test skips with the native cause where no CUDA device is present):
 * DeviceKvPool.wrapComponents (one allocation per component, like separate K and V tensors) and
 * wrapLayers (one per component and layer, like a serving engine's per-layer tensors), on kernel
 * and direct, both directions, every host layout, whole pages and scattered tokens. The separate
 * allocations are small kvio device pools ("carriers": each DeviceKvPool.allocate on a CUDA
 * backend is its own cudaMalloc). Device memory is written and read through each carrier alone
 * (identity transfers between the carrier and a pinned host pool over it, never through the
 * wrapped pool), canary-filled first, and compared whole against the oracle (io.kvio.oracle).
 * CallerDeviceMemoryOnCpuTest runs the same check on the cpu backend everywhere.
 */
package io.kvio;

import io.kvio.oracle.Geometry;
import io.kvio.oracle.Indices;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Placement;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.testng.SkipException;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

@Test(groups = "gpu")
public class CallerDeviceMemoryTest {
    private static final long HOST_PAGES = 10;

    enum Form {
        PER_COMPONENT,
        LAYER_TABLE
    }

    private static void requireGpu(IoBackend backend) {
        if (!backend.isAvailable()) {
            throw new SkipException("no CUDA device: " + backend.unavailabilityCause());
        }
    }

    @DataProvider
    public Object[][] cases() {
        return new Object[][] {
            {IoBackend.KERNEL, Form.PER_COMPONENT},
            {IoBackend.KERNEL, Form.LAYER_TABLE},
            {IoBackend.DIRECT, Form.PER_COMPONENT},
            {IoBackend.DIRECT, Form.LAYER_TABLE}
        };
    }

    /** Separate device allocations of bytesEach bytes each, kvio-allocated single-region pools. */
    private static final class Carriers implements AutoCloseable {
        private final List<DeviceKvPool> pools = new ArrayList<>();
        private final KvioExecutor executor;
        private final long bytesEach;

        Carriers(IoBackend backend, KvioExecutor executor, int count, long bytesEach, long row) {
            this.executor = executor;
            this.bytesEach = bytesEach;
            PoolSpec spec =
                    PoolSpec.builder()
                            .kind(PoolKind.MLA)
                            .layout(KvLayout.LAYER_FIRST)
                            .layers(1)
                            .pages(bytesEach / row)
                            .pageSize(1)
                            .heads(1)
                            .headBytes(row)
                            .build();
            try {
                for (int i = 0; i < count; i++) {
                    pools.add(DeviceKvPool.allocate(spec, backend));
                }
            } catch (RuntimeException e) {
                close();
                throw e;
            }
        }

        long[] addresses() {
            long[] out = new long[pools.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = pools.get(i).regionAddress(0);
            }
            return out;
        }

        /** Writes content (all carriers, one after another) through a pinned pool per carrier. */
        void write(byte[] content) {
            for (int i = 0; i < pools.size(); i++) {
                DeviceKvPool carrier = pools.get(i);
                try (HostKvPool mirror = mirror(carrier);
                        TokenIndices all = all(carrier)) {
                    byte[] part = new byte[(int) bytesEach];
                    System.arraycopy(content, (int) (i * bytesEach), part, 0, part.length);
                    LayoutOracle.write(mirror.buffer(), part);
                    try (Transfer t = Kvio.transfer(executor, mirror, carrier, all, all, 0, 0, 1)) {
                        t.await();
                    }
                }
            }
        }

        /** The content of all carriers, one after another. */
        byte[] read() {
            byte[] out = new byte[(int) (bytesEach * pools.size())];
            for (int i = 0; i < pools.size(); i++) {
                DeviceKvPool carrier = pools.get(i);
                try (HostKvPool mirror = mirror(carrier);
                        TokenIndices all = all(carrier)) {
                    try (Transfer t = Kvio.transfer(executor, carrier, mirror, all, all, 0, 0, 1)) {
                        t.await();
                    }
                    byte[] part = LayoutOracle.snapshot(mirror.buffer());
                    System.arraycopy(part, 0, out, (int) (i * bytesEach), (int) bytesEach);
                }
            }
            return out;
        }

        private HostKvPool mirror(DeviceKvPool carrier) {
            return HostKvPool.builder()
                    .forDevice(carrier)
                    .layout(KvLayout.LAYER_FIRST)
                    .executor(executor)
                    .build();
        }

        private static TokenIndices all(DeviceKvPool carrier) {
            long[] slots = new long[(int) carrier.spec().tokens()];
            for (int i = 0; i < slots.length; i++) {
                slots[i] = i;
            }
            return TokenIndices.of(slots);
        }

        /** Closes every carrier; the pool wrapping them must be closed first. */
        @Override
        public void close() {
            for (DeviceKvPool p : pools) {
                p.close();
            }
        }
    }

    @Test(dataProvider = "cases")
    public void wrappedSeparateAllocationsMatchOracle(IoBackend backend, Form form) {
        requireGpu(backend);
        check(backend, form);
    }

    /**
     * The whole check on {@code backend}; CallerDeviceMemoryOnCpuTest runs it on cpu (host memory
     * in the same forms) so the test itself is checked on every machine.
     */
    static void check(IoBackend backend, Form form) {
        try (KvioExecutor executor = KvioExecutor.create(backend, 0)) {
            for (PoolKind kind : PoolKind.values()) {
                PoolFixtures.Config cfg =
                        kind == PoolKind.MHA
                                ? new PoolFixtures.Config(kind, 4, 8, 16, 2, 64)
                                : new PoolFixtures.Config(kind, 4, 8, 16, 1, 576);
                Geometry dg = cfg.deviceGeometry();
                long tokens = cfg.pages * cfg.pageSize;
                long row = cfg.heads * cfg.headBytes;
                int count =
                        form == Form.PER_COMPONENT
                                ? cfg.components()
                                : cfg.components() * (int) cfg.layers;
                long bytesEach =
                        form == Form.PER_COMPONENT ? cfg.layers * tokens * row : tokens * row;
                long[] bases = new long[count];
                for (int i = 0; i < count; i++) {
                    bases[i] = i * bytesEach;
                }
                Placement devicePlace =
                        form == Form.PER_COMPONENT
                                ? Placement.componentTable(dg, bases)
                                : Placement.layerTable(dg, bases);
                Random rnd =
                        new Random(31 * backend.ordinal() + 7 * form.ordinal() + kind.ordinal());
                for (KvLayout layout : PoolFixtures.hostLayouts(kind)) {
                    for (boolean backup : new boolean[] {false, true}) {
                        for (boolean wholePages : new boolean[] {true, false}) {
                            String what =
                                    backend.userName()
                                            + " "
                                            + form
                                            + " "
                                            + kind.userName()
                                            + " host "
                                            + layout.userName()
                                            + (backup ? " backup" : " load")
                                            + (wholePages ? " whole pages" : " scattered tokens");
                            long[] deviceIdx =
                                    wholePages
                                            ? Indices.wholePages(rnd, cfg.pages, cfg.pageSize, 5)
                                            : Indices.tokenGranular(rnd, tokens, 37);
                            long[] hostIdx =
                                    Indices.tokenGranular(
                                            rnd, HOST_PAGES * cfg.pageSize, deviceIdx.length);
                            runOne(
                                    executor,
                                    backend,
                                    form,
                                    cfg,
                                    devicePlace,
                                    count,
                                    bytesEach,
                                    layout,
                                    backup,
                                    deviceIdx,
                                    hostIdx,
                                    rnd.nextLong(),
                                    what);
                        }
                    }
                }
            }
        }
    }

    private static void runOne(
            KvioExecutor executor,
            IoBackend backend,
            Form form,
            PoolFixtures.Config cfg,
            Placement devicePlace,
            int count,
            long bytesEach,
            KvLayout layout,
            boolean backup,
            long[] deviceIdx,
            long[] hostIdx,
            long seed,
            String what) {
        Placement hostPlace = Placement.standard(cfg.geometry(layout, cfg.layers, HOST_PAGES), 0);
        PoolSpec spec = cfg.spec(KvLayout.LAYER_FIRST);
        // Closed in reverse order: host pool, the wrapping device pool, then the carriers.
        try (Carriers carriers =
                        new Carriers(
                                backend, executor, count, bytesEach, cfg.heads * cfg.headBytes);
                DeviceKvPool device =
                        form == Form.PER_COMPONENT
                                ? DeviceKvPool.wrapComponents(
                                        spec, carriers.addresses(), bytesEach, backend)
                                : DeviceKvPool.wrapLayers(
                                        spec, carriers.addresses(), bytesEach, backend);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout(layout)
                                .pages(HOST_PAGES)
                                .executor(executor)
                                .build();
                TokenIndices h = TokenIndices.of(hostIdx);
                TokenIndices d = TokenIndices.of(deviceIdx)) {
            int deviceBytes = (int) (bytesEach * count);
            if (!backup) {
                // Load, layer by layer (the last layer first): host -> caller device memory.
                byte[] hostContent = LayoutOracle.fill(host.buffer(), seed);
                byte[] expected = Oracle.canary(deviceBytes, ~seed);
                carriers.write(expected);
                List<Transfer> transfers = new ArrayList<>();
                for (long l = cfg.layers - 1; l >= 0; l--) {
                    transfers.add(Kvio.transfer(executor, host, device, h, d, l, l, 1));
                    Oracle.applyTransfer(
                            hostContent,
                            hostPlace,
                            expected,
                            devicePlace,
                            hostIdx,
                            deviceIdx,
                            l,
                            l,
                            1);
                }
                for (Transfer t : transfers) {
                    t.await();
                    t.close();
                }
                LayoutOracle.assertPoolEquals(carriers.read(), expected, devicePlace, what);
                LayoutOracle.assertBufferEquals(host.buffer(), hostContent, what + " (source)");
            } else {
                // Backup, all layers in one transfer: caller device memory -> host.
                byte[] deviceContent = Oracle.pattern(deviceBytes, seed);
                carriers.write(deviceContent);
                byte[] expected = LayoutOracle.canary(host.buffer(), ~seed);
                try (Transfer t = Kvio.transfer(executor, device, host, d, h, 0, 0, cfg.layers)) {
                    t.await();
                    org.testng.Assert.assertEquals(
                            t.bytes(),
                            PoolFixtures.movedBytes(cfg, hostIdx.length, cfg.layers),
                            what);
                }
                Oracle.applyTransfer(
                        deviceContent,
                        devicePlace,
                        expected,
                        hostPlace,
                        deviceIdx,
                        hostIdx,
                        0,
                        0,
                        cfg.layers);
                LayoutOracle.assertBufferEquals(host.buffer(), expected, what);
                LayoutOracle.assertPoolEquals(
                        carriers.read(), deviceContent, devicePlace, what + " (source)");
            }
        }
    }
}
