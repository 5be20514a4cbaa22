/*
 * KvPool.copyTo / copyFrom on CUDA device memory (TestNG group "gpu"; mvn -Pgpu runs it, and it
 * skips with the native cause where no CUDA device is present): bytes written into a GPU device
 * pool from a heap buffer come back through a direct one, a transfer's result is readable with
 * copyTo, and a range outside the region is refused before anything moves.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.expectThrows;

import java.nio.ByteBuffer;
import org.testng.SkipException;
import org.testng.annotations.Test;

@Test(groups = "gpu")
public class CudaPoolCopyTest {
    private static final PoolSpec SPEC =
            PoolSpec.builder()
                    .kind(PoolKind.MHA)
                    .layout(KvLayout.LAYER_FIRST)
                    .layers(2)
                    .pages(8)
                    .pageSize(16)
                    .heads(2)
                    .headBytes(128)
                    .build();

    @Test
    public void deviceMemoryRoundTripsThroughCopyToAndCopyFrom() {
        IoBackend backend = IoBackend.DIRECT;
        if (!backend.isAvailable()) {
            throw new SkipException("no CUDA device: " + backend.unavailabilityCause());
        }
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, backend);
                HostKvPool host = HostKvPool.builder().forDevice(device).build();
                TokenIndices slots = TokenIndices.of(0, 1, 2)) {
            int bytes = (int) device.regionBytes(0);
            byte[] pattern = new byte[bytes];
            for (int i = 0; i < bytes; i++) {
                pattern[i] = (byte) (i * 13 + 1);
            }
            device.copyFrom(ByteBuffer.wrap(pattern));
            ByteBuffer back = ByteBuffer.allocateDirect(bytes);
            device.copyTo(back);
            assertEquals(back.flip(), ByteBuffer.wrap(pattern));
            host.backup(device).hostIndices(slots).deviceIndices(slots).submit().await();
            ByteBuffer hostBytes = ByteBuffer.allocate(bytes);
            host.copyTo(hostBytes); // host pool: same layout here, so the same bytes
            ByteBuffer row = ByteBuffer.allocate(256);
            device.copyTo(0, 256, row);
            assertEquals(row.get(0), pattern[256]);
            expectThrows(
                    KvioOutOfRangeException.class,
                    () -> device.copyTo(0, bytes - 1, ByteBuffer.allocate(2)));
        }
    }
}
