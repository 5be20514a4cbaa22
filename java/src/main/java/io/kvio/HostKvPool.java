/*
 * A host KV pool: the host-RAM tier of the hierarchical cache, in any of the four layouts, moved
 * to and from a device pool by an io backend. It may hold all of the device's layers or a
 * contiguous range of them (layer sharding). backup(device) and load(device, layer) name each
 * index list by its side (hostIndices / deviceIndices) and report device layers the pool does
 * not hold on the Transfer (or refuse them, with strictLayers()). build() checks the
 * configuration against the native support rules (once: their answer is the same for both
 * granularities) before allocating, so a bad layout/backend combination fails at start-up with
 * the reason and what to use instead, not at the first transfer. The builder keeps the pool's
 * geometry in a PoolSpec.Builder, to which its geometry setters delegate. For the CUDA io
 * backends (kernel, direct, staged, and auto on a machine with a GPU) the host memory is pinned
 * (cudaHostAlloc), as the CUDA copies require.
 * Builder.wrap builds the pool over caller memory (an address, a direct ByteBuffer, or on Java 22+
 * a MemorySegment through io.kvio.Segments) instead of allocating; kvio pins it for those backends.
 */
package io.kvio;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

public final class HostKvPool extends KvPool {
    private final long deviceLayerStart;
    private final long deviceLayers;
    private final KvioExecutor executor;
    private final boolean ownsExecutor;
    private final boolean strictLayers;

    private HostKvPool(
            PoolSpec spec,
            IoBackend ioBackend,
            long handle,
            boolean allocated,
            long deviceLayerStart,
            long deviceLayers,
            KvioExecutor executor,
            boolean ownsExecutor,
            boolean strictLayers) {
        super(spec, ioBackend, handle, allocated);
        this.strictLayers = strictLayers;
        this.deviceLayerStart = deviceLayerStart;
        this.deviceLayers = deviceLayers;
        this.executor = executor;
        this.ownsExecutor = ownsExecutor;
    }

    @Override
    String what() {
        return "host pool";
    }

    public static Builder builder() {
        return new Builder();
    }

    public KvLayout layout() {
        return spec().layout();
    }

    /** The io backend that moves this pool's data to and from device pools. */
    public IoBackend ioBackend() {
        return backend();
    }

    /** The first device layer this pool holds (0 unless layer-sharded). */
    public long deviceLayerStart() {
        return deviceLayerStart;
    }

    /** Layers this pool holds: device layers [deviceLayerStart, deviceLayerStart + numLayers). */
    public long numLayers() {
        return spec().numLayers();
    }

    /** Layers of the device pools this pool was configured for. */
    public long deviceLayers() {
        return deviceLayers;
    }

    /** The executor this pool's transfers run on. */
    public KvioExecutor executor() {
        return executor;
    }

    /**
     * The device whose pools this host pool serves: its executor's ({@link KvioExecutor#device()},
     * which build() checked against the device pool of forDevice); {@link Kvio#HOST_DEVICE} (-1) on
     * cpu. Its pinned memory (on a device backend) is registered with that device's runtime.
     */
    public int device() {
        return executor.device();
    }

    /** Whether loads of device layers this pool does not hold are refused (strictLayers()). */
    public boolean strictLayers() {
        return strictLayers;
    }

    /**
     * Device to host, all of this pool's layers in one transfer: device layers [deviceLayerStart,
     * deviceLayerStart + numLayers) to host layers [0, numLayers). Name both index lists, then
     * submit:
     *
     * <pre>{@code
     * Transfer t = host.backup(device).deviceIndices(d).hostIndices(h).submit();
     * }</pre>
     *
     * Device layers outside that range are not moved and are listed by {@link
     * Transfer#skippedLayers()}.
     */
    public TransferRequest backup(DeviceKvPool device) {
        return new TransferRequest(this, Objects.requireNonNull(device, "device"), true, 0);
    }

    /**
     * Host to device, one layer: device layer {@code deviceLayer} from host layer {@code
     * deviceLayer - deviceLayerStart}. Name both index lists, then submit:
     *
     * <pre>{@code
     * Transfer t = host.load(device, layer).hostIndices(h).deviceIndices(d).submit();
     * }</pre>
     *
     * A device layer this pool does not hold gives an already completed Transfer of 0 bytes whose
     * {@link Transfer#skippedLayers()} names it, or KvioOutOfRangeException if the pool was built
     * with {@link Builder#strictLayers()}; a layer outside the device pool's layers is always
     * KvioOutOfRangeException.
     */
    public TransferRequest load(DeviceKvPool device, long deviceLayer) {
        return new TransferRequest(
                this, Objects.requireNonNull(device, "device"), false, deviceLayer);
    }

    /**
     * The token slots of pages {@code pageIds} of {@code pool} (pageSize slots each, in order),
     * checked: each id within the pool's pages, and, when the pool is the side written, none given
     * twice (the slots would be written twice; the native check would name slot positions, not page
     * ids).
     */
    static long[] pageSlots(
            String name, KvPool pool, long[] pageIds, boolean written, String poolName) {
        Objects.requireNonNull(pageIds, name);
        long pages = pool.spec().numPages();
        long pageSize = pool.spec().pageSize();
        for (int i = 0; i < pageIds.length; i++) {
            if (pageIds[i] < 0 || pageIds[i] >= pages) {
                throw new KvioOutOfRangeException(
                        name
                                + "["
                                + i
                                + "] = "
                                + pageIds[i]
                                + " is out of range: "
                                + poolName
                                + " has "
                                + pages
                                + " pages (valid: 0 to "
                                + (pages - 1)
                                + ")");
            }
        }
        if (written && pageIds.length > 1) {
            long[] sorted = pageIds.clone();
            java.util.Arrays.sort(sorted);
            for (int k = 1; k < sorted.length; k++) {
                if (sorted[k] == sorted[k - 1]) {
                    int first = indexOf(pageIds, sorted[k], 0);
                    int second = indexOf(pageIds, sorted[k], first + 1);
                    throw new KvioInvalidArgumentException(
                            name
                                    + "["
                                    + second
                                    + "] = "
                                    + sorted[k]
                                    + " repeats "
                                    + name
                                    + "["
                                    + first
                                    + "]: "
                                    + poolName
                                    + " is written, and a page may be written once per transfer");
                }
            }
        }
        if (pageIds.length > (Integer.MAX_VALUE - 8) / pageSize) {
            throw new KvioInvalidArgumentException(
                    pageIds.length
                            + " pages of "
                            + pageSize
                            + " tokens are too many slots for one list; split the transfer");
        }
        long[] slots = new long[(int) (pageIds.length * pageSize)];
        int n = 0;
        for (long page : pageIds) {
            for (long t = 0; t < pageSize; t++) {
                slots[n++] = page * pageSize + t;
            }
        }
        return slots;
    }

