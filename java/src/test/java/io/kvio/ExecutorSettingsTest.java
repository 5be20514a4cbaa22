/*
 * Executor settings and thread counts that cannot be honoured are refused, not dropped: setLaunch
 * and setAutoCalibration on a shared executor (which every host pool built without threads(n) or
 * executor(...) uses) would change other pools' transfers process-wide;
 * KvioExecutor.create(backend, threads) with a count on a backend without io threads (a call easily mistaken for
 * onDevice(backend, device)); HostKvPool.Builder.threads(n) where the executor build() makes
 * cannot take it. Each refusal leaves the executor's settings as they were.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertSame;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import org.testng.SkipException;
import org.testng.annotations.Test;

public class ExecutorSettingsTest {

    private static void assertMentions(Exception e, String... parts) {
        for (String part : parts) {
            assertTrue(e.getMessage().contains(part), "'" + part + "' in: " + e.getMessage());
        }
    }

    private static HostKvPool.Builder hostBuilder() {
        return HostKvPool.builder()
                .kind(PoolKind.MHA)
                .deviceLayers(2)
                .pages(2)
                .pageSize(4)
                .heads(1)
                .headBytes(16);
    }

    @Test
    public void theSharedAutoExecutorsCalibrationCannotBeChanged() {
        KvioExecutor shared = KvioExecutor.shared(IoBackend.AUTO);
        assertTrue(shared.isShared());
        String before = shared.autoCalibration();
        KvioUnsupportedException e =
                expectThrows(
                        KvioUnsupportedException.class,
                        () -> shared.setAutoCalibration("direct_row_bytes = 16K\n"));
        assertMentions(
                e,
                "setAutoCalibration on the shared auto executor",
                "every pool using it",
                "HostKvPool.Builder.threads(0)",
                "HostKvPool.Builder.executor(...)");
        assertEquals(shared.autoCalibration(), before, "a refused call changes nothing");
        // A host pool's default executor is that shared one.
        try (HostKvPool host = hostBuilder().ioBackend(IoBackend.AUTO).build()) {
            assertSame(host.executor(), shared);
            expectThrows(
                    KvioUnsupportedException.class,
                    () -> host.executor().setAutoCalibration("direct_row_bytes = 16K\n"));
        }
        assertEquals(shared.autoCalibration(), before);
        // A private one (threads(0) on the builder) takes it, and the shared one is unchanged.
        try (HostKvPool host = hostBuilder().ioBackend(IoBackend.AUTO).threads(0).build()) {
            assertFalse(host.executor().isShared());
            host.executor().setAutoCalibration("direct_row_bytes = 16K\n");
            assertTrue(host.executor().autoCalibration().contains("direct_row_bytes = 16384"));
        }
        assertEquals(shared.autoCalibration(), before);
    }

    @Test(groups = "gpu")
    public void theSharedKernelExecutorsLaunchShapeCannotBeChanged() {
        if (!IoBackend.KERNEL.isAvailable()) {
            throw new SkipException("no CUDA device: " + IoBackend.KERNEL.unavailabilityCause());
        }
        for (IoBackend backend : new IoBackend[] {IoBackend.KERNEL, IoBackend.STAGED}) {
            KvioUnsupportedException e =
                    expectThrows(
                            KvioUnsupportedException.class,
                            () -> KvioExecutor.shared(backend).setLaunch(1, 4));
            assertMentions(
                    e,
                    "setLaunch on the shared " + backend.userName() + " executor",
                    "KvioExecutor.onDevice(IoBackend." + backend.name() + ", 0)",
                    "launch(ctaBudget, warpsPerCta)");
            try (KvioExecutor own = KvioExecutor.onDevice(backend, 0)) {
                own.setLaunch(1, 4); // a private one takes it
            }
        }
    }

    @Test
    public void aThreadCountOnABackendWithoutIoThreadsIsRefusedBeforeAnythingElse() {
        // create(KERNEL, 1) reads like onDevice(KERNEL, 1) but ran on device 0, dropping the 1.
        // Refused before the availability check, so on any machine.
        for (IoBackend backend :
                new IoBackend[] {
                    IoBackend.KERNEL, IoBackend.DIRECT, IoBackend.STAGED, IoBackend.KERNEL_ASCEND
                }) {
            KvioUnsupportedException e =
                    expectThrows(
                            KvioUnsupportedException.class, () -> KvioExecutor.create(backend, 1));
            assertMentions(
                    e,
                    "io backend '" + backend.userName() + "' has no io threads",
                    "got 1",
                    "KvioExecutor.onDevice(IoBackend." + backend.name() + ", 1)");
        }
    }

    @Test
    public void threadCountsAreHonouredWhereThereAreIoThreads() {
        try (KvioExecutor cpu = KvioExecutor.create(IoBackend.CPU, 3)) {
            assertEquals(cpu.threads(), 3);
        }
        // Too many is the same exception for every backend, on every machine.
        for (IoBackend backend : IoBackend.values()) {
            assertMentions(
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () -> KvioExecutor.create(backend, 1025)),
                    "threads must be 1 to 1024",
                    "got 1025");
            assertMentions(
                    expectThrows(
                            KvioInvalidArgumentException.class,
                            () -> HostKvPool.Builder.checkThreads(backend, 1025, 0)),
                    "got 1025");
        }
        if (!IoBackend.AUTO.isCuda()) { // the CUDA machine's answer: autoOnACudaGpuHasNoIoThreads
            try (KvioExecutor auto = KvioExecutor.create(IoBackend.AUTO, 3)) {
                assertEquals(auto.threads(), 3, "auto's cpu candidate");
            }
            HostKvPool.Builder.checkThreads(IoBackend.AUTO, 4, 0); // its cpu candidate takes it
        }
    }

    /**
     * hasIoThreads() says which backends take a thread count: KvioExecutor.create honours it for
     * those (the native executor reports the count it runs) and refuses it for the others.
     */
    @Test
    public void hasIoThreadsSaysWhichBackendsTakeAThreadCount() {
        assertTrue(IoBackend.CPU.hasIoThreads());
        for (IoBackend backend : IoBackend.values()) {
            if (!backend.hasIoThreads()) {
                expectThrows(KvioUnsupportedException.class, () -> KvioExecutor.create(backend, 2));
            } else if (backend.isAvailable()) {
                try (KvioExecutor executor = KvioExecutor.create(backend, 2)) {
                    assertEquals(executor.threads(), 2, backend.userName());
                }
            }
        }
    }

    /** The native executor was made for the backend the Java one names (auto stays auto). */
    @Test
    public void theNativeExecutorIsOfTheJavaBackend() {
        for (IoBackend backend : IoBackend.values()) {
            if (!backend.isAvailable()) {
                continue;
            }
            KvioExecutor shared = KvioExecutor.shared(backend);
            assertSame(IoBackend.ofNative(NativeBridge.executorBackend(shared.handle())), backend);
            try (KvioExecutor own = KvioExecutor.create(backend, 0)) {
                assertSame(IoBackend.ofNative(NativeBridge.executorBackend(own.handle())), backend);
            }
        }
    }

    /** On a CUDA machine auto chooses among the device backends, so it takes no thread count. */
    @Test(groups = "gpu")
    public void autoOnACudaGpuHasNoIoThreads() {
        if (!IoBackend.AUTO.isCuda()) {
            throw new SkipException("auto does not run on a CUDA GPU here");
        }
        assertMentions(
                expectThrows(
                        KvioUnsupportedException.class,
                        () -> KvioExecutor.create(IoBackend.AUTO, 3)),
                "runs on this machine's CUDA GPU",
                "KvioExecutor.onDevice(IoBackend.AUTO, 3)");
        for (int ordinal : new int[] {0, 1}) {
            assertMentions(
                    expectThrows(
                            KvioUnsupportedException.class,
                            () -> HostKvPool.Builder.checkThreads(IoBackend.AUTO, 4, ordinal)),
                    "threads(4)",
                    "runs on this machine's CUDA GPU",
                    "threads(0)");
        }
        try (KvioExecutor auto = KvioExecutor.create(IoBackend.AUTO, 0)) {
            assertTrue(auto.backend().isCuda());
        }
    }

    @Test
    public void hostPoolThreadsOnABackendWithoutIoThreadsIsRefused() {
        KvioUnsupportedException e =
                expectThrows(
                        KvioUnsupportedException.class,
                        () -> hostBuilder().ioBackend(IoBackend.KERNEL).threads(2).build());
        assertMentions(e, "threads(2)", "'kernel' has no io threads", "threads(0)");
        try (HostKvPool host = hostBuilder().threads(2).build()) { // cpu
            assertEquals(host.executor().threads(), 2);
        }
    }

    /**
     * auto's executor on a device other than 0 (kvio_executor_create_cuda / _on_npu) takes no
     * thread count: threads(n) is refused there, on any machine (the rule build() applies, asked
     * directly: a device other than 0 needs a second GPU or NPU).
     */
    @Test
    public void hostPoolThreadsForAutoOnAnotherDeviceIsRefused() {
        for (int ordinal : new int[] {1, 3}) {
            KvioUnsupportedException e =
                    expectThrows(
                            KvioUnsupportedException.class,
                            () -> HostKvPool.Builder.checkThreads(IoBackend.AUTO, 4, ordinal));
            assertMentions(e, "threads(4)", "threads(0)");
        }
        HostKvPool.Builder.checkThreads(IoBackend.AUTO, 0, 1); // one per core: taken
        HostKvPool.Builder.checkThreads(IoBackend.KERNEL, -1, 2);
        HostKvPool.Builder.checkThreads(IoBackend.CPU, 1024, -1);
    }

    /** Without a CUDA GPU the refusal on another device names that device. */
    @Test
    public void autoOnAnotherDeviceNamesIt() {
        if (IoBackend.AUTO.isCuda()) {
            throw new SkipException("auto runs on a CUDA GPU here: autoOnACudaGpuHasNoIoThreads");
        }
        assertMentions(
                expectThrows(
                        KvioUnsupportedException.class,
                        () -> HostKvPool.Builder.checkThreads(IoBackend.AUTO, 4, 3)),
                "on device 3");
    }
}
