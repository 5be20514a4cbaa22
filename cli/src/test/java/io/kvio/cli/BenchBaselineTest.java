/*
 * The memcpy baseline of `bench` runs on the threads kvio's cpu executor copies a mid-size job
 * on: one slice per io thread on other threads and one on the calling thread (kvio's submitting
 * thread copies beside its workers), and the reports say so; a slice that fails still lets every
 * other slice finish before copySplit returns. Not timed: only who copies what.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.IoBackend;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.testng.annotations.Test;

public class BenchBaselineTest {
    @Test
    public void withOneIoThreadTheBaselineSaysTwoThreadsWithTheCallingThread() {
        assertEquals(
                BenchBaseline.describe(IoBackend.CPU, 1),
                "memcpy (bulk copies between two buffers allocated like kvio's pools: the faster"
                        + " of 1 thread and 2 threads, 1 io thread and the calling thread)");
        assertTrue(
                BenchBaseline.describe(IoBackend.CPU, 4)
                        .contains(
                                "the faster of 1 thread and 5 threads, 4 io threads and the"
                                        + " calling thread"));
    }

    @Test
    public void theCallingThreadCopiesTheLastSliceBesideTheWorkers() {
        int bytes = 1000;
        ByteBuffer src = ByteBuffer.allocateDirect(bytes);
        for (int i = 0; i < bytes; i++) src.put(i, (byte) (i * 7 + 1));
        ByteBuffer dst = ByteBuffer.allocateDirect(bytes);
        int workers = 2;
        List<Callable<Void>> slices = BenchBaseline.slices(src, dst, bytes, workers + 1);
        assertEquals(slices.size(), workers + 1);
        List<Thread> ranOn = Collections.synchronizedList(new ArrayList<>());
        List<Callable<Void>> recorded = new ArrayList<>();
        for (int i = 0; i < slices.size(); i++) {
            Callable<Void> s = slices.get(i);
            int index = i;
            recorded.add(
                    () -> {
                        ranOn.add(index == slices.size() - 1 ? Thread.currentThread() : null);
                        if (index != slices.size() - 1) {
                            assertNotEquals(Thread.currentThread(), caller);
                        }
                        return s.call();
                    });
        }
        ExecutorService pool = Executors.newFixedThreadPool(workers);
        try {
            caller = Thread.currentThread();
            BenchBaseline.copySplit(pool, recorded);
        } finally {
            pool.shutdownNow();
        }
        assertEquals(ranOn.size(), workers + 1, "every slice ran");
        assertTrue(ranOn.contains(Thread.currentThread()), "the last slice ran on the caller");
        for (int i = 0; i < bytes; i++) {
            assertEquals(dst.get(i), src.get(i), "byte " + i);
        }
    }

    /**
     * A slice that throws (the calling thread's, or the first worker's) does not make copySplit
     * return while other slices still copy into buffers the caller frees next. The other workers'
     * slices wait on a gate that opens only once copySplit has returned, or once the calling thread
     * has finished its own slice (after the failing worker's had ended, when a worker fails) and is
     * blocked: waiting for them. Without the wait, none of them has finished when copySplit
     * returns. Not timed: the gate follows the threads' states.
     */
    @Test(timeOut = 60_000)
    public void aSliceThatThrowsStillWaitsForEveryOtherSlice() throws Exception {
        for (int failing : new int[] {2, 0}) {
            int workers = 2;
            AtomicReference<Thread> failedOn = new AtomicReference<>();
            AtomicBoolean callerSliceDone = new AtomicBoolean();
            AtomicBoolean returned = new AtomicBoolean();
            CountDownLatch gate = new CountDownLatch(1);
            AtomicInteger finished = new AtomicInteger();
            List<Callable<Void>> slices = new ArrayList<>();
            for (int i = 0; i <= workers; i++) {
                int index = i;
                slices.add(
                        () -> {
                            if (index == failing) {
                                failedOn.set(Thread.currentThread());
                                callerSliceDone.set(index == workers);
                                throw new IllegalArgumentException("slice " + index + " failed");
                            }
                            if (index != workers) {
                                gate.await();
                            } else {
                                // the failing worker has thrown and is back in the pool's queue
                                while (failedOn.get() == null
                                        || failedOn.get().getState() != Thread.State.WAITING) {
                                    Thread.onSpinWait();
                                }
                                callerSliceDone.set(true);
                            }
                            finished.incrementAndGet();
                            return null;
                        });
            }
            Thread copier = Thread.currentThread();
            Thread opener =
                    new Thread(
                            () -> {
                                while (!returned.get()
                                        && !(callerSliceDone.get()
                                                && copier.getState() == Thread.State.WAITING)) {
                                    Thread.onSpinWait();
                                }
                                gate.countDown();
                            },
                            "gate-opener");
            opener.setDaemon(true);
            opener.start();
            ExecutorService pool = Executors.newFixedThreadPool(workers);
            int finishedAtReturn;
            try {
                IllegalStateException e =
                        expectThrows(
                                IllegalStateException.class,
                                () -> BenchBaseline.copySplit(pool, slices));
                finishedAtReturn = finished.get();
                returned.set(true);
                assertTrue(
                        e.getCause() instanceof IllegalArgumentException
                                && e.getCause().getMessage().equals("slice " + failing + " failed"),
                        String.valueOf(e.getCause()));
            } finally {
                returned.set(true);
                pool.shutdownNow();
                opener.join();
            }
            // the other slices: both workers, or the calling thread's and the other worker's
            assertEquals(
                    finishedAtReturn,
                    workers,
                    "slices still copying when copySplit returned (slice " + failing + " failed)");
        }
    }

    private static volatile Thread caller;
}