    private static int indexOf(long[] values, long value, int from) {
        for (int i = from; i < values.length; i++) {
            if (values[i] == value) {
                return i;
            }
        }
        return -1;
    }

    /**
     * A backup or load being described: each index list is named by its side, so the order of the
     * calls does not matter and a swap cannot compile silently. Each list may be a TokenIndices or,
     * for one call, a long[] or int[] (copied at submit, nothing to close). A request may be
     * submitted again after changing its lists; it is not thread-safe.
     */
    public static final class TransferRequest {
        private final HostKvPool host;
        private final DeviceKvPool device;
        private final boolean backup;
        private final long deviceLayer;
        private IndexArg hostIndices;
        private IndexArg deviceIndices;
        private boolean overlapsCompute;
        private boolean queueOnly;
        private int ctaBudget; // 0 or less: the executor's setting
        private int warpsPerCta; // 0 or less: the executor's setting

        private TransferRequest(
                HostKvPool host, DeviceKvPool device, boolean backup, long deviceLayer) {
            this.host = host;
            this.device = device;
            this.backup = backup;
            this.deviceLayer = deviceLayer;
        }

        /** The host pool's token slots. */
        public TransferRequest hostIndices(TokenIndices hostIndices) {
            this.hostIndices = IndexArg.of("hostIndices", hostIndices);
            return this;
        }

        /** The host pool's token slots, copied at submit. */
        public TransferRequest hostIndices(long... hostIndices) {
            this.hostIndices = IndexArg.of("hostIndices", hostIndices);
            return this;
        }

        /** The host pool's token slots, copied (widened to int64) at submit. */
        public TransferRequest hostIndices(int... hostIndices) {
            this.hostIndices = IndexArg.of("hostIndices", hostIndices);
            return this;
        }

        /** The device pool's token slots. */
        public TransferRequest deviceIndices(TokenIndices deviceIndices) {
            this.deviceIndices = IndexArg.of("deviceIndices", deviceIndices);
            return this;
        }

        /** The device pool's token slots, copied at submit. */
        public TransferRequest deviceIndices(long... deviceIndices) {
            this.deviceIndices = IndexArg.of("deviceIndices", deviceIndices);
            return this;
        }

        /** The device pool's token slots, copied (widened to int64) at submit. */
        public TransferRequest deviceIndices(int... deviceIndices) {
            this.deviceIndices = IndexArg.of("deviceIndices", deviceIndices);
            return this;
        }

        /**
         * The host pool's whole pages, by page id: each page's pageSize token slots, in the order
         * given (what {@link #hostIndices(long...)} takes, expanded with this pool's page size).
         * KvioOutOfRangeException for a page id outside the pool; on a backup, where the host side
         * is written, KvioInvalidArgumentException for a page id given twice.
         */
        public TransferRequest hostPages(long... pageIds) {
            this.hostIndices =
                    IndexArg.ofPages(
                            "hostPages (as token slots)",
                            pageSlots("hostPages", host, pageIds, backup, "the host pool"),
                            "hostPages",
                            pageIds.length,
                            host.spec().pageSize(),
                            "host");
            return this;
        }

        /**
         * The device pool's whole pages, by page id (as {@link #hostPages(long...)}, with the
         * device pool's page size); on a load, where the device side is written, a page id given
         * twice is refused.
         */
        public TransferRequest devicePages(long... pageIds) {
            this.deviceIndices =
                    IndexArg.ofPages(
                            "devicePages (as token slots)",
                            pageSlots("devicePages", device, pageIds, !backup, "the device pool"),
                            "devicePages",
                            pageIds.length,
                            device.spec().pageSize(),
                            "device");
            return this;
        }

        /**
         * Marks the transfer as running beside compute on the device (e.g. a layer's load during
         * the forward pass): the {@link IoBackend#AUTO} backend then gives the copy engine rows of
         * 2 KiB and more when they reach it in copies of 32 KiB and more (a page of one layer,
         * say), instead of only rows from 256 KiB (the default calibration, docs/cuda.md); other
         * backends ignore the mark.
         */
        public TransferRequest overlapsCompute() {
            return overlapsCompute(true);
        }

        /** Sets or clears the overlaps-compute mark (see {@link #overlapsCompute()}). */
        public TransferRequest overlapsCompute(boolean overlapsCompute) {
            this.overlapsCompute = overlapsCompute;
            return this;
        }

        /**
         * {@link #submit()} only queues the transfer: this thread copies nothing, for a thread that
         * must not stall (an engine's scheduler). Without it the {@link IoBackend#CPU} backend (and
         * {@link IoBackend#AUTO} where it runs cpu) copies a transfer submitted to an idle executor
         * partly on the submitting thread, which completes it sooner than a worker's wake-up would:
         * up to 512 KiB wholly on that thread (done when submit() returns), up to 8 MiB beside the
         * executor's io threads until every piece of it has been taken; larger transfers, and those
         * behind earlier ones, only queue. The device backends never copy on the submitting thread
         * and ignore it.
         */
        public TransferRequest queueOnly() {
            return queueOnly(true);
        }

        /** Sets or clears queue-only (see {@link #queueOnly()}). */
        public TransferRequest queueOnly(boolean queueOnly) {
            this.queueOnly = queueOnly;
            return this;
        }

