/*
 * Entry points that are not tied to one pool: the version, the general transfer (any pool to
 * any pool, any layouts, a layer range on each side) and the support-rule check that host pools
 * run at configuration time. Arguments are validated in Java where that is cheap (nulls, closed
 * objects, lengths, backends); layer ranges and per-index checks run natively (their messages in
 * the caller's names) before any byte moves.
 */
package io.kvio;

import java.lang.ref.Reference;
import java.util.Objects;
import jdk.jfr.FlightRecorder;

public final class Kvio {
    /** Version of this Java API; the native library must report the same (checked at load). */
    public static final String VERSION = "0.2.0";

    private Kvio() {}

    /** The native library's version (equal to VERSION once loaded). */
    public static String version() {
        return NativeBridge.nativeVersion();
    }

    /**
     * How many CUDA devices kvio can use here (ordinals 0 to count - 1, for {@link
     * DeviceKvPool#allocate(PoolSpec, IoBackend, int)} and {@link KvioExecutor#onDevice}); 0
     * without a CUDA build, driver or device, and then {@code
     * IoBackend.KERNEL.unavailabilityCause()} says which. Never throws for that.
     */
    public static int cudaDeviceCount() {
        NativeBridge.ensureLoaded();
        return NativeBridge.deviceCount(true);
    }

    /**
     * How many Ascend NPUs kvio can use here; 0 without CANN's runtime or an NPU, and then {@code
     * IoBackend.KERNEL_ASCEND.unavailabilityCause()} says which. Never throws for that.
     */
    public static int ascendDeviceCount() {
        NativeBridge.ensureLoaded();
        return NativeBridge.deviceCount(false);
    }

    /** Where the JNI library was loaded from (diagnostics). */
    public static String nativeLibraryPath() {
        NativeBridge.ensureLoaded();
        return NativeBridge.libraryPath();
    }

    /**
     * The device number of host memory, on every call that takes or reports one: {@link
     * DeviceKvPool#allocate(PoolSpec, IoBackend, int)} and the wrap methods on cpu, {@link
     * DeviceKvPool#device()} of a pool in host memory, {@link KvioExecutor#shared(IoBackend, int)}
     * and {@link KvioExecutor#device()} on cpu.
     */
    public static final int HOST_DEVICE = -1;

    /**
     * Submits the general transfer: for each index pair i and each layer {@code j < numLayers},
     * every component's row of token srcIndices[i] in src layer srcLayerStart + j is copied to
     * token dstIndices[i] in dst layer dstLayerStart + j. Index lists may be closed once this
     * returns. Empty index lists give an already completed Transfer of 0 bytes (after every other
     * check).
     */
    public static Transfer transfer(
            KvioExecutor executor,
            KvPool src,
            KvPool dst,
            TokenIndices srcIndices,
            TokenIndices dstIndices,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers) {
        return transfer(
                executor,
                src,
                dst,
                IndexArg.of("srcIndices", srcIndices),
                IndexArg.of("dstIndices", dstIndices),
                srcLayerStart,
                dstLayerStart,
                numLayers);
    }

    /**
     * {@link #transfer(KvioExecutor, KvPool, KvPool, TokenIndices, TokenIndices, long, long, long)}
     * with index arrays, copied for this call only (docs/benchmarks.md gives the cost).
     */
    public static Transfer transfer(
            KvioExecutor executor,
            KvPool src,
            KvPool dst,
            long[] srcIndices,
            long[] dstIndices,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers) {
        return transfer(
                executor,
                src,
                dst,
                IndexArg.of("srcIndices", srcIndices),
                IndexArg.of("dstIndices", dstIndices),
                srcLayerStart,
                dstLayerStart,
                numLayers);
    }

    /** Like the long[] form, with int[] index arrays (widened to int64). */
    public static Transfer transfer(
            KvioExecutor executor,
            KvPool src,
            KvPool dst,
            int[] srcIndices,
            int[] dstIndices,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers) {
        return transfer(
                executor,
                src,
                dst,
                IndexArg.of("srcIndices", srcIndices),
                IndexArg.of("dstIndices", dstIndices),
                srcLayerStart,
                dstLayerStart,
                numLayers);
    }

    private static Transfer transfer(
            KvioExecutor executor,
            KvPool src,
            KvPool dst,
            IndexArg srcIndices,
            IndexArg dstIndices,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers) {
        return transfer(
                executor,
                src,
                dst,
                srcIndices,
                dstIndices,
                srcLayerStart,
                dstLayerStart,
                numLayers,
                0,
                0,
                0);
    }

