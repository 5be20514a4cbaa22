/*
 * HostKvPool.Builder's configuration checks against its device pool, at build(): a kind, heads or
 * head bytes other than the device pool's is refused there (not at the first transfer); set
 * counts are checked as given (a negative one is never "unset"); layer ranges name layerRange
 * and the valid starts; and the device pool's memory, not the backend that allocated it, decides
 * whether the host pool's io backend moves it (cpu and auto without a GPU both move host memory;
 * memory it cannot move is refused as KvioUnsupportedException, as a transfer would be); a host
 * pool over the device pool's own memory is refused too.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.LongStream;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

public class HostPoolConfigurationTest {
    private static final long LAYERS = 4;
    private static final long PAGES = 8;
    private static final long PAGE_SIZE = 4;
    private static final long HEADS = 2;
    private static final long HEAD_BYTES = 16;

    private final List<AutoCloseable> opened = new ArrayList<>();

    private <T extends AutoCloseable> T open(T t) {
        opened.add(t);
        return t;
    }

    @AfterMethod(alwaysRun = true)
    public void closeAll() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        opened.clear();
    }

    private static PoolSpec spec(PoolKind kind, KvLayout layout) {
        return PoolSpec.builder()
                .kind(kind)
                .layout(layout)
                .layers(LAYERS)
                .pages(PAGES)
                .pageSize(PAGE_SIZE)
                .heads(kind == PoolKind.MHA ? HEADS : 1)
                .headBytes(HEAD_BYTES)
                .build();
    }

    private DeviceKvPool device(IoBackend backend) {
        return open(DeviceKvPool.allocate(spec(PoolKind.MHA, KvLayout.LAYER_FIRST), backend));
    }

    private static void assertMessage(Throwable e, String... parts) {
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), "'" + p + "' in: " + e.getMessage());
        }
    }

    /** build() of {@code builder} throws {@code type}, with {@code parts} in its message. */
    private <T extends Throwable> T assertBuildRefused(
            Class<T> type, HostKvPool.Builder builder, String... parts) {
        T e = expectThrows(type, () -> open(builder.build()));
        assertMessage(e, parts);
        return e;
    }

    // ---- 1: kind, heads and head bytes must be the device pool's ----

    @Test
    public void kindOtherThanTheDevicePoolsIsRefusedAtBuild() {
        DeviceKvPool mha = device(IoBackend.CPU);
        for (HostKvPool.Builder b :
                List.of(
                        HostKvPool.builder().forDevice(mha).kind(PoolKind.MLA),
                        HostKvPool.builder().kind(PoolKind.MLA).forDevice(mha))) {
            KvioInvalidArgumentException e =
                    expectThrows(KvioInvalidArgumentException.class, () -> open(b.build()));
            assertMessage(e, "kind(PoolKind.MLA)", "device pool's kind mha", "kind(PoolKind.MHA)");
        }
    }

    @Test
    public void headsOrHeadBytesOtherThanTheDevicePoolsAreRefusedAtBuild() {
        DeviceKvPool mha = device(IoBackend.CPU);
        assertBuildRefused(
                KvioInvalidArgumentException.class,
                HostKvPool.builder().forDevice(mha).heads(4),
                "heads(4)",
                "device pool's 2 heads",
                "valid: heads(2)");
        assertBuildRefused(
                KvioInvalidArgumentException.class,
                HostKvPool.builder().headBytes(32).forDevice(mha),
                "headBytes(32)",
                "device pool's 16 bytes per head",
                "valid: headBytes(16)");
    }

    /** The device pool's own values, set explicitly, and another page size are accepted. */
    @Test
    public void sameGeometryAndAnotherPageSizeBuildAndMove() {
        DeviceKvPool mha = device(IoBackend.CPU);
        HostKvPool host =
                open(
                        HostKvPool.builder()
                                .forDevice(mha)
                                .kind(PoolKind.MHA)
                                .heads(HEADS)
                                .headBytes(HEAD_BYTES)
                                .pageSize(2)
                                .pages(PAGES * 2)
                                .layout(KvLayout.LAYER_FIRST)
                                .build());
        assertEquals(host.spec().pageSize(), 2);
        // same token count and layer_first on both sides: identity slots copy every byte
        assertRoundTrip(mha, host);
    }

    /**
     * Without pages(n) a host pool holds the device pool's tokens (8 pages of 4 = 32 tokens):
     * ceil(32 / host page size) pages, not the device pool's 8 pages, whatever the host page size.
     */
    @Test
    public void defaultCapacityIsTheDevicePoolsTokensInHostPages() {
        DeviceKvPool mha = device(IoBackend.CPU);
        long[][] pageSizeAndPages = {{4, 8}, {2, 16}, {1, 32}, {8, 4}, {5, 7}, {3, 11}, {64, 1}};
        for (long[] c : pageSizeAndPages) {
            HostKvPool host = open(HostKvPool.builder().forDevice(mha).pageSize(c[0]).build());
            assertEquals(host.spec().pageSize(), c[0]);
            assertEquals(host.spec().numPages(), c[1], "pages of " + c[0] + " tokens");
            assertTrue(host.spec().tokens() >= PAGES * PAGE_SIZE, "holds every device token");
            assertTrue(host.spec().tokens() - c[0] < PAGES * PAGE_SIZE, "no whole page to spare");
        }
        // pages(n) still wins
        HostKvPool set = open(HostKvPool.builder().forDevice(mha).pageSize(2).pages(3).build());
        assertEquals(set.spec().numPages(), 3);
        // every device slot has a host slot: identity slots move every byte, page size 2
        HostKvPool half = open(HostKvPool.builder().forDevice(mha).pageSize(2).build());
        assertRoundTrip(mha, half);
    }

    /**
     * spec() and requiredBytes() say what build() makes, and allocate nothing: the built pool's
     * spec is equal, and its regions (checked against the layout's own arithmetic, rows x tokens x
     * layers per component) add up to requiredBytes(); a buffer of exactly that many bytes can be
     * wrapped, one byte less cannot.
     */
    @Test
    public void specAndRequiredBytesDescribeWhatBuildMakes() {
        DeviceKvPool mha = device(IoBackend.CPU);
        HostKvPool.Builder b =
                HostKvPool.builder()
                        .forDevice(mha)
                        .layout(KvLayout.PAGE_FIRST)
                        .pageSize(3)
                        .layerRange(1, 2);
        long[] before = NativeCounts.settle(); // pools, executors, transfers, host allocations
        PoolSpec planned = b.spec();
        long required = b.requiredBytes();
        long[] after = NativeBridge.debugLiveObjects();
        assertEquals(after[0], before[0], "spec()/requiredBytes() open no pool");
        assertEquals(after[1], before[1], "nor an executor");
        assertEquals(after[3], before[3], "nor allocate host memory");
        long tokens = 11 * 3; // ceil(32 / 3) pages of 3
        long expected = 2 /* K, V */ * 2 /* layers */ * tokens * HEADS * HEAD_BYTES;
        assertEquals(required, expected);
        assertEquals(planned.numPages(), 11);
        assertEquals(planned.numLayers(), 2);
        HostKvPool built = open(b.build());
        assertEquals(built.spec(), planned);
        long regions = 0;
        for (int r = 0; r < built.regionCount(); r++) {
            regions += built.regionBytes(r);
        }
        assertEquals(regions, required, "the built pool's regions");
        HostKvPool wrapped = open(b.wrap(ByteBuffer.allocateDirect((int) required)).build());
        assertEquals(wrapped.spec(), planned);
        assertBuildRefused(
                KvioInvalidArgumentException.class,
                b.wrap(ByteBuffer.allocateDirect((int) required - 1)),
                "too small");
        // the same refusals as build(), named as build() names them
        KvioInvalidArgumentException e =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () -> HostKvPool.builder().forDevice(mha).heads(4).requiredBytes());
        assertMessage(e, "heads(4)", "valid: heads(2)");
        expectThrows(
                KvioInvalidArgumentException.class,
                () -> HostKvPool.builder().kind(PoolKind.MLA).spec());
    }

    /**
     * Builder.copy() (Segments.wrapHostPool configures a copy, leaving the caller's builder as it
     * was) copies every field, so a field added later cannot be forgotten: each field of a builder
     * with every setting made is equal in the copy, the geometry in a PoolSpec.Builder of its own;
     * configuring the copy leaves the original.
     */
    @Test
    public void builderCopyCopiesEveryFieldAndSharesNoBuilder() throws Exception {
        DeviceKvPool mha = device(IoBackend.CPU);
        KvioExecutor executor = open(KvioExecutor.create(IoBackend.CPU, 1));
        HostKvPool.Builder b =
                HostKvPool.builder()
                        .forDevice(mha)
                        .layout(KvLayout.PAGE_HEAD)
                        .pageSize(2)
                        .pages(5)
                        .layerRange(1, 2)
                        .strictLayers()
                        .executor(executor)
                        .ioBackend(IoBackend.CPU)
                        .wrap(ByteBuffer.allocateDirect(4096));
        HostKvPool.Builder c = b.copy();
        for (java.lang.reflect.Field f : HostKvPool.Builder.class.getDeclaredFields()) {
            if (java.lang.reflect.Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            f.setAccessible(true);
            if (f.getType() == PoolSpec.Builder.class) {
                assertTrue(f.get(b) != f.get(c), f.getName() + " is a builder of its own");
                for (java.lang.reflect.Field g : PoolSpec.Builder.class.getDeclaredFields()) {
                    if (!java.lang.reflect.Modifier.isStatic(g.getModifiers())) {
                        g.setAccessible(true);
                        assertEquals(g.get(f.get(c)), g.get(f.get(b)), "spec." + g.getName());
                    }
                }
            } else {
                assertEquals(f.get(c), f.get(b), f.getName());
            }
        }
        c.pageSize(4).pages(9).layout(KvLayout.LAYER_FIRST);
        assertEquals(b.spec().pageSize(), 2, "the original keeps its page size");
        assertEquals(b.spec().numPages(), 5);
        assertEquals(b.spec().layout(), KvLayout.PAGE_HEAD);
    }

    /**
     * forDevice sets deviceLayers to the device pool's layers: another deviceLayers(n), in either
     * order, is refused at build() (it would check layerRange against the wrong count, and only the
     * first transfer would fail); the device pool's own count is accepted.
     */
    @Test
    public void deviceLayersOtherThanTheDevicePoolsAreRefusedAtBuild() {
        DeviceKvPool d = device(IoBackend.CPU);
        for (HostKvPool.Builder b :
                List.of(
                        HostKvPool.builder().forDevice(d).deviceLayers(8).layerRange(2, 6),
                        HostKvPool.builder().deviceLayers(8).forDevice(d).layerRange(2, 6))) {
            assertBuildRefused(
                    KvioInvalidArgumentException.class,
                    b,
                    "deviceLayers(8)",
                    "device pool's 4 layers",
                    "forDevice sets deviceLayers",
                    "valid: deviceLayers(4)");
        }
        HostKvPool same =
                open(
                        HostKvPool.builder()
                                .deviceLayers(LAYERS)
                                .forDevice(d)
                                .layerRange(2, 2)
                                .build());
        assertEquals(same.deviceLayers(), LAYERS);
    }

    // ---- 2: negative counts are refused, never taken as "not set" ----

    @Test
    public void negativeLayerCountIsRefused() {
        DeviceKvPool d = device(IoBackend.CPU);
        assertBuildRefused(
                KvioInvalidArgumentException.class,
                HostKvPool.builder().forDevice(d).layerRange(0, -7),
                "layerRange(0, -7)",
                "numLayers must be at least 1, got -7",
                "valid numLayers from deviceLayerStart 0: 1 to 4");
        assertBuildRefused(
                KvioInvalidArgumentException.class,
                HostKvPool.builder().forDevice(d).layerRange(1, -3),
                "layerRange(1, -3)",
                "got -3",
                "1 to 3");
        assertBuildRefused(
                KvioOutOfRangeException.class,
                HostKvPool.builder().forDevice(d).layerRange(-1, 2),
                "layerRange(-1, 2)",
                "deviceLayerStart -1 is negative",
                "valid deviceLayerStart: 0 to 3");
    }

    @Test
    public void negativePagesAreRefusedWithOrWithoutADevicePool() {
        DeviceKvPool d = device(IoBackend.CPU);
        KvioInvalidArgumentException withDevice =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () -> open(HostKvPool.builder().forDevice(d).pages(-5).build()));
        assertMessage(withDevice, "pages must be at least 1, got -5", "pages(n)");
        KvioInvalidArgumentException without =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () ->
                                open(
                                        HostKvPool.builder()
                                                .deviceLayers(LAYERS)
                                                .pageSize(PAGE_SIZE)
                                                .heads(HEADS)
                                                .headBytes(HEAD_BYTES)
                                                .pages(-5)
                                                .build()));
        assertMessage(without, "pages must be at least 1, got -5");
        assertFalse(without.getMessage().contains("not set"), without.getMessage());
        assertBuildRefused(
                KvioInvalidArgumentException.class,
                HostKvPool.builder().deviceLayers(-3).pages(2),
                "deviceLayers is -3",
                "at least 1");
    }

    // ---- 4, 6: layer ranges name layerRange and the valid starts ----

    @Test
    public void startPastTheDeviceLayersNamesLayerRange() {
        DeviceKvPool d = device(IoBackend.CPU);
        KvioOutOfRangeException e =
                expectThrows(
                        KvioOutOfRangeException.class,
                        () -> open(HostKvPool.builder().forDevice(d).layerRange(5, -1).build()));
        assertMessage(
                e,
                "layerRange(5, -1)",
                "deviceLayerStart 5 is past the device pool's 4 layers",
                "valid deviceLayerStart: 0 to 3");
        assertFalse(e.getMessage().contains("layers(n)"), e.getMessage());
        assertBuildRefused(
                KvioOutOfRangeException.class,
                HostKvPool.builder().forDevice(d).layerRange(3, 2),
                "layerRange(3, 2)",
                "pass the device pool's 4 layers",
                "valid numLayers from deviceLayerStart 3: 1 to 1",
                "for 2 layers, deviceLayerStart 0 to 2");
        // the last valid start builds
        assertEquals(
                open(HostKvPool.builder().forDevice(d).layerRange(2, 2).build()).deviceLayerStart(),
                2);
    }

    // ---- 5: the device pool's layer count has kvio's bound (the native rule, in Java names) ----

    @Test
    public void deviceLayersBeyondKviosBoundAreRefused() {
        KvioInvalidArgumentException e =
                expectThrows(
                        KvioInvalidArgumentException.class,
                        () ->
                                open(
                                        HostKvPool.builder()
                                                .deviceLayers(1L << 40)
                                                .layerRange(0, 2)
                                                .pages(2)
                                                .pageSize(PAGE_SIZE)
                                                .heads(HEADS)
                                                .headBytes(HEAD_BYTES)
                                                .build()));
        assertMessage(
                e, "deviceLayers", "1099511627776 is more than kvio supports", "1 to 1048576");
        assertFalse(e.getMessage().contains("device_num_layers"), e.getMessage());
    }

    // ---- 3: the device pool's memory decides, not the backend that allocated it ----

    /**
     * auto without a GPU allocates device pools in host memory, as cpu does, and runs the cpu
     * backend: a host pool of either backend moves the other's device pool. With a GPU, an auto
     * device pool is CUDA memory, which a cpu host pool cannot move: refused at build().
     */
    @Test
    public void cpuAndAutoMixWhereBothMoveHostMemory() {
        DeviceKvPool auto = device(IoBackend.AUTO);
        DeviceKvPool cpu = device(IoBackend.CPU);
        HostKvPool.Builder cpuHostForAuto =
                HostKvPool.builder().forDevice(auto).ioBackend(IoBackend.CPU);
        if (IoBackend.AUTO.isCuda()) {
            // build() refuses with the type a transfer between the two pools throws
            assertBuildRefused(
                    KvioUnsupportedException.class,
                    cpuHostForAuto,
                    "CUDA device",
                    "'cpu' moves host memory");
            HostKvPool cpuHost = open(HostKvPool.builder().forDevice(cpu).build());
            try (KvioExecutor cpuEx = KvioExecutor.create(IoBackend.CPU, 1);
                    TokenIndices all = allSlots(PAGES * PAGE_SIZE)) {
                expectThrows(
                        KvioUnsupportedException.class,
                        () -> Kvio.transfer(cpuEx, auto, cpuHost, all, all, 0, 0, LAYERS));
            }
            return;
        }
        HostKvPool cpuHost = open(cpuHostForAuto.build());
        assertRoundTrip(auto, cpuHost);
        HostKvPool autoHost =
                open(HostKvPool.builder().forDevice(cpu).ioBackend(IoBackend.AUTO).build());
        assertRoundTrip(cpu, autoHost);
        // per transfer: a host pool built for one device pool serves the other backend's pool
        assertRoundTrip(auto, autoHost);
        assertRoundTrip(cpu, cpuHost);
        // the general transfer: an auto device pool on a cpu executor, and the reverse
        try (KvioExecutor cpuEx = KvioExecutor.create(IoBackend.CPU, 1);
                TokenIndices all = allSlots(PAGES * PAGE_SIZE)) {
            fill(auto.buffer(), 11);
            fill(cpuHost.buffer(), 0x5A);
            Kvio.transfer(cpuEx, auto, cpuHost, all, all, 0, 0, LAYERS).await();
            assertEquals(cpuHost.buffer(), auto.buffer(), "auto device pool -> cpu host pool");
        }
    }

    /**
     * The last check of build() asks natively whether a transfer between the two pools can be made:
     * a host pool over the device pool's own memory passes every Java check but could never be used
     * with it, so it is refused there (and the device pool's bytes are untouched).
     */
    @Test
    public void hostPoolOverTheDevicePoolsOwnMemoryIsRefusedAtBuild() {
        DeviceKvPool d = device(IoBackend.CPU);
        fill(d.buffer(), 7);
        byte[] before = new byte[d.buffer().capacity()];
        d.buffer().get(before);
        HostKvPool.Builder overDevice =
                HostKvPool.builder().forDevice(d).pages(1).wrap(d.regionAddress(0), 4096);
        assertBuildRefused(
                KvioInvalidArgumentException.class,
                overDevice,
                "the memory given to wrap() overlaps the device pool's (address 0x",
                "wrap a buffer apart from the device pool's");
        assertEquals(d.buffer(), ByteBuffer.wrap(before), "the device pool after the refusal");
        // the same builder over memory of its own builds
        ByteBuffer own = ByteBuffer.allocateDirect(4096);
        assertEquals(open(overDevice.wrap(own).build()).spec().numPages(), 1);
    }

    /**
     * A wrapped buffer that is too small is named as the caller passed it: wrap(ByteBuffer) has no
     * sizeBytes argument, so the message speaks of memory.remaining(); wrap(address, sizeBytes)
     * keeps sizeBytes. Neither the buffer nor the device pool changes.
     */
    @Test
    public void aTooSmallWrappedBufferIsNamedAsPassed() {
        DeviceKvPool d = device(IoBackend.CPU);
        byte[] deviceBefore = LayoutOracle.fill(d.buffer(), 3);
        ByteBuffer small = ByteBuffer.allocateDirect(100);
        byte[] smallBefore = LayoutOracle.fill(small, 5);
        KvioInvalidArgumentException e =
                assertBuildRefused(
                        KvioInvalidArgumentException.class,
                        HostKvPool.builder().forDevice(d).wrap(small),
                        "memory.remaining() 100 is too small: this spec needs 8192 bytes");
        assertFalse(e.getMessage().contains("sizeBytes"), e.getMessage());
        assertEquals(small, ByteBuffer.wrap(smallBefore), "the buffer after the refusal");
        assertBuildRefused(
                KvioInvalidArgumentException.class,
                HostKvPool.builder().forDevice(d).wrap(DirectBuffers.address(small), 100),
                "sizeBytes 100 is too small: this spec needs 8192 bytes");
        assertEquals(small, ByteBuffer.wrap(smallBefore), "the buffer after the refusal");
        assertEquals(d.buffer(), ByteBuffer.wrap(deviceBefore), "the device pool");
    }

    /**
     * Backs up every slot of every layer from device to a canary-filled host pool, then loads every
     * layer back into the canary-filled device pool: both are layer_first of the same token count,
     * so the identity slots make each side equal to the other byte for byte.
     */
    private static void assertRoundTrip(DeviceKvPool device, HostKvPool host) {
        long tokens = device.spec().tokens();
        assertEquals(host.spec().tokens(), tokens);
        try (TokenIndices all = allSlots(tokens)) {
            ByteBuffer d = device.buffer();
            ByteBuffer h = host.buffer();
            fill(d, 7);
            fill(h, 0x5A);
            host.backup(device).deviceIndices(all).hostIndices(all).submit().await();
            assertEquals(h, d, "host after the backup");
            byte[] original = new byte[d.capacity()];
            d.duplicate().get(original);
            fill(d, 0x5A);
            for (long l = 0; l < device.spec().numLayers(); l++) {
                host.load(device, l).hostIndices(all).deviceIndices(all).submit().await();
            }
            assertEquals(d, ByteBuffer.wrap(original), "device after the loads");
        }
    }

    private static TokenIndices allSlots(long n) {
        return TokenIndices.of(LongStream.range(0, n).toArray());
    }

    /** Pattern fill (seed != 0x5A) or the canary 0x5A everywhere. */
    private static void fill(ByteBuffer b, int seed) {
        ByteBuffer w = b.duplicate();
        for (int i = 0; i < w.capacity(); i++) {
            w.put(i, (byte) (seed == 0x5A ? 0x5A : (i * 31 + seed) ^ (i >>> 8)));
        }
    }
}