        /**
         * The copy kernel's launch shape for this transfer only: at most {@code ctaBudget} thread
         * blocks (1 to 65535) of {@code warpsPerCta} warps (1 to 32); 0 or less for either keeps
         * the executor's setting ({@link KvioExecutor#setLaunch(int, int)}), which is also what a
         * request without this call uses; for setLaunch itself 0 or less means the backend's
         * default instead (setLaunch's javadoc has the two side by side). Unlike setLaunch it
         * changes nothing for other transfers, so it is also accepted on a shared executor (the
         * pool's default). The {@link IoBackend#KERNEL} backend uses it, and {@link IoBackend#AUTO}
         * when it gives the transfer to its kernel; the other backends (cpu, direct, staged,
         * kernel_ascend) ignore it (where setLaunch, except on staged, throws
         * KvioUnsupportedException). Its limits are checked on every backend, for empty index lists
         * and loads of a layer this pool does not hold as well: {@link #submit()} throws
         * KvioInvalidArgumentException above 65535 CTAs or 32 warps, before any byte moves.
         * Combines with {@link #overlapsCompute()}.
         */
        public TransferRequest launch(int ctaBudget, int warpsPerCta) {
            this.ctaBudget = ctaBudget;
            this.warpsPerCta = warpsPerCta;
            return this;
        }

        /**
         * Validates and submits; index lists may be closed or reused once this returns.
         * KvioInvalidArgumentException when a list was not set. On the cpu io backend a transfer
         * submitted to an idle executor is copied partly on this thread: up to 512 KiB wholly
         * before this returns (done at submit), up to 8 MiB beside the executor's threads until
         * every piece of it has been taken; behind earlier transfers, larger, or {@link
         * #queueOnly()}, it returns at once. The device backends only issue the work here.
         */
        public Transfer submit() {
            if (hostIndices == null || deviceIndices == null) { // a step missing, as builders say
                String missing = hostIndices == null ? "hostIndices" : "deviceIndices";
                throw new KvioInvalidArgumentException(
                        missing
                                + " is not set: call "
                                + missing
                                + "(...) before submit() (both lists are needed; empty ones"
                                + " give a completed transfer)");
            }
            int flags = Kvio.submitFlags(overlapsCompute, queueOnly);
            return backup
                    ? host.submitBackup(
                            device, hostIndices, deviceIndices, flags, ctaBudget, warpsPerCta)
                    : host.submitLoad(
                            device,
                            hostIndices,
                            deviceIndices,
                            deviceLayer,
                            flags,
                            ctaBudget,
                            warpsPerCta);
        }
    }

    private Transfer submitBackup(
            DeviceKvPool device,
            IndexArg hostIndices,
            IndexArg deviceIndices,
            int flags,
            int ctaBudget,
            int warpsPerCta) {
        checkArguments(device, hostIndices, deviceIndices);
        checkDeviceLayers(device);
        long layers = device.spec().numLayers();
        long end = deviceLayerStart + numLayers();
        long[] skipped =
                layers == numLayers() ? Kvio.NO_LAYERS : new long[(int) (layers - numLayers())];
        for (long l = 0, k = 0; k < skipped.length; l++) {
            if (l < deviceLayerStart || l >= end) {
                skipped[(int) k++] = l;
            }
        }
        return Kvio.submit(
                executorHandle(),
                executor.backend(),
                device,
                this,
                deviceIndices,
                hostIndices,
                false, // the pools named by kind in messages: "the host pool"
                deviceLayerStart,
                0,
                numLayers(),
                flags,
                ctaBudget,
                warpsPerCta,
                skipped);
    }

    /**
     * The handle of the executor this pool transfers with; KvioClosedException saying whose it is
     * when that executor was closed while the pool is open (one given to Builder.executor).
     */
    private long executorHandle() {
        try {
            return executor.handle();
        } catch (KvioClosedException e) {
            KvioClosedException out =
                    new KvioClosedException(
                            "this host pool's "
                                    + executor.backend().userName()
                                    + " executor was closed while the pool is open"
                                    + (ownsExecutor
                                            ? " (through executor().close(); the pool closes its"
                                                    + " own executor when it is closed)"
                                            : ": keep the executor given to"
                                                    + " HostKvPool.Builder.executor(...) open until"
                                                    + " the pool is closed"));
            out.initCause(e);
            throw out;
        }
    }

    private Transfer submitLoad(
            DeviceKvPool device,
            IndexArg hostIndices,
            IndexArg deviceIndices,
            long deviceLayer,
            int flags,
            int ctaBudget,
            int warpsPerCta) {
        checkArguments(device, hostIndices, deviceIndices);
        checkDeviceLayers(device);
        long layers = device.spec().numLayers();
        if (deviceLayer < 0 || deviceLayer >= layers) {
            throw new KvioOutOfRangeException(
                    "device layer "
                            + deviceLayer
                            + " is outside the device pool's "
                            + layers
                            + " layers (valid: 0 to "
                            + (layers - 1)
                            + ")");
        }
        if (deviceLayer < deviceLayerStart || deviceLayer >= deviceLayerStart + numLayers()) {
            if (strictLayers) {
                throw new KvioOutOfRangeException(
                        "device layer "
                                + deviceLayer
                                + " is not held by this host pool, which holds device layers ["
                                + deviceLayerStart
                                + ", "
                                + (deviceLayerStart + numLayers())
                                + ") (valid: "
                                + deviceLayerStart
                                + " to "
                                + (deviceLayerStart + numLayers() - 1)
                                + "); the pool was built with strictLayers(), without it such a"
                                + " load completes as a no-op listed by Transfer.skippedLayers()");
            }
            // Moves nothing, but its arguments are checked as a held layer's would be (host layer
            // 0 stands in for the one not held): bad indices fail here, not only once it is held.
            Kvio.check(
                    executorHandle(),
                    this,
                    device,
                    hostIndices,
                    deviceIndices,
                    false,
                    0,
                    deviceLayer,
                    1,
                    flags,
                    ctaBudget,
                    warpsPerCta);
            return Transfer.completed(executor.backend(), new long[] {deviceLayer});
        }
        return Kvio.submit(
                executorHandle(),
                executor.backend(),
                this,
                device,
                hostIndices,
                deviceIndices,
                false, // the pools named by kind in messages: "the host pool"
                deviceLayer - deviceLayerStart,
                deviceLayer,
                1,
                flags,
                ctaBudget,
                warpsPerCta,
                Kvio.NO_LAYERS);
    }

