/*
 * Index lists longer than the per-thread scratch a thread keeps (32768 entries, IndexArg): each
 * call copies them into native memory of its own, freed right after the native call. A backup
 * and a load of 40000 scattered slots, given as long[] and as int[], against the oracle's
 * expectation on canary-filled pools compared whole; then many such calls, each leaving no copy
 * held once it returns.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.kvio.PoolFixtures.Config;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Oracle;
import java.util.Random;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeMethod;
import org.testng.annotations.Test;

public class LargeIndexListTest {
    /** MLA, one layer, 12500 pages of 4 slots (50000 token slots), 16-byte rows. */
    private static final Config POOLS = new Config(PoolKind.MLA, 1, 12500, 4, 1, 16);

    private static final int PAIRS = 40000; // more than the 32768 entries a thread keeps

    private DeviceKvPool device;
    private HostKvPool host;

    @BeforeMethod
    public void setUp() {
        device = POOLS.allocateDevice();
        host = PoolFixtures.host(device, KvLayout.PAGE_FIRST, POOLS.pages);
    }

    @AfterMethod(alwaysRun = true)
    public void tearDown() {
        host.close();
        device.close();
    }

    /** {@code n} distinct slots in [0, slots), in random order. */
    private static long[] scattered(Random random, int n, long slots) {
        long[] all = new long[(int) slots];
        for (int i = 0; i < all.length; i++) all[i] = i;
        for (int i = 0; i < n; i++) {
            int j = i + random.nextInt(all.length - i);
            long t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        long[] out = new long[n];
        System.arraycopy(all, 0, out, 0, n);
        return out;
    }

    private static int[] ints(long[] values) {
        int[] out = new int[values.length];
        for (int i = 0; i < values.length; i++) out[i] = (int) values[i];
        return out;
    }

    @Test
    public void backupAndLoadOfLongListsMatchTheOracle() {
        Random random = new Random(11);
        long slots = POOLS.pages * POOLS.pageSize;
        Geometry deviceGeometry = POOLS.deviceGeometry();
        Geometry hostGeometry = POOLS.geometry(KvLayout.PAGE_FIRST, 1, POOLS.pages);
        byte[] expectedDevice = LayoutOracle.canary(device.buffer(), 1);
        byte[] expectedHost = LayoutOracle.canary(host.buffer(), 2);

        long[] d = scattered(random, PAIRS, slots);
        long[] h = scattered(random, PAIRS, slots);
        host.backup(device).deviceIndices(d).hostIndices(h).submit().await();
        Oracle.applyTransfer(
                expectedDevice, deviceGeometry, expectedHost, hostGeometry, d, h, 0, 0, 1);
        LayoutOracle.assertBufferEquals(
                host.buffer(), expectedHost, "host after the long[] backup");
        LayoutOracle.assertBufferEquals(device.buffer(), expectedDevice, "device after it");

        long[] h2 = scattered(random, PAIRS, slots);
        long[] d2 = scattered(random, PAIRS, slots);
        host.load(device, 0).hostIndices(ints(h2)).deviceIndices(ints(d2)).submit().await();
        Oracle.applyTransfer(
                expectedHost, hostGeometry, expectedDevice, deviceGeometry, h2, d2, 0, 0, 1);
        LayoutOracle.assertBufferEquals(
                device.buffer(), expectedDevice, "device after the int[] load");
        LayoutOracle.assertBufferEquals(host.buffer(), expectedHost, "host after it");
    }

    @Test
    public void eachCallFreesItsCopiesWhenItReturns() {
        Random random = new Random(12);
        long slots = POOLS.pages * POOLS.pageSize;
        long[] d = scattered(random, PAIRS, slots);
        long[] h = scattered(random, PAIRS, slots);
        int[] di = ints(d);
        int[] hi = ints(h);
        // Each iteration copies four lists of 40000 entries (1.28 MB): kept or leaked, 400
        // iterations would grow the process by about 512 MB.
        long residentBefore = 0;
        for (int i = 0; i < 410; i++) {
            if (i == 10) residentBefore = org.bytedeco.javacpp.Pointer.physicalBytes();
            Transfer t = host.backup(device).deviceIndices(d).hostIndices(h).submit();
            assertEquals(IndexArg.oneOffCopiesHeld(), 0, "copies held after a backup");
            t.await();
            assertEquals(t.bytes(), (long) PAIRS * 16);
            host.load(device, 0).hostIndices(hi).deviceIndices(di).submit().await();
            assertEquals(IndexArg.oneOffCopiesHeld(), 0, "copies held after a load");
        }
        long grown = org.bytedeco.javacpp.Pointer.physicalBytes() - residentBefore;
        assertTrue(grown < (128L << 20), "resident memory grew by " + grown + " bytes");
        // A list of the kept scratch's size (the longest that uses it) needs no copy of its own.
        host.backup(device)
                .deviceIndices(java.util.Arrays.copyOf(d, 32768))
                .hostIndices(java.util.Arrays.copyOf(h, 32768))
                .submit()
                .await();
        assertEquals(IndexArg.oneOffCopiesHeld(), 0);
    }
}
