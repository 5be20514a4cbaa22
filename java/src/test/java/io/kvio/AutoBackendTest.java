/*
 * The 'auto' io backend from Java (issue 11, item 4): IoBackend.AUTO is always available; where
 * no CUDA device is usable it is the cpu backend (host memory, host threads), and every transfer
 * reports CPU as the backend that ran it. The overlaps-compute mark of backup/load requests
 * reaches the natives (the Flight Recorder event says so), the calibration can be read and
 * replaced, and malformed calibrations or non-auto executors are refused with typed errors. Bytes
 * are checked whole against the oracle on canary-filled destinations.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.PoolFixtures.Config;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.Placement;
import org.testng.SkipException;
import org.testng.annotations.Test;

public class AutoBackendTest {

    static final Config DEVICE = new Config(PoolKind.MHA, 3, 8, 4, 2, 16);

    /** For the tests of auto as cpu; the rest hold on a GPU machine too. */
    private static void requireNoCuda() {
        if (IoBackend.KERNEL.isAvailable()) {
            throw new SkipException("a CUDA device is usable here: auto is not cpu");
        }
    }

    @Test
    public void autoIsAvailableAndResolvesToCpu() {
        requireNoCuda();
        assertTrue(IoBackend.AUTO.isAvailable());
        assertNull(IoBackend.AUTO.unavailabilityCause());
        assertSame(IoBackend.AUTO.resolved(), IoBackend.CPU);
        assertSame(IoBackend.KERNEL.resolved(), IoBackend.KERNEL);
        assertFalse(IoBackend.AUTO.isCuda());
        assertFalse(IoBackend.AUTO.isDevice());
        assertSame(IoBackend.parse("auto"), IoBackend.AUTO);
        assertEquals(IoBackend.AUTO.toString(), "auto");
    }

    @Test
    public void backupAndLoadRunOnCpuAndSaySo() {
        requireNoCuda();
        try (DeviceKvPool device =
                        DeviceKvPool.allocate(DEVICE.spec(KvLayout.LAYER_FIRST), IoBackend.AUTO);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout(KvLayout.PAGE_FIRST_DIRECT)
                                .ioBackend(IoBackend.AUTO)
                                .pages(6)
                                .threads(2)
                                .build()) {
            assertSame(device.backend(), IoBackend.AUTO);
            Placement dp = Placement.standard(DEVICE.deviceGeometry(), 0);
            Placement hp = Placement.standard(DEVICE.geometry(KvLayout.PAGE_FIRST_DIRECT, 3, 6), 0);
            byte[] deviceBytes = LayoutOracle.fill(device.buffer(), 1);
            byte[] expected = LayoutOracle.canary(host.buffer(), 2);
            long[] d = {5, 6, 7, 30, 2};
            long[] h = {0, 1, 2, 9, 23};
            Transfer backup =
                    host.backup(device).deviceIndices(d).hostIndices(h).overlapsCompute().submit();
            assertSame(backup.backend(), IoBackend.CPU);
            backup.await();
            Oracle.applyTransfer(deviceBytes, dp, expected, hp, d, h, 0, 0, 3);
            LayoutOracle.assertBufferEquals(host.buffer(), expected, "host after backup");

            byte[] hostBytes = LayoutOracle.fill(host.buffer(), 3);
            byte[] expectedDevice = LayoutOracle.canary(device.buffer(), 4);
            Transfer load = host.load(device, 1).hostIndices(h).deviceIndices(d).submit();
            assertSame(load.backend(), IoBackend.CPU);
            load.await();
            Oracle.applyTransfer(hostBytes, hp, expectedDevice, dp, h, d, 1, 1, 1);
            LayoutOracle.assertBufferEquals(device.buffer(), expectedDevice, "device after load");

            // Nothing moved: auto chose no backend, and the transfer says the executor's.
            assertSame(
                    host.load(device, 0)
                            .hostIndices(new long[0])
                            .deviceIndices()
                            .submit()
                            .backend(),
                    IoBackend.AUTO);
        }
    }

    /**
     * Engine code written for auto asks hasCudaEvent() before cudaEvent(): without a GPU the
     * transfer ran on cpu, has no event, and hasCudaEvent() says so instead of throwing. Large
     * transfers (still running at submit, with a native handle) and small ones (done on the
     * submitting thread) alike, and after release; a transfer that moved nothing has none either.
     */
    @Test
    public void hasCudaEventSaysWithoutThrowingThatACpuTransferHasNone() {
        requireNoCuda();
        PoolSpec big =
                PoolSpec.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(4)
                        .pages(64)
                        .pageSize(16)
                        .heads(8)
                        .headBytes(256)
                        .build(); // 16 MiB: more than submit copies on the calling thread
        try (DeviceKvPool device = DeviceKvPool.allocate(big, IoBackend.AUTO);
                HostKvPool host =
                        HostKvPool.builder()
                                .forDevice(device)
                                .ioBackend(IoBackend.AUTO)
                                .threads(2)
                                .build()) {
            long[] all = new long[64 * 16];
            for (int i = 0; i < all.length; i++) all[i] = i;
            Transfer large = host.backup(device).deviceIndices(all).hostIndices(all).submit();
            Transfer small = host.load(device, 0).hostIndices(1).deviceIndices(2).submit();
            for (Transfer t : new Transfer[] {large, small}) {
                assertSame(t.backend(), IoBackend.CPU);
                assertFalse(t.hasCudaEvent());
                assertFalse(t.hasAscendEvent());
                KvioUnsupportedException e =
                        expectThrows(KvioUnsupportedException.class, t::cudaEvent);
                assertTrue(e.getMessage().contains("no CUDA event"), e.getMessage());
                t.await(); // released
                assertFalse(t.hasCudaEvent(), "after release");
            }
            Transfer none = host.load(device, 0).hostIndices(new long[0]).deviceIndices().submit();
            assertFalse(none.hasCudaEvent());
            assertEquals(none.cudaEvent(), 0L, "nothing moved: nothing to wait on");
        }
    }

    @Test
    public void otherBackendsReportThemselves() {
        try (DeviceKvPool device = DEVICE.allocateDevice();
                HostKvPool host = PoolFixtures.host(device, KvLayout.LAYER_FIRST, 8)) {
            Transfer t = host.backup(device).deviceIndices(1).hostIndices(2).submit();
            t.await();
            assertSame(t.backend(), IoBackend.CPU);
        }
    }

    /**
     * A transfer that moves nothing (empty lists, a layer the host pool does not hold) reports its
     * executor's backend, never null: AUTO for an auto executor, which chose none, CPU for cpu; no
     * event, and no skipped layer unless one was skipped.
     */
    @Test
    public void transfersThatMoveNothingReportTheExecutorsBackend() {
        try (DeviceKvPool device = DEVICE.allocateDevice();
                HostKvPool cpu = PoolFixtures.host(device, KvLayout.LAYER_FIRST, 8, 1, 1);
                KvioExecutor auto = KvioExecutor.create(IoBackend.AUTO, 0);
                DeviceKvPool other = DEVICE.allocateDevice()) {
            Transfer emptyBackup = cpu.backup(device).deviceIndices().hostIndices().submit();
            Transfer notHeld = cpu.load(device, 0).hostIndices(1).deviceIndices(2).submit();
            for (Transfer t : new Transfer[] {emptyBackup, notHeld}) {
                assertSame(t.backend(), IoBackend.CPU);
                assertEquals(t.bytes(), 0);
                assertFalse(t.hasCudaEvent());
                assertEquals(t.cudaEvent(), 0L);
            }
            assertEquals(notHeld.skippedLayers(), new long[] {0});
            if (!IoBackend.AUTO.isDevice()) { // auto as cpu moves these host-memory pools
                Transfer emptyOnAuto =
                        Kvio.request(auto, device, other)
                                .srcIndices()
                                .dstIndices()
                                .layers(1)
                                .submit();
                assertSame(emptyOnAuto.backend(), IoBackend.AUTO, "auto chose nothing");
                assertEquals(emptyOnAuto.skippedLayers(), new long[0]);
            }
        }
    }

    @Test
    public void calibrationIsReadReplacedAndValidated() {
        try (KvioExecutor auto = KvioExecutor.create(IoBackend.AUTO, 0);
                KvioExecutor cpu = KvioExecutor.create(IoBackend.CPU, 1)) {
            String defaults = auto.autoCalibration();
            assertTrue(defaults.contains("direct_row_bytes = 262144"), defaults);
            assertTrue(defaults.contains("direct_row_bytes_overlap = 2048"), defaults);
            assertTrue(defaults.contains("direct_copy_bytes_overlap = 32768"), defaults);
            assertTrue(defaults.contains("defaults (H200 figures)"), defaults);
            auto.setAutoCalibration("direct_row_bytes = 16K\nstaged_min_bytes = never\n");
            String set = auto.autoCalibration();
            assertTrue(set.contains("direct_row_bytes = 16384"), set);
            assertTrue(set.contains("staged_min_bytes = never"), set);
            KvioInvalidArgumentException bad =
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () -> auto.setAutoCalibration("direct_row_bytes = lots"));
            assertTrue(bad.getMessage().contains("line 1"), bad.getMessage());
            assertEquals(auto.autoCalibration(), set, "a refused text changes nothing");
            // A NUL would end the C string: "= 16K" and a line after it would be dropped unseen.
            KvioInvalidArgumentException nul =
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () -> auto.setAutoCalibration("direct_row_bytes = 4K\n\0 = junk\n"));
            assertTrue(
                    nul.getMessage().contains("NUL character at index 22 (line 2)"),
                    nul.getMessage());
            assertEquals(auto.autoCalibration(), set, "a refused text changes nothing");
            KvioUnsupportedException notAuto =
                    expectThrows(KvioUnsupportedException.class, cpu::autoCalibration);
            assertTrue(notAuto.getMessage().contains("'cpu' executor"), notAuto.getMessage());
            expectThrows(
                    KvioUnsupportedException.class,
                    () -> cpu.setAutoCalibration("direct_row_bytes = 1"));
            // What the executor cannot do is said before what is wrong with the text.
            KvioUnsupportedException withNul =
                    expectThrows(
                            KvioUnsupportedException.class,
                            () -> cpu.setAutoCalibration("direct_row_bytes = 1\0"));
            assertTrue(withNul.getMessage().contains("'cpu' executor"), withNul.getMessage());
        }
    }

    /**
     * A null calibration text is a NullPointerException naming the argument, as every null argument
     * of the public API (Objects.requireNonNull), before the executor's kind or state is looked at:
     * not the native "text is null" as a KvioInvalidArgumentException.
     */
    @Test
    public void nullCalibrationNamesTheArgument() {
        KvioExecutor closed = KvioExecutor.create(IoBackend.AUTO, 0);
        closed.close();
        try (KvioExecutor auto = KvioExecutor.create(IoBackend.AUTO, 0);
                KvioExecutor cpu = KvioExecutor.create(IoBackend.CPU, 1)) {
            for (KvioExecutor executor : new KvioExecutor[] {auto, cpu, closed}) {
                NullPointerException e =
                        expectThrows(
                                NullPointerException.class,
                                () -> executor.setAutoCalibration(null));
                assertEquals(e.getMessage(), "text");
            }
            assertTrue(auto.autoCalibration().contains("direct_row_bytes"), "unchanged, usable");
        }
    }
}
