/*
 * The lifetime of pool memory in the Java API (docs/memory-lifetime.md): closeAndWait() returns
 * once kvio no longer uses a pool's memory, with a transfer in flight or not; a completed
 * transfer nobody awaited does not keep a closed pool's memory; no host registration of kvio's
 * is left (kvio_debug_live_host_registrations). Registration of wrapped pinned memory itself is
 * exercised natively (lifetime_test, host_registry_test): the Java API wraps no caller host
 * memory as pinned, and CI has no device.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import java.util.concurrent.TimeUnit;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

public class PoolLifetimeTest {
    // 4 layers x 4096 tokens x 8 heads x 256 B x K and V: 64 MiB per pool, long enough a transfer
    // to be in flight when its pools are closed.
    private static final PoolSpec SPEC =
            PoolSpec.builder()
                    .kind(PoolKind.MHA)
                    .layout(KvLayout.LAYER_FIRST)
                    .layers(4)
                    .pages(256)
                    .pageSize(16)
                    .heads(8)
                    .headBytes(256)
                    .build();

    private KvioExecutor executor;
    private TokenIndices from;
    private TokenIndices to;

    @BeforeMethod
    public void setUp() {
        executor = KvioExecutor.create(IoBackend.CPU, 2);
        from = TokenIndices.of(allTokens(false));
        to = TokenIndices.of(allTokens(true));
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown() {
        to.close();
        from.close();
        executor.close();
    }

    private HostKvPool pageFirstHost(DeviceKvPool device) {
        return HostKvPool.builder()
                .forDevice(device)
                .layout(KvLayout.PAGE_FIRST)
                .ioBackend(IoBackend.CPU)
                .executor(executor)
                .build();
    }

    private static long[] allTokens(boolean reversed) {
        long[] tokens = new long[256 * 16];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = reversed ? tokens.length - 1 - i : i;
        }
        return tokens;
    }

    @Test(timeOut = 60_000)
    public void closeAndWaitReturnsOnceTheMemoryIsReleased() {
        // Settled first: a Cleaner action freeing an earlier test's memory meanwhile would change
        // the count under the test. Afterwards "at most the baseline": only such a release could
        // take it lower, and memory of these pools still allocated would take it higher.
        long[] baseline = NativeCounts.settle();
        DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
        HostKvPool host = pageFirstHost(device);
        assertEquals(NativeBridge.debugLiveObjects()[3], baseline[3] + 2, "two allocations");
        Transfer transfer = host.backup(device).deviceIndices(from).hostIndices(to).submit();
        device.closeAndWait();
        host.closeAndWait();
        assertTrue(device.isClosed() && host.isClosed());
        assertTrue(transfer.isDone(), "the pools' memory was released under a transfer");
        long after = NativeBridge.debugLiveObjects()[3];
        assertTrue(
                after <= baseline[3],
                "closeAndWait returned before the pools' memory was freed: "
                        + after
                        + " allocations live, "
                        + baseline[3]
                        + " before the test");
        assertEquals(NativeBridge.debugLiveHostRegistrations(), 0L);
        assertTrue(device.closeAndWait(0, TimeUnit.SECONDS), "waiting again is done at once");
        transfer.await();
        transfer.close();
    }

    @Test(timeOut = 60_000)
    public void completedTransferNobodyAwaitedDoesNotKeepAClosedPool() throws Exception {
        long[] baseline = NativeCounts.settle(); // as in the test above
        DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
        HostKvPool host = pageFirstHost(device);
        Transfer transfer = host.backup(device).deviceIndices(from).hostIndices(to).submit();
        Transfer second = host.backup(device).deviceIndices(to).hostIndices(from).submit();
        while (!second.isDone()) {
            Thread.sleep(1);
        }
        // Both completed; the first was never awaited. Plain close() releases the memory
        // before it returns.
        device.close();
        host.close();
        long after = NativeBridge.debugLiveObjects()[3];
        assertTrue(
                after <= baseline[3],
                "close() left the pools' memory allocated: "
                        + after
                        + " allocations live, "
                        + baseline[3]
                        + " before the test");
        transfer.close();
        second.close();
        assertTrue(host.closeAndWait(0, TimeUnit.SECONDS));
    }

    /**
     * A host pool with its own executor (threads(n)): closeAndWait(timeout) keeps to its timeout
     * (closing that executor waits for its transfers, which close() used to do inside it) and
     * closes the executor once it returns true.
     */
    @Test(timeOut = 120_000)
    public void closeAndWaitKeepsItsTimeoutWithAPrivateExecutor() {
        try (DeviceKvPool device = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            HostKvPool host =
                    HostKvPool.builder()
                            .forDevice(device)
                            .layout(KvLayout.PAGE_FIRST)
                            .ioBackend(IoBackend.CPU)
                            .threads(1)
                            .build();
            // 16 backups of 64 MiB on one thread: a gigabyte to copy, tens of milliseconds at
            // the least, queued when closeAndWait(0) runs.
            Transfer[] transfers = new Transfer[16];
            for (int i = 0; i < transfers.length; i++) {
                transfers[i] = host.backup(device).deviceIndices(from).hostIndices(to).submit();
            }
            boolean quiet = host.closeAndWait(0, TimeUnit.MILLISECONDS);
            boolean lastDone = transfers[transfers.length - 1].isDone();
            assertFalse(quiet || lastDone, "closeAndWait(0) waited for the queued transfers");
            assertFalse(host.executor().isClosed(), "the executor closed under its transfers");
            assertTrue(host.closeAndWait(1, TimeUnit.MINUTES));
            assertTrue(host.executor().isClosed(), "the pool's own executor outlived the pool");
            for (Transfer t : transfers) {
                assertTrue(t.isDone());
                t.close();
            }
        }
    }
}