    private void checkArguments(DeviceKvPool device, IndexArg hostIndices, IndexArg deviceIndices) {
        Kvio.ensureOpen("this host pool", this);
        Kvio.ensureOpen("device", device);
        hostIndices.ensureOpen();
        deviceIndices.ensureOpen();
        // Whether this pool's executor moves the device pool's memory is asked natively by the
        // submission (or check) itself: the memory kind decides, not the backend that allocated
        // the device pool.
        Kvio.checkLengths(hostIndices, deviceIndices);
    }

    private void checkDeviceLayers(DeviceKvPool device) {
        long layers = device.spec().numLayers();
        if (strictLayers && layers != deviceLayers) {
            throw new KvioOutOfRangeException(
                    "this host pool was built for a device pool of "
                            + deviceLayers
                            + " layers (forDevice or deviceLayers) but device has "
                            + layers
                            + " layers; the pool was built with strictLayers(), which refuses"
                            + " device pools of another layer count");
        }
        if (deviceLayerStart + numLayers() > layers) {
            throw new KvioOutOfRangeException(
                    "this host pool holds device layers ["
                            + deviceLayerStart
                            + ", "
                            + (deviceLayerStart + numLayers())
                            + ") but the device pool has only "
                            + layers
                            + " layers (valid device layers: 0 to "
                            + (layers - 1)
                            + ")");
        }
    }

    /**
     * Closes the pool, and its executor if the pool created one ({@link Builder#threads(int)}).
     * Closing that executor waits for the transfers submitted on it, so for such a pool close()
     * returns once they have completed; {@link #closeAndWait(long, TimeUnit)} waits at most its
     * timeout for this pool's transfers and closes the executor only when it returns true (until
     * then, or until close(), the executor and its threads stay). That close waits for whatever
     * else was submitted on the executor ({@link #executor()} is public): submit only this pool's
     * transfers there for the timeout to bound it.
     */
    @Override
    public void close() {
        closePool();
        closeOwned();
    }

    @Override
    void closeOwned() {
        if (ownsExecutor) {
            executor.close();
        }
    }

    /**
     * Defaults: kind mha, layout layer_first, io backend of the device pool (cpu without one),
     * pages = as many as hold the device pool's tokens (its pages when the page sizes are equal),
     * all device layers, the backend's shared executor. {@link #spec()} and {@link
     * #requiredBytes()} say what {@link #build()} would make, without making it.
     */
    public static final class Builder {
        /** Kind, layout, page size, heads, head bytes; pages and layers are set by build(). */
        private final PoolSpec.Builder spec = PoolSpec.builder();

        private IoBackend ioBackend;
        private long pages;
        private boolean pagesSet; // unset: enough for the device pool's tokens
        private long deviceLayers;
        private boolean deviceLayersSet; // by deviceLayers(n); forDevice sets it too
        private long deviceLayerStart;
        private long numLayers;
        private boolean layerRangeSet; // unset: all the device pool's layers
        private boolean kindSet;
        private boolean headsSet;
        private boolean headBytesSet;
        private boolean pageSizeSet;
        private int threads;
        private boolean privateExecutor;
        private KvioExecutor executor;
        private DeviceKvPool device;
        private boolean strictLayers;
        private boolean wrapping;
        private long wrapAddress;
        private long wrapBytes;
        private Object wrapMemory;
        private BooleanSupplier wrapAlive; // null: the wrapped memory cannot die before the pool
        private String wrapName;

        private Builder() {}

        /**
         * A builder with this one's configuration, wrapped memory included, that shares nothing
         * mutable with it: Segments.wrapHostPool configures the copy, so the caller's builder stays
         * as the caller left it (a template for the next pool).
         */
        Builder copy() {
            Builder c = new Builder();
            c.spec.kind = spec.kind;
            c.spec.layout = spec.layout;
            c.spec.layers = spec.layers;
            c.spec.pages = spec.pages;
            c.spec.pageSize = spec.pageSize;
            c.spec.heads = spec.heads;
            c.spec.headBytes = spec.headBytes;
            c.ioBackend = ioBackend;
            c.pages = pages;
            c.pagesSet = pagesSet;
            c.deviceLayers = deviceLayers;
            c.deviceLayersSet = deviceLayersSet;
            c.deviceLayerStart = deviceLayerStart;
            c.numLayers = numLayers;
            c.layerRangeSet = layerRangeSet;
            c.kindSet = kindSet;
            c.headsSet = headsSet;
            c.headBytesSet = headBytesSet;
            c.pageSizeSet = pageSizeSet;
            c.threads = threads;
            c.privateExecutor = privateExecutor;
            c.executor = executor;
            c.device = device;
            c.strictLayers = strictLayers;
            c.wrapping = wrapping;
            c.wrapAddress = wrapAddress;
            c.wrapBytes = wrapBytes;
            c.wrapMemory = wrapMemory;
            c.wrapAlive = wrapAlive;
            c.wrapName = wrapName;
            return c;
        }

        /**
         * Builds the pool over caller-owned host memory instead of allocating: {@code sizeBytes} at
         * {@code address}, holding all components one after the other (at least componentBytes *
         * components). The memory must stay valid until the pool is closed and kvio no longer uses
         * it (see {@link KvPool#closeAndWait()}). For the CUDA and Ascend io backends kvio
         * registers (pins) it while the pool lives: cudaHostRegister, or for kernel_ascend
         * aclrtHostRegisterV2 with ACL_HOST_REG_PINNED, which older CANN runtimes lack (the pool is
         * then refused, KvioUnsupportedException with the reason: build it without wrap, kvio
         * allocates it with aclrtMallocHost). For kernel_ascend, memory that is pinned already
         * (from aclrtMallocHost, e.g. a torch_npu pinned tensor) is used as given where the runtime
         * has aclrtPointerGetAttributes: kvio pins nothing and never unregisters or frees it, on
         * any CANN and OS kernel (docs/ascend.md). Memory pinned for one NPU cannot be wrapped for
         * another while that pool lives (CANN keeps one process-wide table of registrations).
         */
        public Builder wrap(long address, long sizeBytes) {
            return wrap(address, sizeBytes, null, null, null);
        }

