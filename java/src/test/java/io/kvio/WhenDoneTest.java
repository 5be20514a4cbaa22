/*
 * Transfer.whenDone(): a future completed when the transfer completes, with the outcome await()
 * gives. Transfers are held before their first copy (KVIO_TEST_FAULT_CPU_HOLD), so they are
 * certainly still running while the futures are asked for, chained and closed; destinations are
 * canary-filled and compared whole with the source once the futures complete.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotSame;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

public class WhenDoneTest {
    private static final PoolSpec SPEC = PoolFixtures.HOLDABLE; // 16 MiB: a transfer held whole

    @AfterMethod(alwaysRun = true)
    public void release() {
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 0);
    }

    private static long[] allSlots() {
        long[] slots = new long[Math.toIntExact(SPEC.tokens())];
        for (int i = 0; i < slots.length; i++) slots[i] = i;
        return slots;
    }

    /** Waits until the native held-task count shows the held transfer parked (at most 10 s). */
    private static void awaitHeld() throws InterruptedException {
        for (int i = 0; i < 1000 && KvioTestNative.cpuHeldTasks() == 0; i++) {
            Thread.sleep(10);
        }
        assertTrue(KvioTestNative.cpuHeldTasks() > 0, "the transfer is held");
    }

    @Test(timeOut = 60_000)
    public void aRunningTransfersFutureCompletesWhenItDoesOnAKvioThread() throws Exception {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            byte[] expected = LayoutOracle.fill(src.buffer(), 5);
            LayoutOracle.canary(dst.buffer(), 9);
            long[] all = allSlots();
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Transfer held = Kvio.transfer(executor, src, dst, all, all, 0, 0, 1);
            awaitHeld();
            CompletableFuture<Void> first = held.whenDone();
            CompletableFuture<Void> second = held.whenDone();
            assertNotSame(first, second, "each call returns a future of its own");
            List<String> ranOn = Collections.synchronizedList(new ArrayList<>());
            CompletableFuture<Void> chained =
                    second.thenRun(() -> ranOn.add(Thread.currentThread().getName()));
            Thread.sleep(50);
            assertFalse(first.isDone(), "held: not complete");
            assertFalse(chained.isDone());
            // Completing a copy changes neither the transfer nor the other copies.
            assertTrue(first.cancel(true));
            assertFalse(second.isDone());
            assertFalse(held.isDone(), "cancelling a future cancels no copy");

            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            chained.get(30, TimeUnit.SECONDS);
            assertTrue(second.isDone() && !second.isCompletedExceptionally());
            assertEquals(ranOn.size(), 1);
            assertTrue(ranOn.get(0).startsWith("kvio-background-"), "ran on " + ranOn);
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(dst.buffer()), expected, "destination once done");
            // Seen complete: the outcome is remembered, as after an await().
            assertTrue(held.isDone());
            held.await();
            assertTrue(held.whenDone().isDone(), "asked again: the same completion, complete");
        }
    }

    @Test(timeOut = 60_000)
    public void aFailedTransfersFutureCompletesWithWhatAwaitThrows() throws Exception {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            LayoutOracle.fill(src.buffer(), 3);
            byte[] before = LayoutOracle.canary(dst.buffer(), 4);
            long[] all = allSlots();
            // Held, then its first copy fails: the future is asked while it runs.
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 1);
            Transfer failing = Kvio.transfer(executor, src, dst, all, all, 0, 0, 1);
            awaitHeld();
            CompletableFuture<Void> future = failing.whenDone();
            assertFalse(future.isDone());
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            CompletionException e =
                    expectThrows(
                            CompletionException.class,
                            () -> future.orTimeout(30, TimeUnit.SECONDS).join());
            assertTrue(e.getCause() instanceof KvioBackendException, "cause: " + e.getCause());
            assertTrue(
                    e.getCause().getMessage().contains("fault injected by kvio_test_inject_fault"),
                    e.getCause().getMessage());
            // await() throws the same failure, remembered.
            expectThrows(KvioBackendException.class, failing::await);
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(dst.buffer()), before, "destination of the failed copy");
        }
        // A small transfer done (and failed) at submit, on an idle executor of its own: its
        // future is complete at once.
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 1);
            Transfer small =
                    Kvio.transfer(executor, src, dst, new long[] {0}, new long[] {1}, 0, 0, 1);
            CompletableFuture<Void> done = small.whenDone();
            assertTrue(done.isCompletedExceptionally(), "done at submit: complete at once");
            CompletionException inline = expectThrows(CompletionException.class, done::join);
            assertTrue(inline.getCause() instanceof KvioBackendException, "cause: " + inline);
        }
    }

    /**
     * Where no thread can be started to wait, the future fails with KvioOutOfMemoryException and
     * the transfer goes on; a later whenDone() tries again and completes with it, and no queue is
     * left behind.
     */
    @Test(timeOut = 60_000)
    public void withNoThreadToWaitTheFutureFailsAndALaterOneTriesAgain() throws Exception {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            byte[] expected = LayoutOracle.fill(src.buffer(), 11);
            LayoutOracle.canary(dst.buffer(), 12);
            long[] all = allSlots();
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Transfer held = Kvio.transfer(executor, src, dst, all, all, 0, 0, 1);
            awaitHeld();
            CompletableFuture<Void> refused;
            Background.refuseForTests(true);
            try {
                refused = held.whenDone();
            } finally {
                Background.refuseForTests(false);
            }
            CompletionException e = expectThrows(CompletionException.class, refused::join);
            assertTrue(e.getCause() instanceof KvioOutOfMemoryException, "cause: " + e.getCause());
            assertTrue(
                    e.getCause().getMessage().contains("no thread could be started"),
                    e.getCause().getMessage());
            assertEquals(Completions.queues(), 0, "the refused queue is gone");
            assertFalse(held.isDone(), "the transfer goes on");
            CompletableFuture<Void> again = held.whenDone();
            assertFalse(again.isDone());
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            again.get(30, TimeUnit.SECONDS);
            held.await();
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(dst.buffer()), expected, "destination once done");
            for (int i = 0; i < 500 && Completions.queues() != 0; i++) {
                Thread.sleep(10);
            }
            assertEquals(Completions.queues(), 0, "the executor's queue ends with its last wait");
        }
    }

    /**
     * An await() on one thread and whenDone()'s background wait on the same running transfer: both
     * see the same outcome, and the native handle is closed once (none left open).
     */
    @Test(timeOut = 60_000)
    public void anAwaitBesideTheBackgroundWaitSeesTheSameOutcome() throws Exception {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            LayoutOracle.fill(src.buffer(), 13);
            byte[] before = LayoutOracle.canary(dst.buffer(), 14);
            long[] all = allSlots();
            long transfersBefore = NativeCounts.settle()[2];
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, 1);
            Transfer held = Kvio.transfer(executor, src, dst, all, all, 0, 0, 1);
            awaitHeld();
            CompletableFuture<Void> future = held.whenDone();
            CompletableFuture<Throwable> awaited =
                    CompletableFuture.supplyAsync(
                            () -> {
                                try {
                                    held.await();
                                    return null;
                                } catch (Throwable t) {
                                    return t;
                                }
                            });
            Thread.sleep(50);
            assertFalse(awaited.isDone(), "held: await() waits");
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            Throwable fromAwait = awaited.get(30, TimeUnit.SECONDS);
            CompletionException fromFuture =
                    expectThrows(
                            CompletionException.class,
                            () -> future.orTimeout(30, TimeUnit.SECONDS).join());
            assertTrue(fromAwait instanceof KvioBackendException, "await threw " + fromAwait);
            assertTrue(fromFuture.getCause() instanceof KvioBackendException, "" + fromFuture);
            assertEquals(fromFuture.getCause().getMessage(), fromAwait.getMessage());
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(dst.buffer()), before, "destination of the failed copy");
            long transfersAfter = transfersBefore + 1;
            for (int i = 0; i < 500; i++) {
                transfersAfter = NativeBridge.debugLiveObjects()[2];
                if (transfersAfter <= transfersBefore) break;
                Thread.sleep(10);
            }
            assertTrue(
                    transfersAfter <= transfersBefore,
                    transfersAfter + " transfers open, " + transfersBefore + " before");
        }
    }

    /**
     * A close() after whenDone() (try-with-resources around the submit) does not end the wait: the
     * native handle stays open until the transfer completes, and the future completes normally; no
     * handle is left behind.
     */
    @Test(timeOut = 60_000)
    public void closeAfterWhenDoneLeavesTheWaitWhole() throws Exception {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            byte[] expected = LayoutOracle.fill(src.buffer(), 7);
            LayoutOracle.canary(dst.buffer(), 8);
            long[] all = allSlots();
            long transfersBefore = NativeCounts.settle()[2];
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            CompletableFuture<Void> future;
            try (Transfer held = Kvio.transfer(executor, src, dst, all, all, 0, 0, 1)) {
                awaitHeld();
                future = held.whenDone();
            }
            Thread.sleep(20);
            assertFalse(future.isDone(), "closed, still held: not complete");
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            future.get(30, TimeUnit.SECONDS);
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(dst.buffer()), expected, "destination once done");
            // At most as many as before (an earlier test's forgotten transfer may be freed by its
            // Cleaner meanwhile): the held transfer's handle was closed.
            long transfersAfter = transfersBefore + 1;
            for (int i = 0; i < 500; i++) {
                transfersAfter = NativeBridge.debugLiveObjects()[2];
                if (transfersAfter <= transfersBefore) break;
                Thread.sleep(10);
            }
            assertTrue(
                    transfersAfter <= transfersBefore,
                    transfersAfter + " transfers open, " + transfersBefore + " before");
        }
    }

    @Test(timeOut = 60_000)
    public void aTransferClosedBeforeWhenDoneIsRefused() throws Exception {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            long[] all = allSlots();
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 1);
            Transfer held = Kvio.transfer(executor, src, dst, all, all, 0, 0, 1);
            held.close();
            KvioClosedException e = expectThrows(KvioClosedException.class, held::whenDone);
            assertTrue(e.getMessage().contains("closed before whenDone()"), e.getMessage());
            // Released before the executor closes, which waits for its transfers.
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
        }
    }

    @Test
    public void aTransferThatMovedNothingIsCompleteAtOnce() {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            Transfer nothing = Kvio.transfer(executor, src, dst, new long[0], new long[0], 0, 0, 1);
            CompletableFuture<Void> future = nothing.whenDone();
            assertTrue(future.isDone() && !future.isCompletedExceptionally());
        }
    }

    /**
     * Several held transfers on one executor: one background thread waits for them all, in the
     * order their futures were asked (here their submission order), and its queue goes once they
     * are done.
     */
    @Test(timeOut = 60_000)
    public void oneThreadWaitsForAnExecutorsTransfersInOrder() throws Exception {
        try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 2);
                DeviceKvPool src = DeviceKvPool.allocate(SPEC, IoBackend.CPU);
                DeviceKvPool dst = DeviceKvPool.allocate(SPEC, IoBackend.CPU)) {
            byte[] expected = LayoutOracle.fill(src.buffer(), 11);
            LayoutOracle.canary(dst.buffer(), 12);
            long[] all = allSlots();
            int n = 4;
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, n);
            List<Integer> order = Collections.synchronizedList(new ArrayList<>());
            List<String> threads = Collections.synchronizedList(new ArrayList<>());
            List<CompletableFuture<Void>> chained = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Transfer t = Kvio.transfer(executor, src, dst, all, all, 0, 0, 1);
                int index = i;
                chained.add(
                        t.whenDone()
                                .thenRun(
                                        () -> {
                                            order.add(index);
                                            threads.add(Thread.currentThread().getName());
                                        }));
            }
            awaitHeld();
            assertEquals(Completions.queues() > 0, true, "a queue while they wait");
            KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
            CompletableFuture.allOf(chained.toArray(new CompletableFuture<?>[0]))
                    .get(30, TimeUnit.SECONDS);
            assertEquals(order, List.of(0, 1, 2, 3));
            assertEquals(threads.stream().distinct().count(), 1L, "one thread: " + threads);
            LayoutOracle.assertBytesEqual(
                    LayoutOracle.snapshot(dst.buffer()), expected, "destination once done");
            for (int i = 0; i < 500 && Completions.queues() > 0; i++) Thread.sleep(10);
            assertEquals(Completions.queues(), 0, "the queue goes with its last wait");
        }
    }
}
