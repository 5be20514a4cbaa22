/*
 * The Java side of the JNI bridge, and the only caller of the natives (KvioNative): it loads them
 * and checks their version, marshals enums (by their native values), structs (at KvioNative's
 * offsets) and out-parameters through a per-thread scratch buffer of native memory, and turns
 * every non-OK kvio_status into the typed KvioException carrying the native message
 * (kvio_last_error is thread-local, so it is read right after the failing call, on the same
 * thread). It also owns the Cleaner that frees native objects users forget to close, and the
 * native memory helpers (malloc, free, ByteBuffer views) the API's index lists and pools use.
 */
package io.kvio;

import io.kvio.KvioNative.PoolSpecStruct;
import io.kvio.KvioNative.SubmitOptionsStruct;
import io.kvio.KvioNative.SupportQueryStruct;
import io.kvio.KvioNative.TransferDescStruct;
import io.kvio.KvioNative.TransferInfoStruct;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;

final class NativeBridge {
    static final Cleaner CLEANER =
            Cleaner.create(
                    r -> {
                        Thread t = new Thread(r, "kvio-cleaner");
                        t.setDaemon(true);
                        return t;
                    });

    /**
     * Byte offsets inside the scratch buffer: a struct, three 8-byte out-parameters, then the
     * kvio_transfer_desc and kvio_submit_options of a submit or check (kvio_submit_with,
     * kvio_check_transfer_with; the struct holds the submitted transfer's kvio_transfer_info).
     */
    private static final int STRUCT = 0; // kvio_pool_spec, kvio_support_query, kvio_transfer_info

    private static final int STRUCT_BYTES =
            Math.max(
                    PoolSpecStruct.BYTES,
                    Math.max(SupportQueryStruct.BYTES, TransferInfoStruct.BYTES));
    private static final int OUT0 = STRUCT_BYTES;
    private static final int OUT1 = OUT0 + 8;
    private static final int OUT2 = OUT1 + 8;
    private static final int DESC = OUT2 + 8;
    private static final int OPTIONS = DESC + TransferDescStruct.BYTES;
    private static final int SCRATCH_BYTES = OPTIONS + SubmitOptionsStruct.BYTES;

    private static final String NATIVE_VERSION;

    static {
        if (KvioNative.LOAD_ERROR != null) {
            String platform = platform();
            UnsatisfiedLinkError e =
                    new UnsatisfiedLinkError(
                            loadFailureMessage(
                                    platform, nativeResource(platform), KvioNative.LOAD_ERROR));
            e.initCause(KvioNative.LOAD_ERROR);
            throw e;
        }
        NATIVE_VERSION = KvioNative.kvio_version();
        if (!Kvio.VERSION.equals(NATIVE_VERSION)) {
            throw new UnsatisfiedLinkError(
                    "kvio: the native library "
                            + KvioNative.LIBRARY_PATH
                            + " is version "
                            + NATIVE_VERSION
                            + " but the Java API is version "
                            + Kvio.VERSION
                            + "; rebuild both from one source tree (mvn verify) or fix the class path");
        }
    }

    private NativeBridge() {}