        /**
         * Builds the pool over a direct, writable ByteBuffer's memory, from its position to its
         * limit (as {@link #wrap(long, long)}); the buffer stays reachable while the pool is open
         * and, after it is closed, until kvio no longer uses its memory. Read-only buffers are
         * refused (KvioInvalidArgumentException). On Java 22+ the buffer may be a view of a
         * MemorySegment (segment.asByteBuffer()): KvioClosedException if its arena is closed (here
         * or at build()), and once it is closed every later use of the pool that would touch the
         * memory (a transfer, copyTo/copyFrom, buffer/slice, Segments.region) throws
         * KvioClosedException instead; close the pool before that arena.
         */
        public Builder wrap(ByteBuffer memory) {
            KvPool.WrappableBuffer w =
                    KvPool.wrappable(memory, "memory", "wrap(ByteBuffer)", "host pools");
            return wrap(
                    w.address,
                    w.bytes,
                    memory,
                    w.alive,
                    "the ByteBuffer given to wrap(ByteBuffer), a view of a MemorySegment");
        }

        /**
         * Caller memory {@code keepAlive} owns (a buffer or segment the pool keeps reachable);
         * {@code alive} (null: always) whether it still exists, {@code name} what it is (for
         * messages).
         */
        Builder wrap(
                long address,
                long sizeBytes,
                Object keepAlive,
                BooleanSupplier alive,
                String name) {
            this.wrapping = true;
            this.wrapAddress = address;
            this.wrapBytes = sizeBytes;
            this.wrapMemory = keepAlive;
            this.wrapAlive = alive;
            this.wrapName = name;
            return this;
        }

        /**
         * Takes kind, heads, head bytes, page size, layers, capacity and io backend from the device
         * pool's spec, except those set on this builder (in either order). Kind, heads and head
         * bytes must stay the device pool's: build() refuses others, as no transfer between the two
         * pools could work. Page size and pages may differ. Without {@link #pages(long)} the host
         * pool holds the device pool's tokens: ceil(device pages * device page size / host page
         * size) pages, the device pool's page count when the page sizes are equal.
         */
        public Builder forDevice(DeviceKvPool device) {
            Objects.requireNonNull(device, "device");
            PoolSpec d = device.spec();
            this.device = device;
            if (!kindSet) {
                spec.kind(d.kind());
            }
            if (!headsSet) {
                spec.heads(d.headNum());
            }
            if (!headBytesSet) {
                spec.headBytes(d.headBytes());
            }
            if (!pageSizeSet) {
                spec.pageSize(d.pageSize());
            }
            if (!deviceLayersSet) {
                this.deviceLayers = d.numLayers();
            }
            return this;
        }

        /** The pool kind; with forDevice it must be the device pool's (build() refuses another). */
        public Builder kind(PoolKind kind) {
            spec.kind(kind);
            kindSet = true;
            return this;
        }

        public Builder layout(KvLayout layout) {
            spec.layout(layout);
            return this;
        }

        /**
         * The layout by the name users type (layer_first, page_first, page_first_direct,
         * page_head).
         */
        public Builder layout(String layout) {
            return layout(KvLayout.parse(layout));
        }

        public Builder ioBackend(IoBackend ioBackend) {
            this.ioBackend = Objects.requireNonNull(ioBackend, "ioBackend");
            return this;
        }

        /**
         * The io backend by the name users type (cpu, kernel, direct, staged, kernel_ascend, auto).
         */
        public Builder ioBackend(String ioBackend) {
            return ioBackend(IoBackend.parse(ioBackend));
        }

        /**
         * Capacity in pages (at least 1); without it, as many pages of this pool's page size as
         * hold forDevice's device pool's tokens (ceil(device pages * device page size / page
         * size)).
         */
        public Builder pages(long pages) {
            this.pages = pages;
            this.pagesSet = true;
            return this;
        }

        /** Tokens per page; with forDevice it may differ from the device pool's. */
        public Builder pageSize(long pageSize) {
            spec.pageSize(pageSize);
            pageSizeSet = true;
            return this;
        }

        /** Heads per row; with forDevice it must be the device pool's (build() refuses another). */
        public Builder heads(long heads) {
            spec.heads(heads);
            headsSet = true;
            return this;
        }

        /**
         * Bytes per head; with forDevice it must be the device pool's (build() refuses another).
         */
        public Builder headBytes(long headBytes) {
            spec.headBytes(headBytes);
            headBytesSet = true;
            return this;
        }

        /**
         * Layers of the device pools this pool exchanges data with; forDevice sets it to the device
         * pool's layers, and with forDevice (in either order) build() refuses another value.
         */
        public Builder deviceLayers(long deviceLayers) {
            this.deviceLayers = deviceLayers;
            this.deviceLayersSet = true;
            return this;
        }

        /**
         * Layer sharding: this pool holds device layers [deviceLayerStart, deviceLayerStart +
         * numLayers), one contiguous range of one device pool's layers (deviceLayerStart from 0,
         * numLayers at least 1, checked by build() against the device pool's layers). Layers of
         * another device pool, such as an MTP draft model's, go in a second host pool.
         */
        public Builder layerRange(long deviceLayerStart, long numLayers) {
            this.deviceLayerStart = deviceLayerStart;
            this.numLayers = numLayers;
            this.layerRangeSet = true;
            return this;
        }

        /**
         * Refuse, rather than skip, device layers this pool does not hold: a load of a layer
         * outside layerRange, and any transfer with a device pool whose layer count differs from
         * forDevice/deviceLayers. By default such loads complete as no-ops listed by {@link
         * Transfer#skippedLayers()} (right for draft-model layers kept only on the device).
         */
        public Builder strictLayers() {
            this.strictLayers = true;
            return this;
        }

        /**
         * A private executor, closed with the pool, with this many io threads: 1 to 1024, or {@code
         * <= 0} for one per core (at most 1024). {@code threads(0)} gives the pool a private
         * executor of its io backend on any backend, e.g. to change its settings ({@link
         * KvioExecutor#setLaunch}) without touching the shared executor's. A count above 0 is
         * honoured by the io backends that run on host threads, or refused by {@link #build()}:
         *
         * <ul>
         *   <li>cpu, and auto on a machine without a GPU or NPU: honoured; more than 1024 is
         *       KvioInvalidArgumentException.
         *   <li>auto on an NPU (no GPU): honoured by its cpu candidate on device 0; on another
         *       device the native executor has no thread count (one io thread per core), so it is
         *       KvioUnsupportedException.
         *   <li>kernel, direct, staged, kernel_ascend, and auto on a machine with a CUDA GPU (which
         *       chooses among kernel, direct and staged): no io threads, KvioUnsupportedException.
         * </ul>
         */
        public Builder threads(int threads) {
            this.threads = threads;
            this.privateExecutor = true;
            this.executor = null;
            return this;
        }

