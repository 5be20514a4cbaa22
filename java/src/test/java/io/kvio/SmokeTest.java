/*
 * Smoke test of the native-backed API: the natives load, the versions agree, and one tiny
 * backup + per-layer load round trip on the cpu backend moves exactly the right bytes: both pools
 * canary-filled where they are written and compared whole after every transfer.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;

import io.kvio.oracle.Oracle;
import java.nio.ByteBuffer;
import org.testng.annotations.Test;

public class SmokeTest {
    @Test
    public void nativesLoadAndVersionsMatch() {
        assertEquals(Kvio.version(), Kvio.VERSION);
        assertNotNull(Kvio.nativeLibraryPath());
        assertTrue(IoBackend.CPU.isAvailable());
        assertEquals(IoBackend.CPU.unavailabilityCause(), null);
    }

    @Test
    public void enumNamesAgreeWithNative() {
        for (PoolKind k : PoolKind.values()) {
            assertEquals(
                    NativeBridge.name(KvioNative.KVIO_NAME_KIND, k.nativeValue()), k.userName());
        }
        for (KvLayout l : KvLayout.values()) {
            assertEquals(
                    NativeBridge.name(KvioNative.KVIO_NAME_LAYOUT, l.nativeValue()), l.userName());
        }
        for (IoBackend b : IoBackend.values()) {
            assertEquals(
                    NativeBridge.name(KvioNative.KVIO_NAME_BACKEND, b.nativeValue()), b.userName());
        }
        for (Granularity g : Granularity.values()) {
            assertEquals(
                    NativeBridge.name(KvioNative.KVIO_NAME_GRANULARITY, g.nativeValue()),
                    g.userName());
        }
        assertEquals(
                NativeBridge.name(KvioNative.KVIO_NAME_LAYOUT, KvLayout.values().length), null);
    }

    /**
     * Device: mha, layer_first [L=2, P*ps=8, H=2, D=4], so a row (one token's heads in one layer)
     * is 8 bytes, a component 2 * 8 * 8 = 128 bytes, the pool 256 bytes; device row (c, l, t) is at
     * c * 128 + (l * 8 + t) * 8. Host: page_first [P*ps=4, L=2, H=2, D=4], a component 4 * 2 * 8 =
     * 64 bytes, the pool 128; host row (c, l, t) is at c * 64 + (t * 2 + l) * 8. Hard-coded from
     * the documented shapes, never from kvio's sizes.
     */
    private static final int ROW = 8;

    private static int deviceRow(int c, int l, int t) {
        return c * 128 + (l * 8 + t) * ROW;
    }

    private static int hostRow(int c, int l, int t) {
        return c * 64 + (t * 2 + l) * ROW;
    }

    @Test
    public void tinyRoundTripOnCpu() {
        PoolSpec deviceSpec =
                PoolSpec.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(2)
                        .pages(4)
                        .pageSize(2)
                        .heads(2)
                        .headBytes(4)
                        .build();
        try (DeviceKvPool device = DeviceKvPool.allocate(deviceSpec, IoBackend.CPU);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout("page_first")
                                .pages(2)
                                .threads(1)
                                .build();
                TokenIndices devicePages = TokenIndices.pages(2, 3, 0);
                TokenIndices hostSlots = TokenIndices.of(0, 1, 2, 3);
                TokenIndices loadTarget = TokenIndices.pages(2, 1, 2)) {
            ByteBuffer d = device.buffer();
            ByteBuffer h = host.buffer();
            assertEquals(d.capacity(), 256);
            assertEquals(h.capacity(), 128);
            byte[] original = Oracle.pattern(256, 1);
            LayoutOracle.write(d, original);
            byte[] expectedHost = Oracle.canary(128, 2);
            LayoutOracle.write(h, expectedHost);

            // backup: device pages 3, 0 (tokens 6, 7, 0, 1) into host slots 0-3, both layers
            int[] sources = {6, 7, 0, 1};
            Transfer backup =
                    host.backup(device).deviceIndices(devicePages).hostIndices(hostSlots).submit();
            backup.await();
            assertEquals(
                    backup.bytes(), 2L * 2 * 4 * 8); // components x layers x tokens x row bytes
            assertTrue(backup.isDone());
            for (int c = 0; c < 2; c++) {
                for (int l = 0; l < 2; l++) {
                    for (int i = 0; i < 4; i++) {
                        System.arraycopy(
                                original,
                                deviceRow(c, l, sources[i]),
                                expectedHost,
                                hostRow(c, l, i),
                                ROW);
                    }
                }
            }
            LayoutOracle.assertBufferEquals(h, expectedHost, "host pool after the backup");
            LayoutOracle.assertBufferEquals(d, original, "device pool (source) after the backup");

            // load, one layer per call: host slots 0-3 into device pages 1, 2 (tokens 2-5) of a
            // canary-filled device pool
            byte[] expectedDevice = Oracle.canary(256, 3);
            LayoutOracle.write(d, expectedDevice);
            for (int layer = 0; layer < 2; layer++) {
                Transfer load =
                        host.load(device, layer)
                                .hostIndices(hostSlots)
                                .deviceIndices(loadTarget)
                                .submit();
                load.await();
                assertEquals(load.bytes(), 2L * 4 * 8); // components x tokens x row bytes
                for (int c = 0; c < 2; c++) {
                    for (int i = 0; i < 4; i++) {
                        System.arraycopy(
                                original,
                                deviceRow(c, layer, sources[i]),
                                expectedDevice,
                                deviceRow(c, layer, 2 + i),
                                ROW);
                    }
                }
                LayoutOracle.assertBufferEquals(
                        d, expectedDevice, "device pool after the load of layer " + layer);
                LayoutOracle.assertBufferEquals(
                        h, expectedHost, "host pool (source) after the load of layer " + layer);
            }
        }
    }
}