    private static Transfer transfer(
            KvioExecutor executor,
            KvPool src,
            KvPool dst,
            IndexArg srcIndices,
            IndexArg dstIndices,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers,
            int flags,
            int ctaBudget,
            int warpsPerCta) {
        Objects.requireNonNull(executor, "executor");
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(dst, "dst");
        ensureOpen("src", src);
        ensureOpen("dst", dst);
        long executorHandle = executor.handle();
        // The layer ranges, and whether the executor moves each pool's memory (kind and device),
        // are checked natively by the submission (its message in the caller's names): the memory
        // decides, not the backend that allocated a device pool.
        try {
            return submit(
                    executorHandle,
                    executor.backend(),
                    src,
                    dst,
                    srcIndices,
                    dstIndices,
                    true,
                    srcLayerStart,
                    dstLayerStart,
                    numLayers,
                    flags,
                    ctaBudget,
                    warpsPerCta,
                    NO_LAYERS);
        } finally {
            // Only its handle is used from here on: collected during the submission, an executor
            // the caller does not keep would be closed by its Cleaner under it.
            Reference.reachabilityFence(executor);
        }
    }

    /**
     * The general transfer described by name, as HostKvPool's requests are: {@code
     * Kvio.request(executor, src, dst).srcIndices(s).dstIndices(d).layers(n).submit()} is {@link
     * #transfer(KvioExecutor, KvPool, KvPool, TokenIndices, TokenIndices, long, long, long)
     * transfer(executor, src, dst, s, d, 0, 0, n)}, with no positional longs to swap, and it can
     * mark the transfer as overlapping compute and give it its own launch shape.
     */
    public static Request request(KvioExecutor executor, KvPool src, KvPool dst) {
        return new Request(
                Objects.requireNonNull(executor, "executor"),
                Objects.requireNonNull(src, "src"),
                Objects.requireNonNull(dst, "dst"));
    }

    /**
     * A general transfer being described ({@link #request}): both index lists and the layer count
     * must be set; the layer starts default to 0. Submitted as {@link #transfer(KvioExecutor,
     * KvPool, KvPool, TokenIndices, TokenIndices, long, long, long)} is, with the same checks and
     * messages. A request may be submitted again after changing it; it is not thread-safe.
     */
    public static final class Request {
        private final KvioExecutor executor;
        private final KvPool src;
        private final KvPool dst;
        private IndexArg srcIndices;
        private IndexArg dstIndices;
        private long srcLayerStart;
        private long dstLayerStart;
        private long numLayers;
        private boolean layersSet;
        private boolean overlapsCompute;
        private boolean queueOnly;
        private int ctaBudget; // 0 or less: the executor's setting
        private int warpsPerCta; // 0 or less: the executor's setting

        private Request(KvioExecutor executor, KvPool src, KvPool dst) {
            this.executor = executor;
            this.src = src;
            this.dst = dst;
        }

        /** The source pool's token slots. */
        public Request srcIndices(TokenIndices srcIndices) {
            this.srcIndices = IndexArg.of("srcIndices", srcIndices);
            return this;
        }

        /** The source pool's token slots, copied at submit. */
        public Request srcIndices(long... srcIndices) {
            this.srcIndices = IndexArg.of("srcIndices", srcIndices);
            return this;
        }

        /** The source pool's token slots, copied (widened to int64) at submit. */
        public Request srcIndices(int... srcIndices) {
            this.srcIndices = IndexArg.of("srcIndices", srcIndices);
            return this;
        }

        /** The destination pool's token slots. */
        public Request dstIndices(TokenIndices dstIndices) {
            this.dstIndices = IndexArg.of("dstIndices", dstIndices);
            return this;
        }

        /** The destination pool's token slots, copied at submit. */
        public Request dstIndices(long... dstIndices) {
            this.dstIndices = IndexArg.of("dstIndices", dstIndices);
            return this;
        }

        /** The destination pool's token slots, copied (widened to int64) at submit. */
        public Request dstIndices(int... dstIndices) {
            this.dstIndices = IndexArg.of("dstIndices", dstIndices);
            return this;
        }

        /** The first source layer (default 0). */
        public Request srcLayerStart(long srcLayerStart) {
            this.srcLayerStart = srcLayerStart;
            return this;
        }

        /** The first destination layer (default 0). */
        public Request dstLayerStart(long dstLayerStart) {
            this.dstLayerStart = dstLayerStart;
            return this;
        }

        /** How many layers, from each side's start, are moved (required). */
        public Request layers(long numLayers) {
            this.numLayers = numLayers;
            this.layersSet = true; // a value below 1 is refused by submit(), naming it
            return this;
        }