    /**
     * Where the class path holds the JNI library for {@code platform}
     * (io/kvio/&lt;platform&gt;/libjniKvioNative.so, which the natives JAR carries), or null if it
     * holds none.
     */
    private static java.net.URL nativeResource(String platform) {
        try {
            return KvioNative.class.getResource(
                    "/io/kvio/" + platform + "/" + System.mapLibraryName("jniKvioNative"));
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * The message of the UnsatisfiedLinkError thrown when the natives did not load. {@code
     * library}: where the class path holds the JNI library for {@code platform}, null if nowhere.
     * Without it the natives JAR is missing, and the message says which JAR to add. With it the JAR
     * is there and loading itself failed (a system library or symbol the library needs is missing,
     * such as a newer libstdc++; a library of another architecture), so the message leads with the
     * cause's own words and does not send the reader after a JAR they have.
     */
    static String loadFailureMessage(String platform, java.net.URL library, Throwable cause) {
        if (library == null) {
            return "kvio: could not load the native libraries (libkvio.so,"
                    + " libjniKvioNative.so) for platform "
                    + platform
                    + ". They come in the natives JAR, kvio-"
                    + platform
                    + ".jar (the Maven artifact io.kvio:kvio with classifier "
                    + platform
                    + ", kvio-<version>-"
                    + platform
                    + ".jar in a repository), under io/kvio/"
                    + platform
                    + "/: put it on the class path beside kvio.jar and JavaCPP's"
                    + " JAR (a Maven build: depend on io.kvio:kvio-platform, which"
                    + " brings both). Cause: "
                    + cause;
        }
        return "kvio: "
                + causeChain(cause)
                + " (the native libraries for platform "
                + platform
                + " are on the class path, at "
                + library
                + ", but could not be loaded: a system library or symbol they need is missing"
                + " here, such as a libstdc++ older than the one they were built with, or they"
                + " were built for another machine)";
    }

    /**
     * The messages of {@code t} and its causes, outermost first, each given once (a message its
     * predecessor already contains is left out), ending at a cause seen before: a cycle of causes
     * is printed once.
     */
    static String causeChain(Throwable t) {
        StringBuilder b = new StringBuilder();
        String last = null;
        java.util.Set<Throwable> seen =
                java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (Throwable c = t; c != null && b.length() < 4000 && seen.add(c); c = c.getCause()) {
            String m = c.getMessage() != null ? c.getMessage() : c.getClass().getName();
            if (last != null && last.contains(m)) {
                continue;
            }
            b.append(b.length() == 0 ? "" : "; caused by: ").append(m);
            last = m;
        }
        return b.toString();
    }

    /** JavaCPP's name of this platform ("linux-x86_64"), as the natives JAR's classifier. */
    private static String platform() {
        try {
            return org.bytedeco.javacpp.Loader.getPlatform();
        } catch (RuntimeException | LinkageError e) {
            return System.getProperty(
                    "org.bytedeco.javacpp.platform",
                    System.getProperty("os.name") + "-" + System.getProperty("os.arch"));
        }
    }

    /** Forces loading (and the version check). */
    static void ensureLoaded() {}

    static String nativeVersion() {
        return NATIVE_VERSION;
    }

    static String libraryPath() {
        return KvioNative.LIBRARY_PATH;
    }

    // ---- scratch memory ----

    private static final class Scratch {
        final ByteBuffer buffer =
                ByteBuffer.allocateDirect(SCRATCH_BYTES).order(ByteOrder.nativeOrder());
        final long address = new Pointer(buffer).address();
        final Submitted submitted = new Submitted();

        Scratch() {
            // kvio_submit_options' fields that are the same on every call (putTransfer writes the
            // others; reserved stays 0 from allocateDirect): the version Java maps, host indices.
            buffer.putInt(OPTIONS + SubmitOptionsStruct.STRUCT_SIZE, SubmitOptionsStruct.BYTES);
            buffer.putInt(
                    OPTIONS + SubmitOptionsStruct.INDICES_MEMORY, KvioNative.KVIO_INDICES_HOST);
        }
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    // ---- status mapping ----

    static void check(int status) {
        if (status != KvioNative.KVIO_STATUS_OK) {
            throw error(status);
        }
    }

    /**
     * The exception for a failed call; must run on the failing thread, before any other kvio call.
     */
    static KvioException error(int status) {
        String message = KvioNative.kvio_last_error();
        if (message == null || message.isEmpty()) {
            message = "kvio call failed with status " + KvioNative.kvio_status_name(status);
        }
        return KvioException.of(KvioException.Status.of(status), message);
    }

    // ---- names, version, support ----

    static String name(int table, int value) {
        return KvioNative.kvio_name(table, value);
    }

    static int parseName(int table, String text) {
        Scratch s = SCRATCH.get();
        check(KvioNative.kvio_parse_name(table, text, s.address + OUT0));
        return s.buffer.getInt(OUT0);
    }

    /**
     * What kvio_cuda_device_count ({@code cuda}) or kvio_ascend_device_count answers: the count, or
     * 0 when the runtime or a device is missing (that status is not an error here).
     */
    static int deviceCount(boolean cuda) {
        Scratch s = SCRATCH.get();
        s.buffer.putInt(OUT0, 0);
        int status =
                cuda
                        ? KvioNative.kvio_cuda_device_count(s.address + OUT0)
                        : KvioNative.kvio_ascend_device_count(s.address + OUT0);
        return status == KvioNative.KVIO_STATUS_OK ? s.buffer.getInt(OUT0) : 0;
    }

    /** null when available, else the native cause. */
    static String backendUnavailabilityCause(IoBackend backend) {
        int status = KvioNative.kvio_backend_available(backend.nativeValue());
        if (status == KvioNative.KVIO_STATUS_OK) {
            return null;
        }
        String message = KvioNative.kvio_last_error();
        return message == null || message.isEmpty() ? KvioNative.kvio_status_name(status) : message;
    }

    static void checkSupport(
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
        Scratch s = SCRATCH.get();
        ByteBuffer b = s.buffer;
        b.putInt(STRUCT + SupportQueryStruct.KIND, kind.nativeValue());
        b.putInt(STRUCT + SupportQueryStruct.LAYOUT, layout.nativeValue());
        b.putInt(STRUCT + SupportQueryStruct.IO_BACKEND, backend.nativeValue());
        b.putInt(STRUCT + SupportQueryStruct.GRANULARITY, granularity.nativeValue());
        b.putLong(STRUCT + SupportQueryStruct.HEAD_NUM, heads);
        b.putLong(STRUCT + SupportQueryStruct.HEAD_BYTES, headBytes);
        b.putLong(STRUCT + SupportQueryStruct.PAGE_SIZE, pageSize);
        b.putLong(STRUCT + SupportQueryStruct.HOST_NUM_LAYERS, hostLayers);
        b.putLong(STRUCT + SupportQueryStruct.DEVICE_NUM_LAYERS, deviceLayers);
        b.putLong(STRUCT + SupportQueryStruct.DEVICE_LAYER_START, deviceLayerStart);
        check(KvioNative.kvio_check_support(s.address + STRUCT));
    }

    // ---- pools ----

    private static long putSpec(Scratch s, PoolSpec spec) {
        ByteBuffer b = s.buffer;
        b.putInt(STRUCT + PoolSpecStruct.KIND, spec.kind().nativeValue());
        b.putInt(STRUCT + PoolSpecStruct.LAYOUT, spec.layout().nativeValue());
        b.putLong(STRUCT + PoolSpecStruct.NUM_LAYERS, spec.numLayers());
        b.putLong(STRUCT + PoolSpecStruct.NUM_PAGES, spec.numPages());
        b.putLong(STRUCT + PoolSpecStruct.PAGE_SIZE, spec.pageSize());
        b.putLong(STRUCT + PoolSpecStruct.HEAD_NUM, spec.headNum());
        b.putLong(STRUCT + PoolSpecStruct.HEAD_BYTES, spec.headBytes());
        return s.address + STRUCT;
    }

    static long componentBytes(PoolSpec spec) {
        Scratch s = SCRATCH.get();
        check(KvioNative.kvio_pool_component_bytes(putSpec(s, spec), s.address + OUT0));
        return s.buffer.getLong(OUT0);
    }

    /** memoryKind: KvioNative.KVIO_MEMORY_*; device: the device ordinal for device kinds. */
    static long poolAllocate(PoolSpec spec, int memoryKind, int device) {
        Scratch s = SCRATCH.get();
        check(
                KvioNative.kvio_pool_allocate_memory(
                        putSpec(s, spec), memoryKind, device, s.address + OUT0));
        return s.buffer.getLong(OUT0);
    }

    static long poolWrap(PoolSpec spec, int memoryKind, int device, long address, long sizeBytes) {
        checkNotNegative(sizeBytes, "sizeBytes");
        Scratch s = SCRATCH.get();
        checkNamed(
                KvioNative.kvio_pool_wrap_memory(
                        putSpec(s, spec), memoryKind, device, address, sizeBytes, s.address + OUT0),
                "size_bytes",
                "sizeBytes");
        return s.buffer.getLong(OUT0);
    }

    /**
     * A size the C ABI takes unsigned: a negative one would read as a huge size there, and its
     * message would show that (e.g. a pool that "wraps around the address space").
     */
    private static void checkNotNegative(long bytes, String name) {
        if (bytes < 0) {
            throw new KvioInvalidArgumentException(
                    name + " must be at least 0, got " + bytes + " (a size in bytes)");
        }
    }

    /**
     * check(status), with the C parameter names in its message as the Java ones: {@code names}
     * holds pairs, C name then Java name.
     */
    private static void checkNamed(int status, String... names) {
        if (status != KvioNative.KVIO_STATUS_OK) {
            throw KvioException.renamed(error(status), names);
        }
    }

    /** One of the C ABI's wraps over a table of addresses (components or layers). */
    @FunctionalInterface
    interface TableWrap {
        int wrap(
                long spec,
                int memoryKind,
                int device,
                long table,
                long entries,
                long bytesEach,
                long poolOut);
    }

    /** kvio_pool_wrap_components_memory: one address per component. */
    static final TableWrap WRAP_COMPONENTS =
            (spec, kind, device, table, n, bytesEach, out) ->
                    KvioNative.kvio_pool_wrap_components_memory(
                            spec, kind, device, table, (int) n, bytesEach, out);

    /** kvio_pool_wrap_layer_table_memory: one address per (component, layer). */
    static final TableWrap WRAP_LAYERS = KvioNative::kvio_pool_wrap_layer_table_memory;

    /** A pool over caller memory at the table's addresses, each {@code bytesEach} long. */
    static long poolWrapTable(
            TableWrap wrap,
            PoolSpec spec,
            int memoryKind,
            int device,
            long[] addresses,
            long bytesEach) {
        checkNotNegative(bytesEach, "bytesEach");
        long table = copyToNative(addresses);
        try {
            Scratch s = SCRATCH.get();
            checkNamed(
                    wrap.wrap(
                            putSpec(s, spec),
                            memoryKind,
                            device,
                            table,
                            addresses.length,
                            bytesEach,
                            s.address + OUT0),
                    "bytes_each",
                    "bytesEach",
                    "num_components",
                    "componentAddresses.length",
                    "num_entries",
                    "layerAddresses.length",
                    "component_addresses",
                    "componentAddresses",
                    "layer_addresses",
                    "layerAddresses");
            return s.buffer.getLong(OUT0);
        } finally {
            free(table);
        }
    }

    /**
     * {@code query(handle)}, closing the handle with {@code close} if the query throws: the first
     * native call of a constructor that has just taken ownership of a handle.
     */
    static <T> T queryOrClose(long handle, LongFunction<T> query, LongConsumer close) {
        try {
            return query.apply(handle);
        } catch (RuntimeException e) {
            close.accept(handle);
            throw e;
        }
    }

    /** A Cleaner action calling {@code close(handle)}; it holds nothing but the handle. */
    static Runnable closing(LongConsumer close, long handle) {
        return () -> close.accept(handle);
    }

    /** The pool's memory kind (KvioNative.KVIO_MEMORY_*), as kvio_pool_memory reports it. */
    static int poolMemoryKind(long pool) {
        Scratch s = SCRATCH.get();
        check(KvioNative.kvio_pool_memory(pool, s.address + OUT0, 0));
        return s.buffer.getInt(OUT0);
    }

    /** The device ordinal of the pool's memory; -1 for host memory. */
    static int poolDevice(long pool) {
        Scratch s = SCRATCH.get();
        check(KvioNative.kvio_pool_memory(pool, 0, s.address + OUT0));
        return s.buffer.getInt(OUT0);
    }

    static void executorSetLaunch(long executor, int ctaBudget, int warpsPerCta) {
        check(KvioNative.kvio_executor_set_launch(executor, ctaBudget, warpsPerCta));
    }

    static long transferCudaEvent(long transfer) {
        return queryOut(KvioNative::kvio_transfer_cuda_event, transfer).getLong(OUT0);
    }

    static long transferAscendEvent(long transfer) {
        return queryOut(KvioNative::kvio_transfer_ascend_event, transfer).getLong(OUT0);
    }

    /** A C ABI query of one handle that writes its answer through an out pointer. */
    @FunctionalInterface
    private interface OutQuery {
        int call(long handle, long out);
    }

    /** Runs the query into this thread's scratch; the answer is at OUT0 of the buffer returned. */
    private static ByteBuffer queryOut(OutQuery query, long handle) {
        Scratch s = SCRATCH.get();
        check(query.call(handle, s.address + OUT0));
        return s.buffer;
    }

    /** {address, bytes} of every region of the pool. */
    static long[][] poolRegions(long pool) {
        Scratch s = SCRATCH.get();
        check(
                KvioNative.kvio_pool_region(
                        pool, 0, s.address + OUT0, s.address + OUT1, s.address + OUT2));
        int count = (int) s.buffer.getLong(OUT2);
        long[][] regions = new long[count][];
        regions[0] = new long[] {s.buffer.getLong(OUT0), s.buffer.getLong(OUT1)};
        for (int r = 1; r < count; r++) {
            check(KvioNative.kvio_pool_region(pool, r, s.address + OUT0, s.address + OUT1, 0));
            regions[r] = new long[] {s.buffer.getLong(OUT0), s.buffer.getLong(OUT1)};
        }
        return regions;
    }

    /**
     * Closes a handle; a handle that is already gone is not an error here (close is idempotent).
     */
    static void poolClose(long pool) {
        KvioNative.kvio_pool_close(pool);
    }

    /**
     * Closes a handle if still open and waits until kvio no longer uses the pool's memory: true
     * then, false on timeout (timeoutNs < 0: no limit).
     */
    static boolean poolCloseWait(long pool, long timeoutNs) {
        int status = KvioNative.kvio_pool_close_wait(pool, timeoutNs);
        if (status == KvioNative.KVIO_STATUS_TIMEOUT) {
            return false;
        }
        check(status);
        return true;
    }

    /**
     * Backs every page of the pool's pageable host memory with physical memory, keeping its bytes
     * (kvio_pool_prefault; KvPool.prefault() says what each failure means).
     */
    static void poolPrefault(long pool) {
        check(KvioNative.kvio_pool_prefault(pool));
    }

    /**
     * Copies {@code bytes} between [offset, offset + bytes) of a pool region and host memory at
     * {@code hostAddress}, synchronously; toHost: pool to host.
     */
    static void poolCopy(
            long pool, int region, long offset, long hostAddress, long bytes, boolean toHost) {
        check(
                KvioNative.kvio_pool_copy(
                        pool,
                        region,
                        offset,
                        hostAddress,
                        bytes,
                        toHost
                                ? KvioNative.KVIO_COPY_POOL_TO_HOST
                                : KvioNative.KVIO_COPY_HOST_TO_POOL));
    }

    /**
     * The address of element 0 of a direct buffer (the JNI library is loaded first: JavaCPP's
     * Pointer natives live in it).
     */
    static long directAddress(java.nio.Buffer buffer) {
        return new Pointer(buffer).address();
    }

    // ---- executors ----

    static long executorCreate(IoBackend backend, int threads) {
        Scratch s = SCRATCH.get();
        check(KvioNative.kvio_executor_create(backend.nativeValue(), threads, s.address + OUT0));
        return s.buffer.getLong(OUT0);
    }

    /** kvio.h's KVIO_CUDA_OWN_STREAM and KVIO_ASCEND_OWN_STREAM (UINT64_MAX): not a stream. */
    static final long OWN_STREAM = -1L;

    /** An executor of a device backend on {@code device}, on a stream kvio creates. */
    static long executorCreateOnDevice(IoBackend backend, int device) {
        return executorCreateOnStream(backend, device, OWN_STREAM);
    }

    /**
     * An executor of a device backend on {@code device}, ordering its work on the caller's {@code
     * stream} (a cudaStream_t or an aclrtStream; 0: the default stream).
     */
    static long executorCreateOnStream(IoBackend backend, int device, long stream) {
        Scratch s = SCRATCH.get();
        if (backend.isAscend()) { // kernel_ascend, or auto on a machine with NPUs and no GPU
            check(
                    KvioNative.kvio_executor_create_on_npu(
                            backend.nativeValue(), device, stream, s.address + OUT0));
        } else {
            check(
                    KvioNative.kvio_executor_create_cuda(
                            backend.nativeValue(), device, stream, 0, 0, s.address + OUT0));
        }
        return s.buffer.getLong(OUT0);
    }

    /** The stream a device executor orders its work on (a cudaStream_t or an aclrtStream). */
    static long executorStream(IoBackend backend, long executor) {
        OutQuery query =
                backend.isAscend()
                        ? KvioNative::kvio_executor_ascend_stream
                        : KvioNative::kvio_executor_cuda_stream;
        return queryOut(query, executor).getLong(OUT0);
    }

    /** An auto executor's calibration, in the calibration file format (docs/cuda.md). */
    static String executorAutoCalibration(long executor) {
        String text = KvioNative.kvio_executor_auto_calibration(executor);
        if (text == null) { // why: kvio_last_status (CLOSED for an executor closed meanwhile)
            int status = KvioNative.kvio_last_status();
            throw error(
                    status != KvioNative.KVIO_STATUS_OK
                            ? status
                            : KvioException.Status.INTERNAL.code());
        }
        return text;
    }

    static void executorSetAutoCalibration(long executor, String text) {
        check(KvioNative.kvio_executor_set_auto_calibration(executor, text));
    }

    static int executorThreads(long executor) {
        return queryOut(KvioNative::kvio_executor_threads, executor).getInt(OUT0);
    }

    /** The KVIO_BACKEND_* value the native executor was created for (kvio_executor_backend). */
    static int executorBackend(long executor) {
        return queryOut(KvioNative::kvio_executor_backend, executor).getInt(OUT0);
    }

    static void executorClose(long executor) {
        KvioNative.kvio_executor_close(executor);
    }

    // ---- transfers ----

    /**
     * What {@link #submit} reports: the calling thread's own instance, overwritten by its next
     * submit, so a submit allocates nothing; read it before the thread's next submit.
     */
    static final class Submitted {
        /** The transfer handle. */
        long handle;

        /** The planned bytes. */
        long bytes;

        /** Done when submit returned, on the cpu backend (it ran on the submitting thread). */
        boolean doneOnCpu;

        /** Its status then (meaningful when doneOnCpu). */
        int status;

        /** The backend that runs it (what auto chose, else the executor's), a native value. */
        int chosenBackend;
    }

    /**
     * kvio_check_transfer_with: every check the submission of these arguments would make, moving
     * nothing; throws what that submission would. With count 0 (the index addresses unread) the
     * checks that need no index. A launch shape (ctaBudget or warpsPerCta above 0; 0 or less is the
     * executor's setting) is checked with the rest.
     */
    static void checkTransfer(
            long executor,
            long srcPool,
            long dstPool,
            long srcIndices,
            long dstIndices,
            long count,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers,
            int flags,
            int ctaBudget,
            int warpsPerCta) {
        Scratch s = SCRATCH.get();
        putTransfer(
                s,
                srcPool,
                dstPool,
                srcIndices,
                dstIndices,
                count,
                srcLayerStart,
                dstLayerStart,
                numLayers,
                flags,
                ctaBudget,
                warpsPerCta);
        check(KvioNative.kvio_check_transfer_with(executor, s.address + DESC, s.address + OPTIONS));
    }

    /**
     * Submits with KVIO_SUBMIT_* flags and a launch shape (ctaBudget, warpsPerCta; both 0 or less:
     * none, the executor's setting) by kvio_submit_with over this thread's scratch descriptor and
     * options (nothing allocated); the answer is this thread's {@link Submitted}.
     */
    static Submitted submit(
            long executor,
            long srcPool,
            long dstPool,
            long srcIndices,
            long dstIndices,
            long count,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers,
            int flags,
            int ctaBudget,
            int warpsPerCta) {
        Scratch s = SCRATCH.get();
        putTransfer(
                s,
                srcPool,
                dstPool,
                srcIndices,
                dstIndices,
                count,
                srcLayerStart,
                dstLayerStart,
                numLayers,
                flags,
                ctaBudget,
                warpsPerCta);
        check(
                KvioNative.kvio_submit_with(
                        executor, s.address + DESC, s.address + OPTIONS, s.address + OUT0));
        long transfer = s.buffer.getLong(OUT0);
        // One call for the bytes and whether it is done (a small cpu transfer runs on this thread).
        int status = KvioNative.kvio_transfer_get_info(transfer, s.address + STRUCT);
        if (status != KvioNative.KVIO_STATUS_OK) {
            KvioException e = error(status);
            KvioNative.kvio_transfer_close(transfer);
            throw e;
        }
        ByteBuffer b = s.buffer;
        Submitted out = s.submitted;
        out.handle = transfer;
        out.bytes = b.getLong(STRUCT + TransferInfoStruct.BYTES_MOVED);
        out.chosenBackend = b.getInt(STRUCT + TransferInfoStruct.CHOSEN_BACKEND);
        out.doneOnCpu =
                b.getInt(STRUCT + TransferInfoStruct.DONE) != 0
                        && out.chosenBackend == KvioNative.KVIO_BACKEND_CPU;
        out.status = b.getInt(STRUCT + TransferInfoStruct.STATUS);
        return out;
    }

    /**
     * Fills this thread's scratch kvio_transfer_desc, and the flags and launch shape of its
     * kvio_submit_options (the Scratch set the rest once).
     */
    private static void putTransfer(
            Scratch s,
            long srcPool,
            long dstPool,
            long srcIndices,
            long dstIndices,
            long count,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers,
            int flags,
            int ctaBudget,
            int warpsPerCta) {
        ByteBuffer b = s.buffer;
        b.putLong(DESC + TransferDescStruct.SRC_POOL, srcPool);
        b.putLong(DESC + TransferDescStruct.DST_POOL, dstPool);
        b.putLong(DESC + TransferDescStruct.SRC_INDICES, srcIndices);
        b.putLong(DESC + TransferDescStruct.DST_INDICES, dstIndices);
        b.putLong(DESC + TransferDescStruct.NUM_INDICES, count);
        b.putLong(DESC + TransferDescStruct.SRC_LAYER_START, srcLayerStart);
        b.putLong(DESC + TransferDescStruct.DST_LAYER_START, dstLayerStart);
        b.putLong(DESC + TransferDescStruct.NUM_LAYERS, numLayers);
        b.putInt(OPTIONS + SubmitOptionsStruct.FLAGS, flags);
        b.putInt(OPTIONS + SubmitOptionsStruct.CTA_BUDGET, ctaBudget);
        b.putInt(OPTIONS + SubmitOptionsStruct.WARPS_PER_CTA, warpsPerCta);
    }

    /** The raw status of waiting (OK, TIMEOUT, or the transfer's failure). */
    static int transferWait(long transfer, long timeoutNs) {
        return KvioNative.kvio_transfer_wait(transfer, timeoutNs);
    }

    static boolean transferIsDone(long transfer) {
        int r = KvioNative.kvio_transfer_is_done(transfer);
        if (r < 0) {
            throw error(-r);
        }
        return r == 1;
    }

    static void transferClose(long transfer) {
        KvioNative.kvio_transfer_close(transfer);
    }

    /**
     * Fills {@code event} (a TransferEvent, typed Object so that this class names no jdk.jfr type)
     * from the transfer's kvio_transfer_info; false (event untouched) if the handle is gone. Never
     * throws: observability must not fail a transfer.
     */
    static boolean transferInfo(long transfer, Object event) {
        Scratch s = SCRATCH.get();
        if (KvioNative.kvio_transfer_get_info(transfer, s.address + STRUCT)
                != KvioNative.KVIO_STATUS_OK) {
            return false;
        }
        ((TransferEvent) event).fill(s.buffer, STRUCT);
        return true;
    }

    private static volatile boolean transferTiming;

    /**
     * Makes the natives timestamp transfers from now on (kvio_transfer_timing); called the first
     * time a recording enables the transfer event, and left on (three clock reads per transfer).
     */
    static void enableTransferTiming() {
        if (!transferTiming) {
            KvioNative.kvio_transfer_timing(1);
            transferTiming = true;
        }
    }

    // ---- native memory (JavaCPP's malloc/free; the Pointer natives live in our JNI library) ----

    private static final class RawBytes extends BytePointer {
        RawBytes(long address, long bytes) {
            this.address = address;
            this.capacity = bytes;
            this.limit = bytes;
        }
    }

    static long malloc(long bytes) {
        Pointer p = Pointer.malloc(Math.max(bytes, 1));
        if (p == null || p.isNull()) {
            throw new KvioOutOfMemoryException(
                    "could not allocate " + bytes + " bytes of native memory");
        }
        return p.address();
    }

    static void free(long address) {
        if (address != 0) {
            Pointer.free(new RawBytes(address, 0));
        }
    }

    /**
     * A direct ByteBuffer over [address, address + bytes), native byte order. Does not own the
     * memory.
     */
    static ByteBuffer byteBuffer(long address, int bytes) {
        if (bytes == 0) {
            return ByteBuffer.allocateDirect(0).order(ByteOrder.nativeOrder());
        }
        return new RawBytes(address, bytes).asByteBuffer().order(ByteOrder.nativeOrder());
    }

    private static final int CHUNK_LONGS = 1 << 26; // 512 MiB per ByteBuffer view

    /**
     * One piece of a chunked copy: {@code length} (1 to the chunk size) items from {@code from}.
     */
    @FunctionalInterface
    interface Chunk {
        void copy(int from, int length);
    }

    /**
     * Calls {@code chunk} for [0, total) in order, in pieces of at most {@code max} (> 0) items:
     * every chunked copy of kvio's Java code runs this one loop. It advances by each piece's
     * length, never by {@code max}: from + max passes Integer.MAX_VALUE, and wraps negative, for a
     * total within max of it (a loop that did so wrote a pool and then threw, or never ended),
     * while from + length stays at most total.
     */
    static void forEachChunk(int total, int max, Chunk chunk) {
        int length;
        for (int from = 0; from < total; from += length) {
            length = Math.min(max, total - from);
            chunk.copy(from, length);
        }
    }

    static long copyToNative(long[] values) {
        long address = malloc(values.length * 8L);
        forEachChunk(
                values.length,
                CHUNK_LONGS,
                (from, n) ->
                        byteBuffer(address + from * 8L, n * 8).asLongBuffer().put(values, from, n));
        return address;
    }

    static long copyToNative(int[] values) {
        long address = malloc(values.length * 8L);
        forEachChunk(
                values.length,
                CHUNK_LONGS,
                (from, n) -> {
                    java.nio.LongBuffer out = byteBuffer(address + from * 8L, n * 8).asLongBuffer();
                    for (int i = 0; i < n; i++) {
                        out.put(i, values[from + i]);
                    }
                });
        return address;
    }

    static long getLong(long address) {
        return byteBuffer(address, 8).getLong(0);
    }

    // ---- diagnostics (docs/reliability.md) ----

    /** Open pool, executor and transfer handles, and live host allocations, process-wide. */
    static long[] debugLiveObjects() {
        long address = malloc(32);
        try {
            check(KvioNative.kvio_debug_live_objects(address));
            ByteBuffer b = byteBuffer(address, 32);
            return new long[] {b.getLong(0), b.getLong(8), b.getLong(16), b.getLong(24)};
        } finally {
            free(address);
        }
    }

    /** Host registrations kvio made (of wrapped pinned memory) and has not ended, process-wide. */
    static long debugLiveHostRegistrations() {
        long address = malloc(8);
        try {
            check(KvioNative.kvio_debug_live_host_registrations(address));
            return byteBuffer(address, 8).getLong(0);
        } finally {
            free(address);
        }
    }
}