        /** Run transfers on this executor (not closed with the pool). */
        public Builder executor(KvioExecutor executor) {
            this.executor = Objects.requireNonNull(executor, "executor");
            this.privateExecutor = false;
            return this;
        }

        /**
         * threads(n), n above 0, where the private executor build() would make cannot honour it: a
         * backend without io threads, or auto on a device other than 0, whose native executor
         * (kvio_executor_create_cuda / _on_npu) takes no thread count.
         */
        static void checkThreads(IoBackend backend, int threads, int ordinal) {
            if (threads <= 0) {
                return; // one per core, or none: every backend and device takes it
            }
            KvioExecutor.checkThreadCount(threads); // before the backend: same answer everywhere
            if (!backend.hasIoThreads()) {
                throw new KvioUnsupportedException(
                        "threads("
                                + threads
                                + "): io backend '"
                                + backend.userName()
                                + "'"
                                + (backend == IoBackend.AUTO
                                        ? " runs on this machine's CUDA GPU and"
                                        : "")
                                + " has no io threads (its transfers run on a device stream or"
                                + " queue); use threads(0) for a private executor of it, or leave"
                                + " threads unset for the shared one");
            }
            if (ordinal > 0) {
                throw new KvioUnsupportedException(
                        "threads("
                                + threads
                                + "): io backend 'auto' on device "
                                + ordinal
                                + " (the device pool's or the executor's) runs its cpu transfers"
                                + " on one io thread per core and takes no thread count there;"
                                + " use threads(0) for a private executor, or build on device 0");
            }
        }

        /**
         * The support rules, asked once: granularity is only range-checked by them, so per_layer
         * (loads) and all_layer (backups) get the same answer.
         */
        private void checkSupport(IoBackend backend, long layers) {
            NativeBridge.checkSupport(
                    spec.kind,
                    spec.layout,
                    backend,
                    Granularity.PER_LAYER,
                    spec.heads,
                    spec.headBytes,
                    spec.pageSize,
                    layers,
                    deviceLayers,
                    deviceLayerStart);
        }

        /**
         * The support query's fields (kvio_check_support) and this builder's methods that set them;
         * longer names first (host_num_layers before num_layers).
         */
        private static final String[][] SUPPORT_FIELDS = {
            {"device_layer_start", "deviceLayerStart (layerRange)"},
            {"host_num_layers", "numLayers (layerRange)", "layerRange(deviceLayerStart, n)"},
            {"device_num_layers", "deviceLayers (forDevice or deviceLayers(n))"},
            {"page_size", "pageSize"},
            {"head_num", "heads"},
            {"head_bytes", "headBytes"}
        };

        /**
         * Kind, heads and head bytes set on this builder must be the device pool's: every transfer
         * between pools of different kinds or rows is refused, so such a pool could never be used
         * with the device pool it was built for.
         */
        private void checkDeviceGeometry(PoolSpec d) {
            if (spec.kind != d.kind()) {
                throw new KvioInvalidArgumentException(
                        "kind(PoolKind."
                                + spec.kind.name()
                                + ") differs from the device pool's kind "
                                + d.kind().userName()
                                + " (forDevice): a host pool must have its device pool's kind;"
                                + " valid: kind(PoolKind."
                                + d.kind().name()
                                + "), or leave kind unset");
            }
            if (spec.heads != d.headNum()) {
                throw new KvioInvalidArgumentException(
                        "heads("
                                + spec.heads
                                + ") differs from the device pool's "
                                + d.headNum()
                                + " heads (forDevice): a host pool's rows must be its device"
                                + " pool's; valid: heads("
                                + d.headNum()
                                + "), or leave heads unset");
            }
            if (spec.headBytes != d.headBytes()) {
                throw new KvioInvalidArgumentException(
                        "headBytes("
                                + spec.headBytes
                                + ") differs from the device pool's "
                                + d.headBytes()
                                + " bytes per head (forDevice): a host pool's rows must be its"
                                + " device pool's; valid: headBytes("
                                + d.headBytes()
                                + "), or leave headBytes unset");
            }
            if (deviceLayers != d.numLayers()) {
                throw new KvioInvalidArgumentException(
                        "deviceLayers("
                                + deviceLayers
                                + ") differs from the device pool's "
                                + d.numLayers()
                                + " layers: forDevice sets deviceLayers to its device pool's"
                                + " layers; valid: deviceLayers("
                                + d.numLayers()
                                + "), or leave deviceLayers unset (layerRange selects a part of"
                                + " them)");
            }
        }

        /**
         * The device pool's memory (asked natively: kind and device) must be what {@code backend}
         * moves on the device side: host memory for cpu (and auto without a GPU or NPU), CUDA
         * device memory for kernel, direct, staged (and auto with a GPU), Ascend device memory for
         * kernel_ascend (and auto with an NPU and no GPU). Which backend allocated the device pool
         * does not matter. Refused with KvioUnsupportedException, as a transfer between the pools
         * would be (native UNSUPPORTED).
         */
        private static void checkDeviceMemory(DeviceKvPool device, IoBackend backend) {
            int kind = NativeBridge.poolMemoryKind(device.handle());
            int moved = backend.deviceMemoryKind();
            if (kind == moved) {
                return;
            }
            StringBuilder valid = new StringBuilder();
            for (IoBackend b : IoBackend.values()) {
                if (b.deviceMemoryKind() == kind) {
                    valid.append(valid.length() == 0 ? "" : ", ").append(b.userName());
                }
            }
            throw new KvioUnsupportedException(
                    "the device pool lives on io backend '"
                            + device.backend().userName()
                            + "' in "
                            + memoryName(kind, device.device())
                            + ", but this host pool's io backend '"
                            + backend.userName()
                            + "' moves "
                            + memoryName(moved, -1)
                            + "; use ioBackend(\""
                            + device.backend().userName()
                            + "\") (io backends that move the device pool's memory here: "
                            + valid
                            + ")");
        }