        /**
         * Marks the transfer as running beside compute on the device, as {@link
         * HostKvPool.TransferRequest#overlapsCompute()} does.
         */
        public Request overlapsCompute() {
            return overlapsCompute(true);
        }

        /** Sets or clears the overlaps-compute mark. */
        public Request overlapsCompute(boolean overlapsCompute) {
            this.overlapsCompute = overlapsCompute;
            return this;
        }

        /**
         * {@link #submit()} only queues the transfer: this thread copies nothing, as {@link
         * HostKvPool.TransferRequest#queueOnly()} says. Without it the cpu io backend copies a
         * transfer to an idle executor of up to 512 KiB wholly on the submitting thread, and one of
         * up to 8 MiB partly, beside the executor's io threads.
         */
        public Request queueOnly() {
            return queueOnly(true);
        }

        /** Sets or clears queue-only. */
        public Request queueOnly(boolean queueOnly) {
            this.queueOnly = queueOnly;
            return this;
        }

        /**
         * The copy kernel's launch shape for this transfer only, as {@link
         * HostKvPool.TransferRequest#launch(int, int)} gives it: at most {@code ctaBudget} thread
         * blocks (1 to 65535) of {@code warpsPerCta} warps (1 to 32); 0 or less for either keeps
         * the executor's setting ({@link KvioExecutor#setLaunch(int, int)}), not the backend's
         * default (there 0 or less means the default: see setLaunch for the two side by side). Used
         * by the {@link IoBackend#KERNEL} backend, and by {@link IoBackend#AUTO} when it gives the
         * transfer to its kernel; ignored by the others (cpu included, where setLaunch throws
         * KvioUnsupportedException), which still check its limits: {@link #submit()} throws
         * KvioInvalidArgumentException above 65535 CTAs or 32 warps, empty index lists included,
         * before any byte moves. Unlike setLaunch it is accepted on a shared executor.
         */
        public Request launch(int ctaBudget, int warpsPerCta) {
            this.ctaBudget = ctaBudget;
            this.warpsPerCta = warpsPerCta;
            return this;
        }

        /**
         * Validates and submits; index lists may be closed or reused once this returns.
         * KvioInvalidArgumentException when an index list or the layer count was not set. On the
         * cpu io backend a transfer to an idle executor is copied partly on this thread (up to 512
         * KiB wholly, up to 8 MiB beside the io threads), as {@link
         * HostKvPool.TransferRequest#submit()} says, unless {@link #queueOnly()}.
         */
        public Transfer submit() {
            String missing =
                    srcIndices == null
                            ? "srcIndices"
                            : dstIndices == null ? "dstIndices" : !layersSet ? "layers" : null;
            if (missing != null) {
                throw new KvioInvalidArgumentException(
                        missing + " is not set: call " + missing + "(...) before submit()");
            }
            return transfer(
                    executor,
                    src,
                    dst,
                    srcIndices,
                    dstIndices,
                    srcLayerStart,
                    dstLayerStart,
                    numLayers,
                    submitFlags(overlapsCompute, queueOnly),
                    ctaBudget,
                    warpsPerCta);
        }
    }

    static final long[] NO_LAYERS = new long[0];

    /** The KVIO_SUBMIT_* flags of a request's marks. */
    static int submitFlags(boolean overlapsCompute, boolean queueOnly) {
        return (overlapsCompute ? KvioNative.KVIO_SUBMIT_OVERLAPS_COMPUTE : 0)
                | (queueOnly ? KvioNative.KVIO_SUBMIT_QUEUE_ONLY : 0);
    }

    /**
     * Whether this runtime has Flight Recorder, the jdk.jfr module, which a runtime made with jlink
     * may leave out. Without it transfers record no event and touch no jdk.jfr class (the first one
     * used to fail with NoClassDefFoundError: jdk/jfr/FlightRecorder).
     */
    private static final boolean FLIGHT_RECORDER =
            ModuleLayer.boot().findModule("jdk.jfr").isPresent();

