/*
 * One test per rejection path of the public API: each asserts the exception type, message
 * fragments that name the argument, the bad value and what is valid, and that no byte of any open
 * pool changed (every pool is canary-filled before the call and compared whole after it). Covers
 * bad indices, length mismatches, duplicate destinations, layers outside the device, closed
 * objects, unknown names, unsupported and unavailable configurations, and mismatched pools.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.kvio.PoolFixtures.Config;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.Test;

public class RejectionTest extends CpuPoolsFixture {

    /**
     * The buffers of the fixture's device and host pools and of {@code more}: every byte a rejected
     * call must leave as it was.
     */
    private List<ByteBuffer> buffers(KvPool... more) {
        List<ByteBuffer> all = new ArrayList<>(List.of(device.buffer(), host.buffer()));
        for (KvPool pool : more) {
            all.add(pool.buffer());
        }
        return all;
    }

    // ---- indices ----

    @Test
    public void negativeHostIndexOnBackup() {
        TokenIndices h = idx(3, -1, 5);
        TokenIndices d = idx(0, 1, 2);
        KvioOutOfRangeException e =
                assertRejected(
                        KvioOutOfRangeException.class,
                        () -> host.backup(device).deviceIndices(d).hostIndices(h).submit().await(),
                        buffers(),
                        "hostIndices[1] = -1 is out of range",
                        "32 token slots",
                        "valid: 0 to 31");
        assertEquals(e.status(), KvioException.Status.OUT_OF_RANGE);
    }

    @Test
    public void negativeDeviceIndexOnLoad() {
        TokenIndices h = idx(3, 4);
        TokenIndices d = idx(-7, 2);
        assertRejected(
                KvioOutOfRangeException.class,
                () -> host.load(device, 0).hostIndices(h).deviceIndices(d).submit().await(),
                buffers(),
                "deviceIndices[0] = -7 is out of range",
                "64 token slots",
                "valid: 0 to 63");
    }

    @Test
    public void pastTheEndDeviceIndexOnBackup() {
        TokenIndices h = idx(0, 1, 2);
        TokenIndices d = idx(10, 63, 64);
        assertRejected(
                KvioOutOfRangeException.class,
                () -> host.backup(device).deviceIndices(d).hostIndices(h).submit().await(),
                buffers(),
                "deviceIndices[2] = 64 is out of range",
                "64 token slots",
                "valid: 0 to 63");
    }

    @Test
    public void pastTheEndHostIndexOnLoad() {
        TokenIndices h = idx(31, 32);
        TokenIndices d = idx(0, 1);
        assertRejected(
                KvioOutOfRangeException.class,
                () -> host.load(device, 2).hostIndices(h).deviceIndices(d).submit().await(),
                buffers(),
                "hostIndices[1] = 32 is out of range",
                "32 token slots",
                "valid: 0 to 31");
    }

    @Test
    public void lengthMismatch() {
        TokenIndices h = idx(0, 1, 2);
        TokenIndices d = idx(0, 1, 2, 3);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.backup(device).deviceIndices(d).hostIndices(h).submit().await(),
                buffers(),
                "hostIndices has 3 entries",
                "deviceIndices has 4");
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.load(device, 0).hostIndices(h).deviceIndices(d).submit().await(),
                buffers(),
                "hostIndices has 3 entries",
                "deviceIndices has 4");
    }

    @Test
    public void duplicateHostSlotsOnBackup() {
        TokenIndices h = idx(5, 5);
        TokenIndices d = idx(0, 1);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.backup(device).deviceIndices(d).hostIndices(h).submit().await(),
                buffers(),
                "duplicate destination slot 5",
                "[0] and",
                "[1]");
    }

    @Test
    public void duplicateDeviceSlotsOnLoad() {
        TokenIndices h = idx(0, 1, 2, 3);
        TokenIndices d = idx(9, 10, 11, 10);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.load(device, 1).hostIndices(h).deviceIndices(d).submit().await(),
                buffers(),
                "duplicate destination slot 10",
                "[1] and",
                "[3]");
    }

    // ---- layers ----

    @Test
    public void loadOfLayerPastTheDevice() {
        TokenIndices h = idx(0);
        TokenIndices d = idx(0);
        assertRejected(
                KvioOutOfRangeException.class,
                () -> host.load(device, 4).hostIndices(h).deviceIndices(d).submit().await(),
                buffers(),
                "device layer 4",
                "4 layers",
                "valid: 0 to 3");
    }

    @Test
    public void loadOfNegativeLayer() {
        TokenIndices h = idx(0);
        TokenIndices d = idx(0);
        assertRejected(
                KvioOutOfRangeException.class,
                () -> host.load(device, -1).hostIndices(h).deviceIndices(d).submit().await(),
                buffers(),
                "device layer -1",
                "valid: 0 to 3");
    }

    @Test
    public void shardedPoolStillRejectsLayerOutsideTheDevice() {
        HostKvPool sharded = open(PoolFixtures.host(device, KvLayout.LAYER_FIRST, 4, 1, 2));
        TokenIndices h = idx(0);
        TokenIndices d = idx(0);
        assertRejected(
                KvioOutOfRangeException.class,
                () -> sharded.load(device, 4).hostIndices(h).deviceIndices(d).submit().await(),
                buffers(sharded),
                "device layer 4",
                "valid: 0 to 3");
    }

    @Test
    public void layerRangeOutsideDeviceAtBuild() {
        assertRejected(
                KvioOutOfRangeException.class,
                () -> open(PoolFixtures.host(device, KvLayout.PAGE_FIRST, 4, 2, 3)),
                buffers(),
                "[2, 5)",
                "4 layers");
    }

    @Test
    public void negativeLayerStartAtBuild() {
        assertRejected(
                KvioOutOfRangeException.class,
                () -> open(PoolFixtures.host(device, KvLayout.LAYER_FIRST, 4, -1, 2)),
                buffers(),
                "-1");
    }

    // ---- closed objects ----

    @Test
    public void closedHostPool() {
        HostKvPool other = PoolFixtures.host(device, KvLayout.LAYER_FIRST, 4);
        other.close();
        assertTrue(other.isClosed());
        other.close(); // idempotent
        TokenIndices h = idx(0);
        TokenIndices d = idx(0);
        assertRejected(
                KvioClosedException.class,
                () -> other.backup(device).deviceIndices(d).hostIndices(h).submit().await(),
                buffers(),
                "closed");
        assertRejected(
                KvioClosedException.class,
                () -> other.load(device, 0).hostIndices(h).deviceIndices(d).submit().await(),
                buffers(),
                "closed");
    }

    @Test
    public void closedDevicePool() {
        DeviceKvPool other = DEVICE.allocateDevice();
        HostKvPool otherHost = open(PoolFixtures.host(other, KvLayout.PAGE_HEAD, 4));
        other.close();
        assertTrue(other.isClosed());
        TokenIndices h = idx(0);
        TokenIndices d = idx(0);
        List<ByteBuffer> buffers = buffers(otherHost);
        assertRejected(
                KvioClosedException.class,
                () -> otherHost.backup(other).deviceIndices(d).hostIndices(h).submit().await(),
                buffers,
                "closed");
        assertRejected(
                KvioClosedException.class,
                () -> otherHost.load(other, 0).hostIndices(h).deviceIndices(d).submit().await(),
                buffers,
                "closed");
    }

    @Test
    public void closedTokenIndices() {
        TokenIndices h = TokenIndices.of(0L, 1L);
        h.close();
        TokenIndices d = idx(0, 1);
        assertRejected(
                KvioClosedException.class,
                () -> host.backup(device).deviceIndices(d).hostIndices(h).submit().await(),
                buffers(),
                "closed");
        assertRejected(
                KvioClosedException.class,
                () -> host.load(device, 0).hostIndices(d).deviceIndices(h).submit().await(),
                buffers(),
                "closed");
    }

    @Test
    public void closedExecutor() {
        KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, 1);
        executor.close();
        HostKvPool other = open(PoolFixtures.host(device, KvLayout.LAYER_FIRST, 4));
        TokenIndices s = idx(0);
        TokenIndices d = idx(1);
        assertRejected(
                KvioClosedException.class,
                () -> Kvio.transfer(executor, host, other, s, d, 0, 0, 1).await(),
                buffers(other),
                "closed");
    }

    /** A host pool whose executor was closed under it says whose executor it is. */
    @Test
    public void hostPoolWhoseExecutorWasClosed() {
        KvioExecutor given = KvioExecutor.create(IoBackend.CPU, 1);
        HostKvPool withGiven =
                open(
                        HostKvPool.builder()
                                .forDevice(device)
                                .layout(KvLayout.PAGE_FIRST)
                                .pages(4)
                                .executor(given)
                                .build());
        given.close();
        assertRejected(
                KvioClosedException.class,
                () -> withGiven.backup(device).deviceIndices(3).hostIndices(0).submit(),
                buffers(withGiven),
                "this host pool's cpu executor was closed while the pool is open",
                "keep the executor given to HostKvPool.Builder.executor(...) open");
        HostKvPool owning = open(PoolFixtures.host(device, KvLayout.PAGE_FIRST, 4));
        owning.executor().close();
        assertRejected(
                KvioClosedException.class,
                () -> owning.load(device, 1).hostIndices(0).deviceIndices(3).submit(),
                buffers(owning),
                "this host pool's cpu executor was closed",
                "through executor().close()");
    }

    // ---- names ----

    @Test
    public void misspelledIoBackendSuggestsNearest() {
        assertRejected(
                KvioInvalidArgumentException.class,
                () ->
                        open(
                                HostKvPool.builder()
                                        .forDevice(device)
                                        .layout(KvLayout.LAYER_FIRST)
                                        .ioBackend("kernel_ascned")
                                        .pages(4)
                                        .build()),
                buffers(),
                "'kernel_ascned'",
                "cpu, kernel, direct, kernel_ascend",
                "did you mean 'kernel_ascend'?");
        KvioInvalidArgumentException e =
                expectThrows(
                        KvioInvalidArgumentException.class, () -> IoBackend.parse("kernel_ascned"));
        assertMessage(e, "did you mean 'kernel_ascend'?");
    }

    @Test
    public void ioBackendNoneListsValidValues() {
        KvioInvalidArgumentException e =
                assertRejected(
                        KvioInvalidArgumentException.class,
                        () ->
                                open(
                                        HostKvPool.builder()
                                                .forDevice(device)
                                                .layout(KvLayout.LAYER_FIRST)
                                                .ioBackend("None")
                                                .pages(4)
                                                .build()),
                        buffers(),
                        "'None'",
                        "cpu, kernel, direct, kernel_ascend");
        assertFalse(e.getMessage().contains("did you mean"), e.getMessage());
    }

    @Test
    public void emptyIoBackendListsValidValues() {
        KvioInvalidArgumentException e =
                assertRejected(
                        KvioInvalidArgumentException.class,
                        () ->
                                open(
                                        HostKvPool.builder()
                                                .forDevice(device)
                                                .layout(KvLayout.LAYER_FIRST)
                                                .ioBackend("")
                                                .pages(4)
                                                .build()),
                        buffers(),
                        "''",
                        "cpu, kernel, direct, kernel_ascend");
        assertFalse(e.getMessage().contains("did you mean"), e.getMessage());
    }

    @Test
    public void unknownLayoutString() {
        assertRejected(
                KvioInvalidArgumentException.class,
                () ->
                        open(
                                HostKvPool.builder()
                                        .forDevice(device)
                                        .layout("page_frist")
                                        .ioBackend(IoBackend.CPU)
                                        .pages(4)
                                        .build()),
                buffers(),
                "'page_frist'",
                "layer_first, page_first, page_first_direct, page_head",
                "did you mean 'page_first'?");
        assertMessage(
                expectThrows(KvioInvalidArgumentException.class, () -> KvLayout.parse("nope")),
                "'nope'",
                "layer_first, page_first, page_first_direct, page_head");
    }

    @Test
    public void unknownPoolKindString() {
        assertMessage(
                expectThrows(KvioInvalidArgumentException.class, () -> PoolKind.parse("mlaa")),
                "'mlaa'",
                "mha, mla",
                "did you mean 'mla'?");
    }

    // ---- support rules ----

    @Test
    public void mlaWithPageHeadAtBuild() {
        DeviceKvPool mla = open(new Config(PoolKind.MLA, 2, 4, 4, 1, 64).allocateDevice());
        KvioUnsupportedException e =
                assertRejected(
                        KvioUnsupportedException.class,
                        () ->
                                open(
                                        HostKvPool.builder()
                                                .forDevice(mla)
                                                .layout(KvLayout.PAGE_HEAD)
                                                .ioBackend(IoBackend.CPU)
                                                .pages(4)
                                                .build()),
                        buffers(mla),
                        "page_head",
                        "mla",
                        "layer_first, page_first, page_first_direct");
        assertEquals(e.status(), KvioException.Status.UNSUPPORTED);
    }

    /** A host pool configured from plain geometry (no device pool yet), io backend "kernel". */
    @Test
    public void unavailableBackendAtBuild() {
        if (IoBackend.KERNEL.isAvailable()) {
            throw new org.testng.SkipException("CUDA is present on this machine");
        }
        KvioUnavailableException e =
                assertRejected(
                        KvioUnavailableException.class,
                        () ->
                                open(
                                        HostKvPool.builder()
                                                .kind(PoolKind.MHA)
                                                .layout(KvLayout.PAGE_FIRST_DIRECT)
                                                .ioBackend("kernel")
                                                .pageSize(4)
                                                .heads(2)
                                                .headBytes(8)
                                                .deviceLayers(4)
                                                .pages(4)
                                                .build()),
                        buffers(),
                        "io backend 'kernel' is not available",
                        "Available here: cpu");
        // the cause itself is checked by
        // BackendAvailabilityTest.checkSupportGivesTheRequestedBackendsCause
        assertEquals(e.status(), KvioException.Status.UNAVAILABLE);
    }

    /**
     * A cpu device pool with a host pool asked to use another io backend: rejected at build() with
     * the backend to use, as KvioUnsupportedException (native UNSUPPORTED), the type a transfer
     * between such pools throws. (On a machine without CUDA this is what "--io-backend kernel" with
     * a cpu device pool reports, before availability.)
     */
    @Test
    public void deviceOnAnotherBackendAtBuild() {
        assertRejected(
                KvioUnsupportedException.class,
                () ->
                        open(
                                HostKvPool.builder()
                                        .forDevice(device)
                                        .layout(KvLayout.PAGE_FIRST_DIRECT)
                                        .ioBackend("kernel")
                                        .pages(4)
                                        .build()),
                buffers(),
                "device pool lives on io backend 'cpu'",
                "'kernel'",
                "ioBackend(\"cpu\")");
    }

    @Test
    public void unavailableBackendsAtAllocate() {
        for (IoBackend b :
                new IoBackend[] {IoBackend.KERNEL, IoBackend.DIRECT, IoBackend.KERNEL_ASCEND}) {
            assertRejected(
                    KvioUnavailableException.class,
                    () -> open(DeviceKvPool.allocate(DEVICE.spec(KvLayout.LAYER_FIRST), b)),
                    buffers(),
                    b.userName(),
                    b == IoBackend.KERNEL_ASCEND ? "Ascend" : "CUDA");
        }
    }

    @Test
    public void checkSupportRejectsMlaPageHead() {
        KvioUnsupportedException e =
                expectThrows(
                        KvioUnsupportedException.class,
                        () ->
                                Kvio.checkSupport(
                                        PoolKind.MLA,
                                        KvLayout.PAGE_HEAD,
                                        IoBackend.CPU,
                                        Granularity.PER_LAYER,
                                        1,
                                        576,
                                        64,
                                        4,
                                        4,
                                        0));
        assertMessage(e, "page_head", "mla");
    }

    /** Kvio.checkSupport of an mha page_first host pool (2 heads x 128 B) on cpu. */
    private static void checkMhaPageFirst(
            long pageSize, long hostLayers, long deviceLayers, long deviceLayerStart) {
        Kvio.checkSupport(
                PoolKind.MHA,
                KvLayout.PAGE_FIRST,
                IoBackend.CPU,
                Granularity.ALL_LAYER,
                2,
                128,
                pageSize,
                hostLayers,
                deviceLayers,
                deviceLayerStart);
    }

    @Test
    public void checkSupportRejectsLayerRangeOutsideDevice() {
        assertMessage(
                expectThrows(KvioOutOfRangeException.class, () -> checkMhaPageFirst(16, 3, 4, 2)),
                "[2, 5)",
                "4 layers");
    }

    /** Its messages name its parameters, not kvio_support_query's fields. */
    @Test
    public void checkSupportNamesItsParameters() {
        KvioInvalidArgumentException pageSize =
                expectThrows(
                        KvioInvalidArgumentException.class, () -> checkMhaPageFirst(0, 3, 4, 0));
        assertMessage(pageSize, "pageSize must be at least 1");
        KvioOutOfRangeException start =
                expectThrows(KvioOutOfRangeException.class, () -> checkMhaPageFirst(16, 1, 4, 5));
        assertMessage(start, "deviceLayerStart 5 + hostLayers 1 > deviceLayers 4");
        for (KvioException e : new KvioException[] {pageSize, start}) {
            for (String field : new String[] {"page_size", "_num_layers", "layer_start"}) {
                assertFalse(e.getMessage().contains(field), e.getMessage());
            }
        }
    }

    // ---- mismatched pools ----

    @Test
    public void rowGeometryMismatchInGeneralTransfer() {
        DeviceKvPool wide = open(new Config(PoolKind.MHA, 4, 16, 4, 2, 16).allocateDevice());
        HostKvPool wideHost = open(PoolFixtures.host(wide, KvLayout.PAGE_FIRST, 4));
        KvioExecutor executor = open(KvioExecutor.create(IoBackend.CPU, 1));
        TokenIndices s = idx(0, 1);
        TokenIndices d = idx(2, 3);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> Kvio.transfer(executor, host, wideHost, s, d, 0, 0, 1).await(),
                buffers(wide, wideHost),
                "row geometry differs",
                "src (the host pool)'s rows are 2 heads x 8 bytes",
                "dst (the host pool)'s rows are 2 heads x 16 bytes",
                "same heads and headBytes");
    }

    @Test
    public void kindMismatchInGeneralTransfer() {
        DeviceKvPool mla = open(new Config(PoolKind.MLA, 4, 16, 4, 1, 16).allocateDevice());
        KvioExecutor executor = open(KvioExecutor.create(IoBackend.CPU, 1));
        TokenIndices s = idx(0);
        TokenIndices d = idx(0);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> Kvio.transfer(executor, device, mla, s, d, 0, 0, 1).await(),
                buffers(mla),
                "mha",
                "mla");
    }

    @Test
    public void backupFromADeviceOfAnotherGeometry() {
        DeviceKvPool wide = open(new Config(PoolKind.MHA, 4, 16, 4, 2, 16).allocateDevice());
        TokenIndices h = idx(0);
        TokenIndices d = idx(0);
        List<ByteBuffer> buffers = buffers(wide);
        KvioException e =
                assertRejected(
                        KvioException.class,
                        () -> host.backup(wide).deviceIndices(d).hostIndices(h).submit().await(),
                        buffers);
        assertTrue(e instanceof KvioInvalidArgumentException, "type: " + e);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> host.load(wide, 0).hostIndices(h).deviceIndices(d).submit().await(),
                buffers);
    }

    @Test
    public void layerRangeOutsideEitherPoolInGeneralTransfer() {
        HostKvPool other = open(PoolFixtures.host(device, KvLayout.PAGE_FIRST_DIRECT, 4));
        KvioExecutor executor = open(KvioExecutor.create(IoBackend.CPU, 1));
        TokenIndices s = idx(0);
        TokenIndices d = idx(0);
        List<ByteBuffer> buffers = buffers(other);
        assertRejected(
                KvioOutOfRangeException.class,
                () -> Kvio.transfer(executor, host, other, s, d, 2, 0, 3).await(),
                buffers,
                "[2, 5)",
                "4 layers");
        assertRejected(
                KvioOutOfRangeException.class,
                () -> Kvio.transfer(executor, host, other, s, d, 0, 3, 2).await(),
                buffers,
                "[3, 5)",
                "4 layers");
    }

    @Test
    public void overlappingSourceAndDestinationInOnePool() {
        KvioExecutor executor = open(KvioExecutor.create(IoBackend.CPU, 1));
        TokenIndices s = idx(0, 1, 2);
        TokenIndices d = idx(2, 3, 4);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> Kvio.transfer(executor, host, host, s, d, 0, 0, 4).await(),
                buffers(),
                "overlap",
                "slot 2");
    }

    @Test
    public void twoPoolsOverTheSameMemory() {
        // a second handle over the device pool's memory: kvio cannot check slots across two
        // pools, so it refuses the transfer whatever the indices
        DeviceKvPool alias =
                open(
                        DeviceKvPool.wrap(
                                device.spec(),
                                device.regionAddress(0),
                                device.regionBytes(0),
                                IoBackend.CPU));
        KvioExecutor executor = open(KvioExecutor.create(IoBackend.CPU, 1));
        TokenIndices s = idx(0);
        TokenIndices d = idx(1);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> Kvio.transfer(executor, device, alias, s, d, 0, 0, 1).await(),
                buffers(),
                "the source and destination pools share memory",
                "use one pool for both sides");
        // "whatever the indices": empty lists too (they were checked in Java for the pools'
        // kinds and rows only, and such a transfer completed)
        TokenIndices none = idx();
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> Kvio.transfer(executor, device, alias, none, none, 0, 0, 1).await(),
                buffers(),
                "the source and destination pools share memory");
    }

    // ---- empty and malformed requests ----

    @Test
    public void emptyIndexListsOfDifferentPoolKinds() {
        // Empty lists complete at once (CallerMessagesTest), but mismatched pools are refused.
        HostKvPool mla =
                open(
                        HostKvPool.builder()
                                .kind(PoolKind.MLA)
                                .deviceLayers(4)
                                .pages(4)
                                .pageSize(4)
                                .heads(1)
                                .headBytes(8)
                                .threads(1)
                                .build());
        TokenIndices h = idx();
        TokenIndices d = idx();
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> Kvio.transfer(mla.executor(), device, mla, d, h, 0, 0, 1),
                buffers(mla),
                "src (the device pool) is mha and dst (the host pool) is mla",
                "both must be the same kind");
    }

    @Test
    public void zeroLayersInGeneralTransfer() {
        HostKvPool other = open(PoolFixtures.host(device, KvLayout.PAGE_HEAD, 4));
        KvioExecutor executor = open(KvioExecutor.create(IoBackend.CPU, 1));
        TokenIndices s = idx(0);
        TokenIndices d = idx(0);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> Kvio.transfer(executor, host, other, s, d, 0, 0, 0).await(),
                buffers(other),
                "numLayers must be at least 1, got 0");
    }

    @Test
    public void negativePageIdInPageList() {
        assertMessage(
                expectThrows(KvioOutOfRangeException.class, () -> TokenIndices.pages(4, 1, -2)),
                "page id -2");
        // page * pageSize wrapped: 2^62 * 4 is 0 in 64 bits, which listed page 0's slots
        assertMessage(
                expectThrows(
                        KvioOutOfRangeException.class, () -> TokenIndices.pages(4, 1, 1L << 62)),
                "page id 4611686018427387904 is too large");
        try (TokenIndices last = TokenIndices.pages(2, Long.MAX_VALUE / 2)) {
            assertEquals(last.get(0), Long.MAX_VALUE - 1);
            assertEquals(last.get(1), Long.MAX_VALUE);
        }
        assertMessage(
                expectThrows(KvioInvalidArgumentException.class, () -> TokenIndices.pages(0, 1)),
                "pageSize must be at least 1, got 0");
    }

    @Test
    public void invalidPoolSpec() {
        assertMessage(
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () ->
                                PoolSpec.builder()
                                        .kind(PoolKind.MHA)
                                        .layout(KvLayout.PAGE_FIRST)
                                        .layers(2)
                                        .pages(0)
                                        .pageSize(4)
                                        .heads(1)
                                        .headBytes(8)
                                        .build()),
                "pages must be at least 1, got 0");
        assertMessage(
                expectThrows(
                        KvioUnsupportedException.class,
                        () ->
                                PoolSpec.builder()
                                        .kind(PoolKind.MLA)
                                        .layout(KvLayout.PAGE_HEAD)
                                        .layers(2)
                                        .pages(2)
                                        .pageSize(4)
                                        .heads(1)
                                        .headBytes(8)
                                        .build()),
                "page_head",
                "mla");
    }

    @Test
    public void wrapTooSmallRegion() {
        DeviceKvPool backing = open(ConformanceMatrixTest.DeviceUnderTest.allocateBacking(4096));
        PoolSpec spec = DEVICE.spec(KvLayout.LAYER_FIRST); // needs 2 x 4*64*16 = 8192 bytes
        List<ByteBuffer> buffers = buffers(backing);
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> open(DeviceKvPool.wrap(spec, backing.regionAddress(0), 4096, IoBackend.CPU)),
                buffers,
                "sizeBytes 4096 is too small",
                "8192");
        assertRejected(
                KvioInvalidArgumentException.class,
                () ->
                        open(
                                DeviceKvPool.wrapComponents(
                                        spec,
                                        new long[] {
                                            backing.regionAddress(0),
                                            backing.regionAddress(0) + 2048
                                        },
                                        2048,
                                        IoBackend.CPU)),
                buffers,
                "bytesEach 2048 is too small",
                "4096");
        assertRejected(
                KvioInvalidArgumentException.class,
                () ->
                        open(
                                DeviceKvPool.wrapComponents(
                                        spec,
                                        new long[] {backing.regionAddress(0)},
                                        4096,
                                        IoBackend.CPU)),
                buffers,
                "componentAddresses.length is 1 but a mha pool has 2 components");
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> open(DeviceKvPool.wrap(spec, 0, 8192, IoBackend.CPU)),
                buffers,
                "address is 0");
    }

    @Test
    public void wrapLayerTableOfWrongLengthOrLayout() {
        DeviceKvPool backing = open(ConformanceMatrixTest.DeviceUnderTest.allocateBacking(8192));
        long base = backing.regionAddress(0);
        long[] table = new long[8]; // 2 components x 4 layers, 1024 bytes each
        for (int i = 0; i < table.length; i++) table[i] = base + i * 1024L;
        List<ByteBuffer> buffers = buffers(backing);
        assertRejected(
                KvioInvalidArgumentException.class,
                () ->
                        open(
                                DeviceKvPool.wrapLayers(
                                        DEVICE.spec(KvLayout.LAYER_FIRST),
                                        java.util.Arrays.copyOf(table, 7),
                                        1024,
                                        IoBackend.CPU)),
                buffers,
                "layerAddresses.length is 7",
                "2 components x 4 layers = 8");
        assertRejected(
                KvioUnsupportedException.class,
                () ->
                        open(
                                DeviceKvPool.wrapLayers(
                                        DEVICE.spec(KvLayout.PAGE_FIRST),
                                        table,
                                        1024,
                                        IoBackend.CPU)),
                buffers,
                "layer_first",
                "page_first");
        assertRejected(
                KvioInvalidArgumentException.class,
                () ->
                        open(
                                DeviceKvPool.wrapLayers(
                                        DEVICE.spec(KvLayout.LAYER_FIRST),
                                        table,
                                        1000,
                                        IoBackend.CPU)),
                buffers,
                "bytesEach 1000 is too small",
                "1024");
    }

    @Test
    public void regionAndSliceOutOfRange() {
        assertMessage(
                expectThrows(KvioOutOfRangeException.class, () -> device.regionAddress(1)),
                "region 1",
                "valid: 0 to 0");
        long bytes = device.regionBytes(0);
        assertMessage(
                expectThrows(KvioOutOfRangeException.class, () -> device.slice(0, bytes - 8, 16)),
                "slice",
                String.valueOf(bytes));
        assertEquals(device.slice(0, bytes - 16, 16).capacity(), 16);
        assertMessage(
                expectThrows(KvioOutOfRangeException.class, () -> device.slice(0, -1, 8)),
                "slice [-1");
    }

    /** A negative length is a size no call accepts (package-info): invalid, not out of range. */
    @Test
    public void sliceOfNegativeLengthIsAnInvalidArgument() {
        for (long offset : new long[] {0, 8, device.regionBytes(0)}) {
            assertMessage(
                    expectThrows(
                            KvioInvalidArgumentException.class, () -> device.slice(0, offset, -1)),
                    "length must be at least 0, got -1");
        }
        expectThrows(
                KvioInvalidArgumentException.class, () -> device.slice(0, 0, Integer.MIN_VALUE));
        assertEquals(device.slice(0, 8, 0).capacity(), 0);
    }

    @Test
    public void closedPoolRejectsBufferAccess() {
        DeviceKvPool other = DEVICE.allocateDevice();
        other.close();
        assertMessage(expectThrows(KvioClosedException.class, other::buffer), "closed");
        assertMessage(
                expectThrows(KvioClosedException.class, () -> other.regionAddress(0)), "closed");
    }

    @Test
    public void buildForClosedDevice() {
        DeviceKvPool other = DEVICE.allocateDevice();
        other.close();
        assertRejected(
                KvioClosedException.class,
                () -> open(PoolFixtures.host(other, KvLayout.PAGE_FIRST, 4)),
                buffers(),
                "closed");
    }

    @Test
    public void tooManyExecutorThreads() {
        assertRejected(
                KvioInvalidArgumentException.class,
                () -> open(KvioExecutor.create(IoBackend.CPU, 2000)),
                buffers(),
                "threads must be 1 to 1024",
                "<= 0 for one per online core",
                "got 2000");
    }
}