        /**
         * Asks natively (kvio_check_transfer of no indices: a backup of one layer from the device
         * pool into the new host pool) whether a transfer between the two pools can be made; the
         * host pool is closed again when it says no, with the native exception. By then
         * checkDeviceMemory, checkDeviceGeometry, checkCounts and the executor's device check have
         * settled the executor's memory kinds and device, the geometry and the layers, so what is
         * left for it to refuse is a host pool over the device pool's own memory
         * (KvioInvalidArgumentException: the pools share memory), or a device pool or executor
         * closed meanwhile.
         */
        private void checkTransferBetween(KvioExecutor ex, DeviceKvPool device, HostKvPool pool) {
            try {
                NativeBridge.checkTransfer(
                        ex.handle(),
                        device.handle(),
                        pool.handle(),
                        0,
                        0,
                        0,
                        deviceLayerStart,
                        0,
                        1,
                        0,
                        0,
                        0);
            } catch (KvioInvalidArgumentException e) {
                // The native answer speaks of a transfer; here a pool is being built.
                java.util.regex.Matcher shared =
                        java.util.regex.Pattern.compile(
                                        "^the source and destination pools share memory \\(address"
                                                + " (0x[0-9a-f]+) is in both\\)")
                                .matcher(String.valueOf(e.getMessage()));
                if (!shared.find()) {
                    throw e;
                }
                KvioInvalidArgumentException out =
                        new KvioInvalidArgumentException(
                                "the memory given to wrap() overlaps the device pool's (address "
                                        + shared.group(1)
                                        + " is in both): a host pool keeps copies of the device"
                                        + " pool's pages, so it needs memory of its own; wrap a"
                                        + " buffer apart from the device pool's, or let kvio"
                                        + " allocate it (no wrap())");
                out.initCause(e);
                throw out;
            }
        }

        /** "host memory", "CUDA device 0 memory", ... ({@code device} -1: no ordinal). */
        private static String memoryName(int kind, int device) {
            String on = device >= 0 ? " " + device : "";
            if (kind == KvioNative.KVIO_MEMORY_CUDA_DEVICE) {
                return "CUDA device" + on + " memory";
            }
            if (kind == KvioNative.KVIO_MEMORY_ASCEND_DEVICE) {
                return "Ascend device" + on + " memory";
            }
            return "host memory";
        }

        /** Pages, device layers and the layer range: set ones in range, unset ones derivable. */
        private void checkCounts() {
            if (pagesSet && pages < 1) {
                throw new KvioInvalidArgumentException(
                        "pages must be at least 1, got "
                                + pages
                                + ": pages(n) is the host pool's capacity in pages (without it,"
                                + " enough pages for forDevice's device pool's tokens)");
            }
            if (!pagesSet && device == null) {
                throw new KvioInvalidArgumentException(
                        "this host pool's capacity is not set: call pages(n), or"
                                + " forDevice(devicePool) to hold as many tokens as the device"
                                + " pool");
            }
            if (deviceLayers < 1) {
                throw new KvioInvalidArgumentException(
                        "this host pool does not know how many layers the device pools have"
                                + " (deviceLayers is "
                                + deviceLayers
                                + ", valid: at least 1): call forDevice(devicePool) or"
                                + " deviceLayers(n)");
            }
            if (!layerRangeSet) {
                return;
            }
            String call = "layerRange(" + deviceLayerStart + ", " + numLayers + ")";
            if (deviceLayerStart < 0 || deviceLayerStart >= deviceLayers) {
                throw new KvioOutOfRangeException(
                        call
                                + ": deviceLayerStart "
                                + deviceLayerStart
                                + (deviceLayerStart < 0
                                        ? " is negative"
                                        : " is past the device pool's " + deviceLayers + " layers")
                                + " (valid deviceLayerStart: 0 to "
                                + (deviceLayers - 1)
                                + "; deviceLayers from forDevice or deviceLayers(n))");
            }
            long most = deviceLayers - deviceLayerStart;
            String valid =
                    "valid numLayers from deviceLayerStart "
                            + deviceLayerStart
                            + ": 1 to "
                            + most
                            + (numLayers < 1 || numLayers > deviceLayers
                                    ? ""
                                    : "; or, for "
                                            + numLayers
                                            + " layers, deviceLayerStart 0 to "
                                            + (deviceLayers - numLayers));
            if (numLayers < 1) {
                throw new KvioInvalidArgumentException(
                        call
                                + ": numLayers must be at least 1, got "
                                + numLayers
                                + " ("
                                + valid
                                + ")");
            }
            if (numLayers > most) {
                throw new KvioOutOfRangeException(
                        call
                                + ": device layers ["
                                + deviceLayerStart
                                + ", "
                                + (numLayers > Long.MAX_VALUE - deviceLayerStart
                                        ? Long.MAX_VALUE
                                        : deviceLayerStart + numLayers)
                                + ") pass the device pool's "
                                + deviceLayers
                                + " layers (deviceLayers from forDevice or deviceLayers(n)); "
                                + valid);
            }
        }

        /** The io backend: set, else the device pool's, else cpu. */
        private IoBackend backend() {
            return ioBackend != null
                    ? ioBackend
                    : device != null ? device.backend() : IoBackend.CPU;
        }

        /** forDevice's device pool: open, of this pool's geometry, in memory the backend moves. */
        private void checkDevice(IoBackend backend) {
            if (device != null && device.isClosed()) {
                throw new KvioClosedException("the device pool given to forDevice is closed");
            }
            if (device != null) {
                checkDeviceGeometry(device.spec());
                checkDeviceMemory(device, backend);
            }
        }

        /** The layers the pool holds: layerRange's, else every device layer. */
        private long layers() {
            return layerRangeSet ? numLayers : deviceLayers;
        }

        /**
         * pages(n), else as many pages of this pool's page size as hold the device pool's tokens
         * (its page count when the page sizes are equal). Called after the support check, which
         * refuses a page size below 1.
         */
        private long pagesToUse() {
            if (pagesSet) {
                return pages;
            }
            PoolSpec d = device.spec();
            long tokens = d.numPages() * d.pageSize(); // a built pool's: no overflow
            long pageSize = spec.pageSize;
            return tokens / pageSize + (tokens % pageSize == 0 ? 0 : 1);
        }

