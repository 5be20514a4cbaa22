/*
 * The Java example of README.md inside a test, its transfers bound to variables to count the
 * bytes they moved, so the README cannot drift from the API: if this file stops compiling or
 * passing, update README.md with it.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import org.testng.annotations.Test;

public class ReadmeExampleTest {

    @Test
    public void javaExampleOfTheReadmeRuns() {
        long moved = 0;
        // ---- README.md, section "Java" ----
        PoolSpec deviceSpec =
                PoolSpec.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(32)
                        .pages(64)
                        .pageSize(64)
                        .heads(8)
                        .headBytes(128 * 2) // bf16
                        .build();
        try (DeviceKvPool device = DeviceKvPool.allocate(deviceSpec, IoBackend.CPU);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout("page_first_direct") // the strings users type
                                .ioBackend("cpu") // unknown names fail here, with the nearest match
                                .pages(128)
                                .build();
                TokenIndices deviceSlots = TokenIndices.pages(64, 3, 4, 5);
                TokenIndices hostSlots = TokenIndices.pages(64, 10, 11, 12)) {
            // Each list is named by its side, so a swap cannot compile silently.
            Transfer backup =
                    host.backup(device).deviceIndices(deviceSlots).hostIndices(hostSlots).submit();
            backup.await(); // all layers
            moved += backup.bytes();
            for (int layer = 0; layer < 32; layer++) {
                Transfer load =
                        host.load(device, layer)
                                .hostIndices(hostSlots)
                                .deviceIndices(deviceSlots)
                                .submit();
                load.await(); // one layer per call
                moved += load.bytes();
            }
        }
        // ---- end of the example ----
        long rowBytes = 8 * 256;
        long perDirection = 3 * 64 * rowBytes * 32 * 2; // 3 pages x 64 tokens x 32 layers x K and V
        assertEquals(moved, 2 * perDirection);
    }

    @Test
    public void copyAndBufferExampleOfTheReadmeRuns() {
        // The first example's device pool: mha, 32 layers, 64 pages of 64, 8 heads of 256 bytes.
        PoolSpec deviceSpec =
                new PoolFixtures.Config(PoolKind.MHA, 32, 64, 64, 8, 128 * 2)
                        .spec(KvLayout.LAYER_FIRST);
        ByteBuffer seen;
        // ---- README.md, section "Java", copyTo / copyFrom and buffers ----
        LongBuffer slots =
                ByteBuffer.allocateDirect(3 * 8).order(ByteOrder.nativeOrder()).asLongBuffer();
        slots.put(new long[] {0, 1, 2}).flip();
        try (DeviceKvPool device = DeviceKvPool.allocate(deviceSpec, IoBackend.CPU);
                TokenIndices firstSlots = TokenIndices.wrap(slots)) { // a view of the buffer
            device.copyFrom(0, 0, ByteBuffer.wrap(new byte[] {1, 2, 3, 4})); // any memory kind
            ByteBuffer firstRow = ByteBuffer.allocate(8 * 256);
            device.copyTo(0, 0, firstRow); // synchronous
            // ---- end of the example ----
            seen = firstRow;
            assertEquals(firstSlots.get(2), 2);
        }
        assertEquals(seen.get(3), 4);
        assertEquals(seen.position(), 8 * 256);
    }
}
