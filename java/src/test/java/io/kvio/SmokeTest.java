/*
 * Smoke test of the native-backed API: the natives load, the versions agree, and one tiny
 * backup + per-layer load round trip on the cpu backend moves exactly the right bytes.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;

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
            for (int i = 0; i < d.capacity(); i++) {
                d.put(i, (byte) (i * 7 + 1));
            }
            Transfer backup =
                    host.backup(device).deviceIndices(devicePages).hostIndices(hostSlots).submit();
            backup.await();
            assertEquals(
                    backup.bytes(), 2L * 2 * 4 * 8); // components x layers x tokens x row bytes
            assertTrue(backup.isDone());

            // host page_first [P*ps, L, H, D]: component 0, host token 0, layer 1 = device token 6,
            // layer 1
            long row = deviceSpec.rowBytes();
            ByteBuffer h = host.buffer();
            for (int b = 0; b < row; b++) {
                assertEquals(
                        h.get((int) ((0 * 2 + 1) * row + b)), d.get((int) ((1 * 8 + 6) * row + b)));
            }

            ByteBuffer original = ByteBuffer.allocate(d.capacity());
            original.put(d.duplicate()).flip();
            for (long layer = 0; layer < 2; layer++) {
                host.load(device, layer)
                        .hostIndices(hostSlots)
                        .deviceIndices(loadTarget)
                        .submit()
                        .await();
            }
            long componentBytes = deviceSpec.componentBytes();
            long[][] moves = {{6, 2}, {7, 3}, {0, 4}, {1, 5}}; // device token -> device token
            for (int c = 0; c < 2; c++) {
                for (int l = 0; l < 2; l++) {
                    for (long[] m : moves) {
                        for (int b = 0; b < row; b++) {
                            long from = c * componentBytes + (l * 8 + m[0]) * row + b;
                            long to = c * componentBytes + (l * 8 + m[1]) * row + b;
                            assertEquals(
                                    d.get((int) to),
                                    original.get((int) from),
                                    "c" + c + " l" + l + " tok" + m[1]);
                        }
                    }
                }
            }
        }
    }
}