        /** The support rules (checkSupport) with this builder's names in their messages. */
        private void checkSupportNamed(IoBackend backend, long layers) {
            try {
                checkSupport(backend, layers);
            } catch (KvioException e) {
                throw PoolSpec.builderNames(
                        e, device == null ? " (or forDevice(devicePool))" : "", SUPPORT_FIELDS);
            }
        }

        /**
         * The spec of the pool {@link #build()} would make now (its layers, pages, page size and
         * rows), checked as build() checks it, without allocating, wrapping or creating an
         * executor. The same exceptions as build() for the configuration (not those of the
         * executor, the wrapped memory or the allocation).
         */
        public PoolSpec spec() {
            IoBackend backend = backend();
            checkDevice(backend);
            checkCounts();
            long layers = layers();
            checkSupportNamed(backend, layers);
            return this.spec.layers(layers).pages(pagesToUse()).build();
        }

        /**
         * The bytes of host memory the pool {@link #build()} would make now holds: {@code
         * spec().totalBytes()}, all components one after the other; what {@link #wrap(long, long)}
         * and {@link #wrap(ByteBuffer)} need at least (e.g. to allocate a MemorySegment for
         * Segments.wrapHostPool). Allocates nothing; throws what {@link #spec()} throws.
         */
        public long requiredBytes() {
            return spec().totalBytes();
        }

        /**
         * Checks the configuration (support rules), then allocates the host memory.
         *
         * @throws KvioInvalidArgumentException for a configuration no transfer could use: with
         *     forDevice, a kind, heads, headBytes or deviceLayers other than the device pool's, or
         *     wrapped memory the device pool's memory overlaps; a count out of range; an executor
         *     of another io backend or device; a private executor of more than 1024 threads
         * @throws KvioOutOfRangeException for a layerRange outside the device pool's layers
         * @throws KvioUnsupportedException when this host pool's io backend cannot move the device
         *     pool's memory (its kind): the exception a transfer between the two pools throws for
         *     the same refusal; for a combination of kind, layout and granularity no backend
         *     supports (an mla pool in page_head); or for threads(n), n above 0, where the executor
         *     build() makes cannot honour it (see {@link #threads(int)})
         * @throws KvioUnavailableException when the io backend cannot run on this machine (a GPU
         *     backend without a GPU: the message lists the backends available here)
         * @throws KvioOutOfMemoryException when the host memory cannot be allocated (or pinned)
         * @throws KvioClosedException when the device pool, the executor or wrapped memory is
         *     closed
         */
        public HostKvPool build() {
            IoBackend backend = backend();
            checkDevice(backend);
            checkCounts();
            long layers = layers();
            if (executor != null && executor.backend() != backend) {
                throw new KvioInvalidArgumentException(
                        "the executor runs io backend '"
                                + executor.backend().userName()
                                + "' but this host pool uses io backend '"
                                + backend.userName()
                                + "'");
            }
            // The device whose pools this host pool serves: the device pool's, else the
            // executor's, else device 0 (-1 on cpu, whose memory is the host's).
            int ordinal =
                    !backend.isDevice()
                            ? -1
                            : device != null
                                    ? device.device()
                                    : executor != null ? executor.device() : 0;
            if (executor != null && device != null && executor.device() != ordinal) {
                throw new KvioInvalidArgumentException(
                        "the executor runs on device "
                                + executor.device()
                                + " but the device pool is on device "
                                + ordinal
                                + "; use KvioExecutor.onDevice(IoBackend."
                                + backend.name()
                                + ", "
                                + ordinal
                                + ")");
            }
            if (privateExecutor) {
                checkThreads(backend, threads, ordinal);
            }
            if (wrapping && wrapAlive != null && !wrapAlive.getAsBoolean()) {
                throw new KvioClosedException(
                        "memory, "
                                + wrapName
                                + ", is no longer alive: its arena was closed before build()");
            }
            checkSupportNamed(backend, layers);
            PoolSpec spec = this.spec.layers(layers).pages(pagesToUse()).build();
            KvioExecutor ex;
            boolean owns;
            if (executor != null) {
                ex = executor;
                owns = false;
                executor.handle(); // closed check
            } else if (privateExecutor) {
                ex =
                        ordinal > 0
                                ? KvioExecutor.onDevice(backend, ordinal)
                                : KvioExecutor.create(backend, threads);
                owns = true;
            } else {
                ex = KvioExecutor.shared(backend, ordinal);
                owns = false;
            }
            try {
                HostKvPool pool =
                        new HostKvPool(
                                spec,
                                backend,
                                wrapping
                                        ? wrapNative(spec, backend, Math.max(ordinal, 0))
                                        : KvPool.allocateCollecting(
                                                backend.hostMemoryKind(),
                                                () ->
                                                        NativeBridge.poolAllocate(
                                                                spec,
                                                                backend.hostMemoryKind(),
                                                                Math.max(ordinal, 0))),
                                !wrapping,
                                deviceLayerStart,
                                deviceLayers,
                                ex,
                                owns,
                                strictLayers);
                pool.keepReachable(wrapMemory, wrapAlive, wrapName);
                if (device != null) {
                    try {
                        checkTransferBetween(ex, device, pool);
                    } catch (RuntimeException e) {
                        pool.closePool(); // the executor, if owned, is closed below
                        throw e;
                    }
                }
                return pool;
            } catch (RuntimeException e) {
                if (owns) {
                    ex.close();
                }
                throw e;
            }
        }

        /**
         * The native pool over the wrapped memory. Its size is named as the caller gave it: {@code
         * sizeBytes} for wrap(address, sizeBytes), {@code memory.remaining()} for a ByteBuffer,
         * {@code memory.byteSize()} for a MemorySegment (Segments.wrapHostPool).
         */
        private long wrapNative(PoolSpec spec, IoBackend backend, int device) {
            try {
                return NativeBridge.poolWrap(
                        spec, backend.hostMemoryKind(), device, wrapAddress, wrapBytes);
            } catch (KvioException e) {
                if (wrapMemory == null) {
                    throw e;
                }
                throw KvioException.renamed(
                        e,
                        "sizeBytes",
                        wrapMemory instanceof ByteBuffer
                                ? "memory.remaining()"
                                : "memory.byteSize()");
            }
        }
    }
}
