/*
 * Several Java threads submitting transfers at once on shared pools with disjoint slot sets: each
 * thread backs up its own device slots into its own host slots, then loads them layer by layer
 * into its own (other) device slots, through the host pool and through shared / private
 * executors. The final device and host contents are checked whole against the oracle.
 */
package io.kvio;

import io.kvio.PoolFixtures.Config;
import io.kvio.oracle.Indices;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Placement;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

public class ConcurrencyTest {

    static final int THREADS = 4;
    static final int ROUNDS = 5;

    @Test(timeOut = 60_000)
    public void disjointSlotSetsFromManyThreads() throws Exception {
        long ps = 4;
        Config cfg = new Config(PoolKind.MHA, 3, 4 * THREADS * 2, ps, 2, 32);
        long hostPages = 4 * THREADS;
        long perThread = (hostPages * ps) / THREADS; // 16 slots each
        try (DeviceKvPool device = cfg.allocateDevice();
                HostKvPool host =
                        PoolFixtures.host(device, KvLayout.PAGE_FIRST_DIRECT, hostPages)) {
            ByteBuffer devBuf = device.buffer();
            ByteBuffer hostBuf = host.buffer();
            Placement dp = Placement.standard(cfg.deviceGeometry(), 0);
            Placement hp =
                    Placement.standard(
                            cfg.geometry(KvLayout.PAGE_FIRST_DIRECT, cfg.layers, hostPages), 0);
            byte[] devData = LayoutOracle.fill(devBuf, 1);
            byte[] hostCanary = LayoutOracle.canary(hostBuf, 1);

            // device slots: [0, half) sources, [half, 2*half) destinations; thread k owns a stripe
            long half = hostPages * ps;
            long[][] hostIdx = new long[THREADS][];
            long[][] fromIdx = new long[THREADS][];
            long[][] toIdx = new long[THREADS][];
            for (int k = 0; k < THREADS; k++) {
                hostIdx[k] = new long[(int) perThread];
                fromIdx[k] = new long[(int) perThread];
                toIdx[k] = new long[(int) perThread];
                for (int i = 0; i < perThread; i++) {
                    hostIdx[k][i] =
                            k * perThread + (perThread - 1 - i); // reversed inside the stripe
                    fromIdx[k][i] = k + (long) i * THREADS; // interleaved across threads
                    toIdx[k][i] = half + k * perThread + i;
                }
            }
            byte[] expectedHost = hostCanary.clone();
            byte[] expectedDev = devData.clone();
            for (int k = 0; k < THREADS; k++) {
                Oracle.applyTransfer(
                        devData, dp, expectedHost, hp, fromIdx[k], hostIdx[k], 0, 0, cfg.layers);
                Oracle.applyTransfer(
                        devData, dp, expectedDev, dp, fromIdx[k], toIdx[k], 0, 0, cfg.layers);
            }

            Threads.runAll(
                    THREADS,
                    id -> {
                        try (TokenIndices h = TokenIndices.of(hostIdx[id]);
                                TokenIndices from = TokenIndices.of(fromIdx[id]);
                                TokenIndices to = TokenIndices.of(toIdx[id])) {
                            for (int round = 0; round < ROUNDS; round++) {
                                try (Transfer t =
                                        host.backup(device)
                                                .deviceIndices(from)
                                                .hostIndices(h)
                                                .submit()) {
                                    org.testng.Assert.assertTrue(
                                            t.await(30, TimeUnit.SECONDS), "backup completes");
                                }
                                List<Transfer> loads = new ArrayList<>();
                                for (long layer = 0; layer < cfg.layers; layer++) {
                                    loads.add(
                                            host.load(device, layer)
                                                    .hostIndices(h)
                                                    .deviceIndices(to)
                                                    .submit());
                                }
                                for (Transfer t : loads) {
                                    t.await();
                                    t.close();
                                }
                            }
                        }
                    });
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(hostBuf),
                    expectedHost,
                    hp,
                    "host after concurrent backups");
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(devBuf),
                    expectedDev,
                    dp,
                    "device after concurrent loads");
        }
    }

    @Test(timeOut = 60_000)
    public void generalTransfersOnOwnAndSharedExecutors() throws Exception {
        long ps = 8;
        Config cfg = new Config(PoolKind.MLA, 2, 8, ps, 1, 96);
        long hostPages = 8;
        try (DeviceKvPool device = cfg.allocateDevice();
                HostKvPool src = PoolFixtures.host(device, KvLayout.PAGE_FIRST, hostPages);
                HostKvPool dst = PoolFixtures.host(device, KvLayout.LAYER_FIRST, hostPages)) {
            Placement sp =
                    Placement.standard(cfg.geometry(KvLayout.PAGE_FIRST, cfg.layers, hostPages), 0);
            Placement tp =
                    Placement.standard(
                            cfg.geometry(KvLayout.LAYER_FIRST, cfg.layers, hostPages), 0);
            byte[] srcData = LayoutOracle.fill(src.buffer(), 2);
            byte[] expected = LayoutOracle.canary(dst.buffer(), 2);
            long tokens = hostPages * ps;
            long[][] s = new long[THREADS][];
            long[][] d = new long[THREADS][];
            for (int k = 0; k < THREADS; k++) {
                int n = (int) (tokens / THREADS);
                s[k] = new long[n];
                d[k] = new long[n];
                for (int i = 0; i < n; i++) {
                    s[k][i] = k * n + i;
                    d[k][i] = tokens - 1 - (k * n + i);
                }
                Oracle.applyTransfer(srcData, sp, expected, tp, s[k], d[k], 0, 0, cfg.layers);
            }
            Threads.runAll(
                    THREADS,
                    id -> {
                        // even threads use the shared executor, odd ones their own
                        KvioExecutor own =
                                id % 2 == 1 ? KvioExecutor.create(IoBackend.CPU, 2) : null;
                        KvioExecutor ex = own != null ? own : KvioExecutor.shared(IoBackend.CPU);
                        try (TokenIndices si = TokenIndices.of(s[id]);
                                TokenIndices di = TokenIndices.of(d[id])) {
                            for (long layer = 0; layer < cfg.layers; layer++) {
                                try (Transfer t =
                                        Kvio.transfer(ex, src, dst, si, di, layer, layer, 1)) {
                                    t.await();
                                }
                            }
                        } finally {
                            if (own != null) own.close();
                        }
                    });
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(dst.buffer()),
                    expected,
                    tp,
                    "destination after concurrent general transfers");
            LayoutOracle.assertBytesEqual(LayoutOracle.snapshot(src.buffer()), srcData, "source");
        }
    }

    /**
     * Lifetime: a large (7 MiB) host-to-device transfer is submitted, then the host pool, the index
     * lists and the device pool handle are closed at once; the transfer must still complete and
     * write exactly the oracle's rows into the (caller-owned, still open) device memory.
     */
    @Test(timeOut = 60_000)
    public void closingEverythingRightAfterSubmitStillCompletes() {
        long ps = 16;
        Config cfg = new Config(PoolKind.MHA, 8, 64, ps, 4, 128); // 8 MiB per component
        long hostPages = 64;
        Random rnd = new Random(42);
        long[] hostIdx = Indices.tokenGranular(rnd, hostPages * ps, 900);
        long[] devIdx = Indices.tokenGranular(rnd, cfg.pages * ps, 900);
        try (ConformanceMatrixTest.DeviceUnderTest dev =
                ConformanceMatrixTest.DeviceUnderTest.create(
                        cfg, ConformanceMatrixTest.DeviceMemory.WRAP_COMPONENTS, 42)) {
            HostKvPool host = PoolFixtures.host(dev.pool(), KvLayout.PAGE_HEAD, hostPages);
            Placement hp =
                    Placement.standard(cfg.geometry(KvLayout.PAGE_HEAD, cfg.layers, hostPages), 0);
            byte[] hostData = LayoutOracle.fill(host.buffer(), 42);
            byte[] expected = LayoutOracle.canary(dev.buffer(), 42);
            Oracle.applyTransfer(
                    hostData, hp, expected, dev.placement(), hostIdx, devIdx, 0, 0, cfg.layers);
            TokenIndices h = TokenIndices.of(hostIdx);
            TokenIndices d = TokenIndices.of(devIdx);
            // the shared executor: closing the host pool does not wait for it (a private one would)
            Transfer t =
                    Kvio.transfer(
                            KvioExecutor.shared(IoBackend.CPU),
                            host,
                            dev.pool(),
                            h,
                            d,
                            0,
                            0,
                            cfg.layers);
            h.close();
            d.close();
            host.close();
            dev.pool().close();
            org.testng.Assert.assertTrue(t.await(30, TimeUnit.SECONDS), "completes");
            t.close();
            LayoutOracle.assertPoolEquals(
                    LayoutOracle.snapshot(dev.buffer()),
                    expected,
                    dev.placement(),
                    "device memory after a load whose pools were closed in flight");
        }
    }

    /** The index list forms (long[], int[], whole pages, wrapped native memory) are equivalent. */
    @Test
    public void indexListForms() {
        long ps = 8;
        Config cfg = new Config(PoolKind.MLA, 2, 8, ps, 1, 40);
        long hostPages = 6;
        long[] hostPageIds = {4, 0, 2};
        long[] devPageIds = {1, 7, 3};
        long[] hostIdx = new long[24];
        long[] devIdx = new long[24];
        for (int i = 0; i < 24; i++) {
            hostIdx[i] = hostPageIds[i / 8] * ps + i % 8;
            devIdx[i] = devPageIds[i / 8] * ps + i % 8;
        }
        int[] hostInts = java.util.Arrays.stream(hostIdx).mapToInt(x -> (int) x).toArray();
        try (DeviceKvPool device = cfg.allocateDevice();
                HostKvPool host = PoolFixtures.host(device, KvLayout.PAGE_FIRST_DIRECT, hostPages);
                TokenIndices owner = TokenIndices.of(devIdx)) {
            Placement dp = Placement.standard(cfg.deviceGeometry(), 0);
            Placement hp =
                    Placement.standard(
                            cfg.geometry(KvLayout.PAGE_FIRST_DIRECT, cfg.layers, hostPages), 0);
            byte[] devData = LayoutOracle.fill(device.buffer(), 9);
            byte[] expected = LayoutOracle.canary(host.buffer(), 9);
            Oracle.applyTransfer(devData, dp, expected, hp, devIdx, hostIdx, 0, 0, cfg.layers);
            byte[] canary = expected.clone();
            TokenIndices[][] forms = {
                {TokenIndices.of(hostIdx), TokenIndices.of(devIdx)},
                {TokenIndices.of(hostInts), TokenIndices.pages(ps, devPageIds)},
                {
                    TokenIndices.pages(ps, hostPageIds),
                    TokenIndices.wrap(owner.address(), owner.size())
                },
            };
            for (int f = 0; f < forms.length; f++) {
                LayoutOracle.canary(host.buffer(), 9);
                org.testng.Assert.assertEquals(forms[f][0].size(), 24L);
                org.testng.Assert.assertEquals(forms[f][1].size(), 24L);
                for (int i = 0; i < 24; i++) {
                    org.testng.Assert.assertEquals(
                            forms[f][0].get(i), hostIdx[i], "form " + f + " host[" + i + "]");
                    org.testng.Assert.assertEquals(
                            forms[f][1].get(i), devIdx[i], "form " + f + " device[" + i + "]");
                }
                try (Transfer t =
                        host.backup(device)
                                .deviceIndices(forms[f][1])
                                .hostIndices(forms[f][0])
                                .submit()) {
                    t.await();
                }
                LayoutOracle.assertPoolEquals(
                        LayoutOracle.snapshot(host.buffer()),
                        expected,
                        hp,
                        "host after backup with index form " + f);
                forms[f][0].close();
                forms[f][1].close();
            }
            org.testng.Assert.assertFalse(java.util.Arrays.equals(canary, devData));
            // a wrapped list does not own its memory: closing it leaves the owner usable
            org.testng.Assert.assertEquals(owner.get(23), devIdx[23]);
        }
    }
}
