/*
 * Messages and edge cases as a Java caller meets them (issue 12, friction items 2, 3, 4, 5, 7 and
 * 10): index errors name the caller's parameters, closed objects are named once, null checks name
 * the argument, builders say which method to call, the host "device number" is -1 everywhere, and
 * empty index lists give an already completed transfer of 0 bytes on every entry point. Every
 * rejected call is checked to leave both pools' bytes unchanged.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.PoolFixtures.Config;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testng.Assert.ThrowingRunnable;
import org.testng.annotations.Test;

public class CallerMessagesTest extends CpuPoolsFixture {

    private static long[] range(long from, long count) {
        long[] r = new long[(int) count];
        for (int i = 0; i < count; i++) r[i] = from + i;
        return r;
    }

    /** Runs the call expecting {@code type}; checks fragments, absences and unchanged buffers. */
    private <T extends Throwable> T rejected(
            Class<T> type, ThrowingRunnable call, String[] absent, String... fragments) {
        return rejected(type, call, List.of(), absent, fragments);
    }

    /**
     * Like {@link #rejected(Class, ThrowingRunnable, String[], String...)}, checking the bytes of
     * {@code bystanders} (pools outside the fixture) too, along with the fixture's open pools.
     */
    private <T extends Throwable> T rejected(
            Class<T> type,
            ThrowingRunnable call,
            List<ByteBuffer> bystanders,
            String[] absent,
            String... fragments) {
        List<ByteBuffer> buffers = openBuffers();
        buffers.addAll(bystanders);
        T e = assertRejected(type, call, buffers, fragments);
        String m = e.getMessage();
        for (String a : absent) assertFalse(m.contains(a), "'" + a + "' present in: " + m);
        return e;
    }

    private static final String[] NATIVE_NAMES = {
        "src_indices", "dst_indices", "the src pool", "the dst pool", "num_indices"
    };

    // ---- item 2: the caller's parameter names, plurals ----

    /**
     * Backup of device slots {@code d} into host slots {@code h}: refused, in the caller's names.
     */
    private void backupRefused(
            Class<? extends KvioException> type, long[] h, long[] d, String... fragments) {
        TokenIndices hi = idx(h);
        TokenIndices di = idx(d);
        rejected(
                type,
                () -> host.backup(device).deviceIndices(di).hostIndices(hi).submit().await(),
                NATIVE_NAMES,
                fragments);
    }

    /** Load of layer 0 from host slots {@code h} to device slots {@code d}: refused likewise. */
    private void loadRefused(
            Class<? extends KvioException> type, long[] h, long[] d, String... fragments) {
        TokenIndices hi = idx(h);
        TokenIndices di = idx(d);
        rejected(
                type,
                () -> host.load(device, 0).hostIndices(hi).deviceIndices(di).submit().await(),
                NATIVE_NAMES,
                fragments);
    }

    @Test
    public void backupNamesHostIndices() {
        long[] h = range(0, 13);
        h[12] = 32;
        backupRefused(
                KvioOutOfRangeException.class,
                h,
                range(0, 13),
                "hostIndices[12] = 32 is out of range: the host pool has 32 token slots",
                "valid: 0 to 31");
    }

    @Test
    public void loadNamesDeviceIndices() {
        loadRefused(
                KvioOutOfRangeException.class,
                new long[] {0, 1},
                new long[] {0, 64},
                "deviceIndices[1] = 64 is out of range: the device pool has 64 token slots");
        loadRefused(
                KvioOutOfRangeException.class,
                new long[] {40, 1},
                new long[] {0, 1},
                "hostIndices[0] = 40 is out of range: the host pool has 32 token slots");
    }

    @Test
    public void duplicateDestinationNamesTheCallersList() {
        backupRefused(
                KvioInvalidArgumentException.class,
                new long[] {3, 3},
                new long[] {0, 1},
                "hostIndices has duplicate destination slot 3",
                "hostIndices[0] and hostIndices[1]");
    }

    @Test
    public void generalTransferNamesSrcIndicesAndDstIndices() {
        rejected(
                KvioOutOfRangeException.class,
                () ->
                        Kvio.transfer(host.executor(), device, host, idx(0, 99), idx(0, 1), 0, 0, 1)
                                .await(),
                NATIVE_NAMES,
                "srcIndices[1] = 99 is out of range: src (the device pool) has 64 token slots");
    }

    @Test
    public void oneEntryIsSingular() {
        rejected(
                KvioInvalidArgumentException.class,
                () -> host.backup(device).deviceIndices(idx(0, 1)).hostIndices(idx(0)).submit(),
                new String[] {"1 entries"},
                "hostIndices has 1 entry but deviceIndices has 2 entries");
    }

    // ---- item 3: closed objects named once ----

    /**
     * The fixture's pools are closed one after the other, so an open pair of pools outside the
     * fixture (a device pool and a host pool over it) is checked after every rejected call too, and
     * is the open side of the last two calls: a closed source or destination must leave the open
     * one's bytes unchanged.
     */
    @Test
    public void closedPoolsAreNamedOnce() {
        DeviceKvPool otherDevice = open(DEVICE.allocateDevice());
        HostKvPool otherHost =
                open(PoolFixtures.host(otherDevice, KvLayout.PAGE_FIRST, HOST_PAGES));
        List<ByteBuffer> bystanders = List.of(otherDevice.buffer(), otherHost.buffer());
        KvioExecutor cpu = KvioExecutor.shared(IoBackend.CPU);
        TokenIndices hi = idx(0);
        TokenIndices di = idx(0);
        device.close();
        rejected(
                KvioClosedException.class,
                () -> host.backup(device).deviceIndices(di).hostIndices(hi).submit(),
                bystanders,
                new String[] {"(device pool)", "device (", "pool pool"},
                "device is a closed device pool");
        host.close();
        assertTrue(openBuffers().isEmpty(), "both fixture pools are closed");
        rejected(
                KvioClosedException.class,
                () -> host.backup(device).deviceIndices(di).hostIndices(hi).submit(),
                bystanders,
                new String[] {"(host pool)"},
                "this host pool is closed");
        rejected(
                KvioClosedException.class,
                () -> Kvio.transfer(cpu, host, device, hi, di, 0, 0, 1),
                bystanders,
                new String[] {"(host pool)", "src ("},
                "src is a closed host pool");
        rejected(
                KvioClosedException.class,
                () -> Kvio.transfer(cpu, host, otherDevice, hi, di, 0, 0, 1),
                bystanders,
                new String[] {"(host pool)", "src ("},
                "src is a closed host pool");
        rejected(
                KvioClosedException.class,
                () -> Kvio.transfer(cpu, otherHost, device, hi, di, 0, 0, 1),
                bystanders,
                new String[] {"(device pool)", "dst ("},
                "dst is a closed device pool");
    }

    // ---- item 4: null checks name the argument ----

    @Test
    public void nullNamesAreTheArguments() {
        NullPointerException e =
                expectThrows(
                        NullPointerException.class,
                        () -> HostKvPool.builder().layout((String) null));
        assertEquals(e.getMessage(), "layout");
        e =
                expectThrows(
                        NullPointerException.class,
                        () -> HostKvPool.builder().ioBackend((String) null));
        assertEquals(e.getMessage(), "ioBackend");
        e = expectThrows(NullPointerException.class, () -> PoolKind.parse(null));
        assertEquals(e.getMessage(), "kind");
        e = expectThrows(NullPointerException.class, () -> Granularity.parse(null));
        assertEquals(e.getMessage(), "granularity");
        e = expectThrows(NullPointerException.class, () -> KvLayout.parse(null));
        assertEquals(e.getMessage(), "layout");
        e = expectThrows(NullPointerException.class, () -> IoBackend.parse(null));
        assertEquals(e.getMessage(), "ioBackend");
    }

    // ---- item 5: builders say which method to call ----

    /**
     * A host builder of 8 pages of 4 slots, 2 heads of 8 bytes, for 4 device layers, less the
     * setting named {@code unset} (deviceLayers, pages or heads).
     */
    private static HostKvPool.Builder hostGeometryWithout(String unset) {
        HostKvPool.Builder b = HostKvPool.builder().pageSize(4).headBytes(8);
        if (!unset.equals("deviceLayers")) b.deviceLayers(4);
        if (!unset.equals("pages")) b.pages(8);
        if (!unset.equals("heads")) b.heads(2);
        return b;
    }

    @Test
    public void hostBuilderWithoutLayersSaysWhatToCall() {
        rejected(
                KvioInvalidArgumentException.class,
                () -> open(hostGeometryWithout("deviceLayers").build()),
                new String[] {"num_layers"},
                "forDevice(devicePool)",
                "deviceLayers(n)");
    }

    @Test
    public void wrapSizesAreJavaNamesAndNeverNegative() {
        // A negative size read as unsigned said the pool "wraps around the address space".
        rejected(
                KvioInvalidArgumentException.class,
                () -> DeviceKvPool.wrap(device.spec(), device.regionAddress(0), -5, IoBackend.CPU),
                new String[] {"wraps around", "18446744073709551611"},
                "sizeBytes must be at least 0, got -5");
        rejected(
                KvioInvalidArgumentException.class,
                () ->
                        DeviceKvPool.wrapComponents(
                                device.spec(), new long[] {1 << 20, 2 << 20}, -1, IoBackend.CPU),
                new String[] {"bytes_each"},
                "bytesEach must be at least 0, got -1");
        ByteBuffer small = ByteBuffer.allocateDirect(16);
        rejected(
                KvioInvalidArgumentException.class,
                () -> open(hostGeometryWithout("nothing").wrap(small).build()),
                new String[] {"size_bytes", "sizeBytes"}, // wrap(ByteBuffer) takes no sizeBytes
                "memory.remaining() 16 is too small");
    }

    @Test
    public void readOnlyBuffersAreRefused() {
        // A backup writes the host pool: into a read-only view it wrote anyway, into a read-only
        // mapping it crashed the JVM.
        ByteBuffer readOnly = ByteBuffer.allocateDirect(1 << 20).asReadOnlyBuffer();
        rejected(
                KvioInvalidArgumentException.class,
                () -> open(hostGeometryWithout("nothing").wrap(readOnly).build()),
                new String[0],
                "read-only buffer",
                "pass a writable buffer");
    }

    @Test
    public void hostBuilderWithoutPagesSaysWhatToCall() {
        rejected(
                KvioInvalidArgumentException.class,
                () -> open(hostGeometryWithout("pages").build()),
                new String[] {"num_pages"},
                "pages(n)");
    }

    @Test
    public void hostBuilderWithoutHeadsSaysWhatToCall() {
        rejected(
                KvioInvalidArgumentException.class,
                () -> open(hostGeometryWithout("heads").build()),
                new String[0],
                "heads must be at least 1, got 0: call heads(n)",
                "forDevice(devicePool)");
        rejected(
                KvioInvalidArgumentException.class,
                () -> HostKvPool.builder().forDevice(device).layerRange(1, 0).build(),
                new String[0],
                "numLayers must be at least 1, got 0");
    }

    @Test
    public void unitIsNamed() {
        NullPointerException e =
                expectThrows(NullPointerException.class, () -> host.closeAndWait(1, null));
        assertEquals(e.getMessage(), "unit");
    }

    @Test
    public void poolSpecBuilderSaysWhatToCall() {
        rejected(
                KvioInvalidArgumentException.class,
                () -> PoolSpec.builder().pages(4).pageSize(4).heads(2).headBytes(8).build(),
                new String[] {"num_layers"},
                "layers(n)");
    }

    // ---- item 7: the host is device -1 everywhere ----

    @Test
    public void hostDeviceNumberIsMinusOneEverywhere() {
        PoolSpec spec = DEVICE.spec(KvLayout.LAYER_FIRST);
        try (DeviceKvPool pool = DeviceKvPool.allocate(spec, IoBackend.CPU, -1)) {
            assertEquals(pool.device(), -1);
            KvioExecutor shared = KvioExecutor.shared(IoBackend.CPU, pool.device());
            assertEquals(shared.device(), -1);
            KvioUnsupportedException e =
                    expectThrows(
                            KvioUnsupportedException.class,
                            () -> DeviceKvPool.allocate(spec, IoBackend.CPU, 0));
            assertTrue(e.getMessage().contains("device must be -1 (Kvio.HOST_DEVICE), got 0"));
            e =
                    expectThrows(
                            KvioUnsupportedException.class,
                            () -> KvioExecutor.shared(IoBackend.CPU, 0));
            assertTrue(e.getMessage().contains("device must be -1 (Kvio.HOST_DEVICE), got 0"));
        }
    }

    // ---- item 10: empty lists complete at once ----

    private static void assertEmptyTransfer(Transfer t) throws Exception {
        assertEquals(t.bytes(), 0);
        assertTrue(t.isDone());
        // Nothing was queued on any stream: no event to wait on, and not "closed" either (a
        // per-layer pipeline waits on every load's event, empty batches included).
        assertEquals(t.cudaEvent(), 0L);
        assertEquals(t.ascendEvent(), 0L);
        assertTrue(t.await(0, TimeUnit.NANOSECONDS));
        t.await();
        t.close();
    }

    @Test
    public void emptyListsGiveACompletedTransferOfZeroBytes() throws Exception {
        TokenIndices none = open(TokenIndices.of());
        TokenIndices none2 = open(TokenIndices.of(new int[0]));
        assertEquals(none.size(), 0);
        assertEquals(open(TokenIndices.pages(4)).size(), 0);
        List<byte[]> before =
                List.of(
                        LayoutOracle.canary(device.buffer(), 1),
                        LayoutOracle.canary(host.buffer(), 2));
        assertEmptyTransfer(host.backup(device).deviceIndices(none2).hostIndices(none).submit());
        assertEmptyTransfer(host.load(device, 3).hostIndices(none).deviceIndices(none2).submit());
        assertEmptyTransfer(Kvio.transfer(host.executor(), device, host, none, none2, 0, 0, 4));
        LayoutOracle.assertBytesEqual(
                LayoutOracle.snapshot(device.buffer()), before.get(0), "device");
        LayoutOracle.assertBytesEqual(LayoutOracle.snapshot(host.buffer()), before.get(1), "host");
    }

    @Test
    public void emptyListsStillRefuseWhatIsReallyWrong() {
        TokenIndices none = idx();
        TokenIndices one = idx(0);
        rejected(
                KvioInvalidArgumentException.class,
                () -> host.backup(device).deviceIndices(one).hostIndices(none).submit(),
                new String[0],
                "hostIndices has 0 entries but deviceIndices has 1 entry");
        rejected(
                KvioOutOfRangeException.class,
                () -> host.load(device, 4).hostIndices(none).deviceIndices(none).submit(),
                new String[0],
                "device layer 4");
        rejected(
                KvioOutOfRangeException.class,
                () -> Kvio.transfer(host.executor(), device, host, none, none, 0, 0, 5),
                new String[0],
                "src layer range [0, 5) is outside src (the device pool)'s 4 layers",
                "srcLayerStart + numLayers <= 4");
        try (DeviceKvPool mla =
                DeviceKvPool.allocate(
                        new Config(PoolKind.MLA, 4, 16, 4, 1, 8).spec(KvLayout.LAYER_FIRST),
                        IoBackend.CPU)) {
            rejected(
                    KvioInvalidArgumentException.class,
                    () -> Kvio.transfer(host.executor(), mla, host, none, none, 0, 0, 1),
                    new String[0],
                    "same kind");
        }
        none.close();
        rejected(
                KvioClosedException.class,
                () -> host.load(device, 0).hostIndices(none).deviceIndices(none).submit(),
                new String[0],
                "hostIndices is closed");
    }

    // ---- native names that reach Java only in a race ----

    /**
     * A pool whose native handle is closed after Java's own open check (another thread's close in
     * between, here the native close called directly): the native refusal names the pool as the
     * caller knows it, not by its handle.
     */
    @Test
    public void aPoolClosedNativelyDuringTheSubmitIsNamedNotNumbered() {
        DeviceKvPool d = DEVICE.allocateDevice();
        HostKvPool h = HostKvPool.builder().forDevice(d).build();
        try {
            assertEquals(KvioNative.kvio_pool_close(d.handle()), KvioNative.KVIO_STATUS_OK);
            KvioClosedException e =
                    expectThrows(
                            KvioClosedException.class,
                            () -> h.backup(d).deviceIndices(0).hostIndices(0).submit().await());
            assertEquals(e.getMessage(), "the device pool was closed");
            KvioClosedException load =
                    expectThrows(
                            KvioClosedException.class,
                            () -> h.load(d, 0).hostIndices(0).deviceIndices(0).submit().await());
            assertEquals(load.getMessage(), "the device pool was closed");
        } finally {
            h.close();
            try {
                d.close(); // its native handle is closed already
            } catch (KvioClosedException expected) {
                // the second native close says so
            }
        }
    }
}
