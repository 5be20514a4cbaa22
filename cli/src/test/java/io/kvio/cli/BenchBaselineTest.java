/*
 * The memcpy baseline of `bench` runs on the threads kvio's cpu executor copies a mid-size job
 * on: one slice per io thread on other threads and one on the calling thread (kvio's submitting
 * thread copies beside its workers), and the reports say so. Not timed: only who copies what.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNotEquals;
import static org.testng.Assert.assertTrue;

import io.kvio.IoBackend;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
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

    private static volatile Thread caller;
}