    /**
     * Checks the index lists (open, equal lengths), then submits; empty lists give an already
     * completed Transfer once the pools are known to fit each other. The messages of native errors
     * are rewritten to the caller's names (built only then): the index lists' parameter names, and
     * for "the src pool" / "the dst pool" the pools by parameter and kind ({@code byParameter}:
     * "src (the host pool)", as Kvio.transfer names them) or by kind only ("the host pool", as
     * HostKvPool's requests do). {@code ctaBudget} and {@code warpsPerCta} are the request's launch
     * shape (both 0 or less: none, and the call is the one a request without a shape makes). {@code
     * executorBackend}: the executor's io backend, which a transfer that moves nothing reports.
     */
    static Transfer submit(
            long executor,
            IoBackend executorBackend,
            KvPool src,
            KvPool dst,
            IndexArg srcIndices,
            IndexArg dstIndices,
            boolean byParameter,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers,
            int flags,
            int ctaBudget,
            int warpsPerCta,
            long[] skippedLayers) {
        srcIndices.ensureOpen();
        dstIndices.ensureOpen();
        checkLengths(srcIndices, dstIndices);
        long srcHandle = src.handle();
        long dstHandle = dst.handle();
        ensureMemoryAlive(src, dst, byParameter);
        if (srcIndices.size() == 0) { // nothing to move; checked all the same (natively)
            check(
                    executor,
                    src,
                    dst,
                    srcIndices,
                    dstIndices,
                    byParameter,
                    srcLayerStart,
                    dstLayerStart,
                    numLayers,
                    flags,
                    ctaBudget,
                    warpsPerCta);
            return Transfer.completed(executorBackend, skippedLayers);
        }
        // null unless a recording wants it; while Flight Recorder has not started (or where the
        // runtime has none), the event class is not even loaded (its first load brings in about a
        // hundred jdk.jfr classes, some 100 ms on the first transfer)
        TransferEvent event =
                FLIGHT_RECORDER && FlightRecorder.isInitialized()
                        ? TransferEvent.begin(src, dst, ctaBudget, warpsPerCta)
                        : null;
        long handle;
        long bytes;
        boolean doneOnCpu;
        int status;
        int chosen;
        try {
            NativeBridge.Submitted out =
                    NativeBridge.submit(
                            executor,
                            srcHandle,
                            dstHandle,
                            srcIndices.address(0),
                            dstIndices.address(1),
                            srcIndices.size(),
                            srcLayerStart,
                            dstLayerStart,
                            numLayers,
                            flags,
                            ctaBudget,
                            warpsPerCta);
            handle = out.handle;
            bytes = out.bytes;
            doneOnCpu = out.doneOnCpu;
            status = out.status;
            chosen = out.chosenBackend;
        } catch (KvioException e) {
            throw renamed(
                    e,
                    srcIndices.name(),
                    dstIndices.name(),
                    byParameter,
                    src,
                    dst,
                    ctaBudget,
                    warpsPerCta);
        } finally {
            // The lists' native memory is read by the submit: a list nothing else refers to must
            // not be freed by its Cleaner before that returns.
            Reference.reachabilityFence(srcIndices);
            Reference.reachabilityFence(dstIndices);
            IndexArg.release();
        }
        // What ran it (an auto executor's choice, else the executor's backend), read with the
        // planned bytes.
        return Transfer.submitted(
                executor,
                handle,
                bytes,
                doneOnCpu,
                status,
                event,
                IoBackend.ofNative(chosen),
                skippedLayers);
    }

    /**
     * Every check {@link #submit} of these arguments would make, index lists included, moving
     * nothing (kvio_check_transfer); throws what the submission would, in the caller's names. For
     * transfers that move nothing: empty lists, a load of a layer the host pool does not hold.
     */
    static void check(
            long executor,
            KvPool src,
            KvPool dst,
            IndexArg srcIndices,
            IndexArg dstIndices,
            boolean byParameter,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers,
            int flags,
            int ctaBudget,
            int warpsPerCta) {
        srcIndices.ensureOpen();
        dstIndices.ensureOpen();
        checkLengths(srcIndices, dstIndices);
        ensureMemoryAlive(src, dst, byParameter);
        long count = srcIndices.size();
        try {
            NativeBridge.checkTransfer(
                    executor,
                    src.handle(),
                    dst.handle(),
                    count == 0 ? 0 : srcIndices.address(0),
                    count == 0 ? 0 : dstIndices.address(1),
                    count,
                    srcLayerStart,
                    dstLayerStart,
                    numLayers,
                    flags,
                    ctaBudget,
                    warpsPerCta);
        } catch (KvioException e) {
            throw renamed(
                    e,
                    srcIndices.name(),
                    dstIndices.name(),
                    byParameter,
                    src,
                    dst,
                    ctaBudget,
                    warpsPerCta);
        } finally {
            Reference.reachabilityFence(srcIndices); // read by the native check, as in submit
            Reference.reachabilityFence(dstIndices);
            IndexArg.release();
        }
    }

