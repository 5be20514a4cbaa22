/*
 * Choosing the device and the stream from Java: KvioExecutor.onDevice / onStream / shared(backend,
 * device), DeviceKvPool.allocate/wrap on a device, HostKvPool following its device pool's device,
 * and the native stream and event handles for interop. The rules run everywhere; the methods of
 * group "gpu" move bytes on CUDA device 0 with an executor chosen by device (they skip with the
 * native cause where no CUDA device is present).
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotEquals;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.nio.ByteBuffer;
import java.util.Arrays;
import org.testng.SkipException;
import org.testng.annotations.Test;

public class DeviceSelectionTest {
    private static final PoolSpec SPEC =
            PoolSpec.builder()
                    .kind(PoolKind.MHA)
                    .layout(KvLayout.LAYER_FIRST)
                    .layers(4)
                    .pages(8)
                    .pageSize(16)
                    .heads(2)
                    .headBytes(64)
                    .build();

    private static void assertMentions(Throwable e, String... fragments) {
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "'" + f + "' missing in: " + e.getMessage());
        }
    }

    @Test
    public void cpuHasNoDevicesOrStreams() {
        KvioUnsupportedException e =
                expectThrows(
                        KvioUnsupportedException.class,
                        () -> KvioExecutor.onDevice(IoBackend.CPU, 0));
        assertMentions(e, "'cpu' runs on host threads", "KvioExecutor.create(IoBackend.CPU");
        e =
                expectThrows(
                        KvioUnsupportedException.class,
                        () -> KvioExecutor.onStream(IoBackend.CPU, 0, 77));
        assertMentions(e, "instead of onStream");
        try (KvioExecutor cpu = KvioExecutor.create(IoBackend.CPU, 1)) {
            assertEquals(cpu.device(), -1);
            e = expectThrows(KvioUnsupportedException.class, cpu::nativeStream);
            assertMentions(e, "runs on host threads, not a stream");
        }
        e =
                expectThrows(
                        KvioUnsupportedException.class,
                        () -> KvioExecutor.shared(IoBackend.CPU, 3));
        assertMentions(e, "device must be -1 (Kvio.HOST_DEVICE), got 3");
        assertSame(KvioExecutor.shared(IoBackend.CPU), KvioExecutor.shared(IoBackend.CPU, -1));
    }

    @Test
    public void cpuDevicePoolsLiveOnTheHost() {
        KvioUnsupportedException e =
                expectThrows(
                        KvioUnsupportedException.class,
                        () -> DeviceKvPool.allocate(SPEC, IoBackend.CPU, 1));
        assertMentions(e, "has one device, the host: device must be -1 (Kvio.HOST_DEVICE), got 1");
        try (DeviceKvPool pool = DeviceKvPool.allocate(SPEC, IoBackend.CPU, Kvio.HOST_DEVICE)) {
            assertEquals(pool.device(), -1);
            e =
                    expectThrows(
                            KvioUnsupportedException.class,
                            () ->
                                    DeviceKvPool.wrap(
                                            SPEC,
                                            pool.regionAddress(0),
                                            pool.regionBytes(0),
                                            IoBackend.CPU,
                                            2));
            assertMentions(e, "device must be -1 (Kvio.HOST_DEVICE), got 2");
        }
    }

    @Test
    public void theOwnStreamMarkerIsNotAStream() {
        KvioInvalidArgumentException e =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () -> KvioExecutor.onStream(IoBackend.KERNEL, 0, -1));
        assertMentions(e, "stream is -1", "KvioExecutor.onDevice");
    }

    @Test
    public void streamZeroIsTheDefaultStreamNotAMistake() {
        // 0 is CUDA's and ACL's default stream (torch's default stream hands out 0): it gets to
        // the backend like any stream, where a machine without the backend says so.
        for (IoBackend b : new IoBackend[] {IoBackend.KERNEL, IoBackend.KERNEL_ASCEND}) {
            if (b.isAvailable()) {
                continue; // the gpu group runs an executor on stream 0
            }
            KvioUnavailableException e =
                    expectThrows(
                            KvioUnavailableException.class, () -> KvioExecutor.onStream(b, 0, 0));
            assertMentions(e, b.unavailabilityCause());
        }
    }

    @Test
    public void deviceBackendsAbsentHereSayWhy() {
        for (IoBackend b : new IoBackend[] {IoBackend.KERNEL, IoBackend.KERNEL_ASCEND}) {
            if (b.isAvailable()) {
                continue; // covered by the gpu group (CUDA) or a real NPU
            }
            String cause = b.unavailabilityCause();
            KvioUnavailableException e =
                    expectThrows(KvioUnavailableException.class, () -> KvioExecutor.onDevice(b, 1));
            assertMentions(e, cause);
            e =
                    expectThrows(
                            KvioUnavailableException.class,
                            () -> DeviceKvPool.allocate(SPEC, b, 1));
            assertMentions(e, cause);
        }
    }

    @Test
    public void cpuTransfersHaveNoDeviceEvents() {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                HostKvPool host =
                        HostKvPool.builder().forDevice(device).layout("page_first").build();
                TokenIndices h = TokenIndices.pages(16, 1);
                TokenIndices d = TokenIndices.pages(16, 2);
                Transfer t = host.backup(device).deviceIndices(d).hostIndices(h).submit()) {
            assertEquals(host.executor().device(), -1);
            assertEquals(host.device(), -1, "a cpu host pool serves the host");
            assertMentions(
                    expectThrows(KvioUnsupportedException.class, t::ascendEvent),
                    "no Ascend event");
            assertMentions(
                    expectThrows(KvioUnsupportedException.class, t::cudaEvent), "no CUDA event");
            t.await();
            // Released by the await: still "no event", not "closed" (it never had one).
            assertMentions(
                    expectThrows(KvioUnsupportedException.class, t::cudaEvent),
                    "no CUDA event",
                    "ran on the cpu io backend");
        }
    }

    // ---- on a CUDA device (group gpu) ----

    private static void requireGpu() {
        if (!IoBackend.KERNEL.isAvailable()) {
            throw new SkipException("no CUDA device: " + IoBackend.KERNEL.unavailabilityCause());
        }
    }

    /**
     * Host pages 1 and 2 (page_first_direct: each page holds all layers) go to device pages 3 and 4
     * and back into host pages 1 and 2 of a second pool, with executors chosen by device; the
     * second pool must equal its canary except those two pages of each component, which equal the
     * source's.
     */
    @Test(groups = "gpu")
    public void executorsChosenByDeviceMovePoolsOfThatDevice() {
        requireGpu();
        assertNotEquals(KvioExecutor.shared(IoBackend.KERNEL, 0).nativeStream(), 0L);
        for (IoBackend b : new IoBackend[] {IoBackend.KERNEL, IoBackend.DIRECT}) {
            try (KvioExecutor ex = KvioExecutor.onDevice(b, 0)) {
                assertNotEquals(ex.nativeStream(), 0L);
                moveTwoPagesThereAndBack(b, ex);
            }
        }
    }

    /** The same with executors on stream 0, the legacy default stream (torch's default stream). */
    @Test(groups = "gpu")
    public void executorsOnStreamZeroRunOnTheDefaultStream() {
        requireGpu();
        for (IoBackend b :
                new IoBackend[] {
                    IoBackend.KERNEL, IoBackend.DIRECT, IoBackend.STAGED, IoBackend.AUTO
                }) {
            try (KvioExecutor ex = KvioExecutor.onStream(b, 0, 0)) {
                assertEquals(ex.nativeStream(), 0L);
                moveTwoPagesThereAndBack(b, ex);
            }
        }
    }

    private static void moveTwoPagesThereAndBack(IoBackend b, KvioExecutor ex) {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, b, 0);
                HostKvPool source =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout("page_first_direct")
                                .executor(ex)
                                .build();
                HostKvPool destination =
                        HostKvPool.builder().forDevice(device).layout("page_first_direct").build();
                TokenIndices hostPages = TokenIndices.pages(16, 1, 2);
                TokenIndices devicePages = TokenIndices.pages(16, 3, 4)) {
            assertEquals(ex.device(), 0);
            assertEquals(device.device(), 0);
            assertEquals(destination.executor().device(), 0);
            assertEquals(destination.device(), 0);
            assertEquals(source.device(), 0);
            ByteBuffer src = source.buffer();
            ByteBuffer dst = destination.buffer();
            byte[] srcBytes = new byte[src.capacity()];
            for (int i = 0; i < srcBytes.length; i++) srcBytes[i] = (byte) (i * 31 + 7);
            src.put(0, srcBytes);
            byte[] expected = new byte[dst.capacity()];
            Arrays.fill(expected, (byte) 0xA5);
            dst.put(0, expected);
            for (long layer = 0; layer < SPEC.numLayers(); layer++) {
                try (Transfer load =
                        source.load(device, layer)
                                .hostIndices(hostPages)
                                .deviceIndices(devicePages)
                                .submit()) {
                    assertTrue(load.hasCudaEvent(), b + ": a CUDA transfer that moved data");
                    assertFalse(load.hasAscendEvent(), b + ": not an Ascend transfer");
                    assertNotEquals(load.cudaEvent(), 0L);
                    load.await();
                    assertTrue(load.hasCudaEvent(), b + ": the answer stays after release");
                }
            }
            try (Transfer none =
                    source.load(device, 0).hostIndices(new long[0]).deviceIndices().submit()) {
                assertFalse(none.hasCudaEvent(), b + ": a transfer that moved nothing");
                assertEquals(none.cudaEvent(), 0L);
            }
            destination
                    .backup(device)
                    .deviceIndices(devicePages)
                    .hostIndices(hostPages)
                    .submit()
                    .await();
            long pageBytes = SPEC.numLayers() * 16 * SPEC.rowBytes(); // [P, L, ps, H, D]
            long componentBytes = 8 * pageBytes;
            for (int c = 0; c < 2; c++) {
                int from = (int) (c * componentBytes + pageBytes);
                System.arraycopy(srcBytes, from, expected, from, (int) (2 * pageBytes));
            }
            byte[] actual = new byte[dst.capacity()];
            dst.get(0, actual);
            assertTrue(Arrays.equals(actual, expected), b.userName());
        }
    }

    @Test(groups = "gpu")
    public void missingCudaDeviceIsNamed() {
        requireGpu();
        KvioInvalidArgumentException e =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () -> KvioExecutor.onDevice(IoBackend.KERNEL, 4096));
        assertMentions(e, "CUDA device 4096 does not exist");
        e =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () -> DeviceKvPool.allocate(SPEC, IoBackend.DIRECT, 4096));
        assertMentions(e, "CUDA device 4096 does not exist");
    }
}