    /**
     * KvioClosedException, before any native call, if either pool wraps caller memory whose arena
     * was closed (a host pool over a MemorySegment, or over a ByteBuffer view of one): the copy
     * would read or write freed memory.
     */
    private static void ensureMemoryAlive(KvPool src, KvPool dst, boolean byParameter) {
        // The names are built only for the message: a submit allocates no string.
        if (src.memoryGone()) {
            throw src.memoryGoneException(poolName(byParameter, "src", src));
        }
        if (dst.memoryGone()) {
            throw dst.memoryGoneException(poolName(byParameter, "dst", dst));
        }
    }

    /**
     * The native message with the Java caller's names in place of the C ABI's; a refused launch
     * shape (the natives check its limits: kvio.h's, in one place) is named by the request method
     * that gave it.
     */
    private static KvioException renamed(
            KvioException e,
            String srcName,
            String dstName,
            boolean byParameter,
            KvPool src,
            KvPool dst,
            int ctaBudget,
            int warpsPerCta) {
        String m = e.getMessage();
        if (m == null) {
            return e;
        }
        if (m.startsWith("launch shape ") && (ctaBudget > 0 || warpsPerCta > 0)) {
            m = "launch(" + ctaBudget + ", " + warpsPerCta + "): the " + m;
        }
        String r =
                m.replace("src_indices", srcName)
                        .replace("dst_indices", dstName)
                        .replace("the src pool", poolName(byParameter, "src", src))
                        .replace("the dst pool", poolName(byParameter, "dst", dst))
                        .replaceFirst(
                                "src_pool 0x[0-9a-f]+ is closed \\(or was never opened\\)",
                                poolName(byParameter, "src", src) + " was closed")
                        .replaceFirst(
                                "dst_pool 0x[0-9a-f]+ is closed \\(or was never opened\\)",
                                poolName(byParameter, "dst", dst) + " was closed")
                        .replace("src_layer_start", "srcLayerStart")
                        .replace("dst_layer_start", "dstLayerStart")
                        .replace("num_layers", "numLayers")
                        .replace("(num_indices, the length of ", "(the length of ")
                        .replace("same head_num and head_bytes", "same heads and headBytes");
        return KvioException.reworded(e, r);
    }

    /** "src (the host pool)" by parameter, else "the host pool". */
    private static String poolName(boolean byParameter, String parameter, KvPool pool) {
        String kind = "the " + pool.what();
        return byParameter ? parameter + " (" + kind + ")" : kind;
    }

    /** "this host pool is closed", "device is a closed device pool". */
    static void ensureOpen(String name, KvPool pool) {
        if (pool.isClosed()) {
            throw new KvioClosedException(
                    name.startsWith("this ")
                            ? name + " is closed"
                            : name + " is a closed " + pool.what());
        }
    }

    static void checkLengths(IndexArg a, IndexArg b) {
        long an = a.size();
        long bn = b.size();
        if (an != bn) {
            throw new KvioInvalidArgumentException(
                    a.lengthName()
                            + " has "
                            + a.sizeText()
                            + " but "
                            + b.lengthName()
                            + " has "
                            + b.sizeText()
                            + "; each source slot needs exactly one destination slot");
        }
    }

    static String entries(long n) {
        return n + (n == 1 ? " entry" : " entries");
    }

    /**
     * Checks a host pool configuration against the support rules, on this machine and build:
     * KvioUnavailableException (backend absent, with the cause), KvioUnsupportedException,
     * KvioInvalidArgumentException or KvioOutOfRangeException with what is valid instead.
     */
    public static void checkSupport(
            PoolKind kind,
            KvLayout layout,
            IoBackend backend,
            Granularity granularity,
            long heads,
            long headBytes,
            long pageSize,
            long hostLayers,
            long deviceLayers,
            long deviceLayerStart) {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(layout, "layout");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(granularity, "granularity");
        try {
            NativeBridge.checkSupport(
                    kind,
                    layout,
                    backend,
                    granularity,
                    heads,
                    headBytes,
                    pageSize,
                    hostLayers,
                    deviceLayers,
                    deviceLayerStart);
        } catch (KvioException e) {
            throw KvioException.renamed(e, SUPPORT_PARAMETERS);
        }
    }

    /**
     * kvio_support_query's fields, as the native checks name them, then checkSupport's parameters
     * (a field before any field whose name ends it: host_num_layers before num_layers).
     */
    private static final String[] SUPPORT_PARAMETERS = {
        "host_num_layers", "hostLayers",
        "device_num_layers", "deviceLayers",
        "device_layer_start", "deviceLayerStart",
        "page_size", "pageSize",
        "head_num", "heads",
        "head_bytes", "headBytes",
        "query.kind", "kind",
        "query.layout", "layout",
        "query.io_backend", "backend",
        "query.granularity", "granularity"
    };
}
