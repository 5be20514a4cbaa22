/*
 * An executor of one io backend: the worker threads (cpu) or stream/queue (device backends) that
 * carry out transfers, in submission order. Host pools use the backend's shared executor unless
 * they are given their own. close() waits for submitted transfers, then releases the executor;
 * the shared executors live as long as the process and ignore close().
 */
package io.kvio;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Where transfers run: worker threads for cpu, a stream (CUDA) or queue (Ascend) for the device
 * backends. Transfers of one executor run in submission order.
 *
 * <p><b>Stream ordering (CUDA).</b> The stream kvio creates ({@link #create}, {@link #onDevice},
 * the shared executors) is non-blocking: it does <i>not</i> wait for work on the legacy default
 * stream, and the legacy default stream does not wait for it. Work the caller puts on device memory
 * a transfer reads or writes (a kernel filling the KV cache, a {@code cudaMemcpy}, a {@code
 * cudaMemset}) is therefore not ordered with the transfer unless the caller orders it:
 *
 * <ul>
 *   <li>run kvio on the engine's stream with {@link #onStream}, so transfers queue behind the
 *       engine's work and the engine's later work queues behind them; or
 *   <li>before submitting, finish the producing work (synchronise its stream, or make kvio's stream
 *       wait on it: {@link #nativeStream} is the {@code cudaStream_t} for {@code
 *       cudaStreamWaitEvent}); after submitting, make the consuming stream wait on the transfer's
 *       event ({@link Transfer#cudaEvent()}) or wait for the transfer ({@link Transfer#await()}).
 * </ul>
 *
 * A plain {@code cudaMemcpy} from pageable host memory may also return before its copy to the
 * device has landed. kvio's own GPU tests follow the same rules: they write and read device memory
 * with {@code cudaMemcpyAsync} on the executor's stream and synchronise that stream (docs/cuda.md,
 * "Streams").
 */
public final class KvioExecutor implements AutoCloseable {
    /** Shared executors by (backend, device). */
    private static final Map<Long, KvioExecutor> SHARED = new HashMap<>();

    private final IoBackend backend;
    private final int device;
    private final long handle;
    private final int threads;
    private final boolean shared;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Closer closer;
    private final Cleaner.Cleanable cleanable;

    private KvioExecutor(IoBackend backend, int device, long handle, boolean shared) {
        this.backend = backend;
        this.device = device;
        this.shared = shared;
        this.handle = handle;
        this.threads =
                NativeBridge.queryOrClose(
                        handle, NativeBridge::executorThreads, NativeBridge::executorClose);
        this.closer = shared ? null : new Closer(handle);
        this.cleanable = shared ? null : NativeBridge.CLEANER.register(this, closer);
    }

    /**
     * Closes the native executor: on the calling thread at close(), which waits for its transfers;
     * for a private executor that is never closed, on a kvio background thread of its own, so that
     * waiting for its transfers does not hold up the Cleaner thread every other kvio object is
     * freed by.
     */
    private static final class Closer implements Runnable {
        private final long handle;
        volatile boolean explicit;

        Closer(long handle) {
            this.handle = handle;
        }

        @Override
        public void run() {
            // Without a background thread (none could start), on this thread: a wait here is
            // better than an executor never closed.
            if (explicit || !Background.run(() -> NativeBridge.executorClose(handle))) {
                NativeBridge.executorClose(handle);
            }
        }
    }

    /**
     * A private executor. {@code threads} is the io threads of the backends that run on host
     * threads: cpu, and auto on a machine without a CUDA GPU (for its cpu candidate): 1 to 1024, or
     * {@code <= 0} for one per core (at most 1024). The device backends (kernel, direct, staged,
     * kernel_ascend), and auto on a machine with a CUDA GPU (which chooses among kernel, direct and
     * staged), have no io threads and take {@code threads <= 0} only; they run on device 0 with a
     * stream of their own ({@link #onDevice} chooses the device).
     *
     * @throws KvioInvalidArgumentException for more than 1024 threads
     * @throws KvioUnsupportedException for {@code threads > 0} on a backend without io threads: the
     *     message points to {@link #onDevice(IoBackend, int)}, which a second int argument is
     *     easily mistaken for
     * @throws KvioUnavailableException when the backend cannot run here (the reason is the cause)
     */
    public static KvioExecutor create(IoBackend backend, int threads) {
        Objects.requireNonNull(backend, "backend");
        // Too many is refused first, by every backend alike, so that the exception a caller sees
        // does not depend on whether this machine has a GPU.
        checkThreadCount(threads);
        if (threads > 0 && !backend.hasIoThreads()) {
            throw new KvioUnsupportedException(
                    "io backend '"
                            + backend.userName()
                            + "'"
                            + (backend == IoBackend.AUTO
                                    ? " runs on this machine's CUDA GPU and"
                                    : "")
                            + " has no io threads, so threads must be 0 or less, got "
                            + threads
                            + "; KvioExecutor.create(backend, threads) runs a device backend on"
                            + " device 0: for device "
                            + threads
                            + " use KvioExecutor.onDevice(IoBackend."
                            + backend.name()
                            + ", "
                            + threads
                            + ")");
        }
        backend.ensureAvailability();
        return new KvioExecutor(
                backend,
                backend.isDevice() ? 0 : -1,
                NativeBridge.executorCreate(backend, threads),
                false);
    }

    /** The most io threads an executor takes (kvio.h: kvio_executor_create). */
    static final int MOST_THREADS = 1024;

    /**
     * KvioInvalidArgumentException for more than {@link #MOST_THREADS} threads, whatever the
     * backend: checked before whether the backend has io threads, as the native library does, so
     * that the exception does not depend on whether auto runs on a GPU here.
     */
    static void checkThreadCount(int threads) {
        if (threads > MOST_THREADS) {
            throw new KvioInvalidArgumentException(
                    "threads must be 1 to "
                            + MOST_THREADS
                            + ", or <= 0 for one per online core (at most "
                            + MOST_THREADS
                            + "); got "
                            + threads);
        }
    }

    /**
     * A private executor of a device backend (kernel, direct, staged, auto with a GPU or, without
     * one, with an NPU, kernel_ascend) on device {@code device} (a CUDA device ordinal or an Ascend
     * NPU id), with a stream kvio creates. Its transfers must move pools of that device.
     * KvioUnsupportedException on cpu, which has no devices; KvioInvalidArgumentException for a
     * device that does not exist.
     */
    public static KvioExecutor onDevice(IoBackend backend, int device) {
        return open(backend, device, null, "onDevice");
    }

    /**
     * A private executor of a device backend on device {@code device} that orders its work on the
     * caller's stream (a cudaStream_t for kernel, direct, staged and auto on a GPU, an aclrtStream
     * for kernel_ascend and auto on an NPU without a GPU, whose cpu transfers are not on it). 0 is
     * the default stream, as in the runtimes' own calls (for CUDA the legacy default stream, also
     * 1; torch's default stream is 0). For CUDA, 2, cudaStreamPerThread, is refused: it is another
     * stream on each thread; a CUDA stream of another device, or of a context the caller created
     * (cuCtxCreate), is refused with KvioInvalidArgumentException. The caller keeps the stream
     * alive until this executor is closed. While the stream is being captured into a CUDA or ACL
     * graph (torch.cuda.graph, torch_npu's NPU graphs), a transfer submitted here throws
     * KvioUnsupportedException before anything is queued: transfers cannot be captured; submit
     * before or after the capture.
     */
    public static KvioExecutor onStream(IoBackend backend, int device, long stream) {
        if (stream == NativeBridge.OWN_STREAM) {
            throw new KvioInvalidArgumentException(
                    "stream is -1, the C API's marker for a stream kvio creates, not a stream;"
                            + " pass the engine's stream, or use KvioExecutor.onDevice for a"
                            + " stream kvio creates");
        }
        return open(backend, device, stream, "onStream");
    }

    /** {@code stream}: the caller's, or null for one kvio creates. */
    private static KvioExecutor open(IoBackend backend, int device, Long stream, String method) {
        Objects.requireNonNull(backend, "backend");
        if (!backend.isDevice()) {
            throw new KvioUnsupportedException(
                    "io backend '"
                            + backend.userName()
                            + "' runs on host threads and has no devices or streams; use"
                            + " KvioExecutor.create(IoBackend.CPU, threads) instead of "
                            + method);
        }
        backend.ensureAvailability();
        return new KvioExecutor(
                backend,
                device,
                stream == null
                        ? NativeBridge.executorCreateOnDevice(backend, device)
                        : NativeBridge.executorCreateOnStream(backend, device, stream),
                false);
    }

    /**
     * The process-wide executor of {@code backend}, created on first use: on cpu (and auto without
     * a device) one io thread per core; on a device backend (and auto with a GPU or NPU) device 0,
     * with a stream of its own. It is shared by every host pool built without threads(n) or
     * executor(...) on that backend and device, so its settings cannot be changed ({@link
     * #setLaunch}, {@link #setAutoCalibration} refuse it).
     */
    public static KvioExecutor shared(IoBackend backend) {
        Objects.requireNonNull(backend, "backend");
        return shared(backend, backend.isDevice() ? 0 : -1);
    }

    /**
     * The process-wide executor of a device backend on {@code device} (for cpu, {@link
     * Kvio#HOST_DEVICE}), created on first use.
     */
    public static KvioExecutor shared(IoBackend backend, int device) {
        Objects.requireNonNull(backend, "backend");
        if (!backend.isDevice() && device != -1) {
            throw new KvioUnsupportedException(
                    "io backend '"
                            + backend.userName()
                            + "' has one device, the host: device must be -1 (Kvio.HOST_DEVICE), got "
                            + device);
        }
        long key = ((long) backend.nativeValue() << 32) | (device & 0xFFFFFFFFL);
        synchronized (SHARED) {
            KvioExecutor e = SHARED.get(key);
            if (e == null) {
                backend.ensureAvailability();
                // Every device the same way (device 0 included, so a test on one GPU covers it).
                long handle =
                        backend.isDevice()
                                ? NativeBridge.executorCreateOnDevice(backend, device)
                                : NativeBridge.executorCreate(backend, 0);
                e = new KvioExecutor(backend, device, handle, true);
                SHARED.put(key, e);
            }
            return e;
        }
    }

    public int threads() {
        return threads;
    }

    public IoBackend backend() {
        return backend;
    }

    /**
     * The device this executor runs on (a CUDA device ordinal or an Ascend NPU id); {@link
     * Kvio#HOST_DEVICE} (-1) on cpu.
     */
    public int device() {
        return device;
    }

    /**
     * The stream this executor orders its work on: a cudaStream_t (kernel, direct, staged, auto on
     * a GPU, whose candidates share it) or an aclrtStream (kernel_ascend), e.g. for the engine's
     * compute stream to wait on. KvioUnsupportedException on cpu.
     */
    public long nativeStream() {
        if (!backend.isDevice()) {
            throw new KvioUnsupportedException(
                    "io backend '" + backend.userName() + "' runs on host threads, not a stream");
        }
        return NativeBridge.executorStream(backend, handle());
    }

    public boolean isShared() {
        return shared;
    }

    public boolean isClosed() {
        return closed.get();
    }

    /**
     * The copy kernel's launch shape for transfers submitted from now on: at most {@code ctaBudget}
     * thread blocks (1 to 65535) of {@code warpsPerCta} warps (1 to 32). The copy kernel shares the
     * GPU with the forward pass, so the budget is small by default. On an {@link IoBackend#AUTO}
     * executor it sets its kernel candidate's shape.
     *
     * <p>Here and in a request's {@code launch(ctaBudget, warpsPerCta)} ({@link
     * HostKvPool.TransferRequest#launch(int, int)}, {@link Kvio.Request#launch(int, int)}) the same
     * numbers mean different things:
     *
     * <ul>
     *   <li>0 or less: for setLaunch, the backend's default (kernel 4 CTAs of 16 warps, staged's
     *       gather/scatter 8 of 16); for a request's launch, this executor's setting (what
     *       setLaunch last set, else that default).
     *   <li>cpu, direct, kernel_ascend and auto without a GPU, which launch no copy kernel:
     *       setLaunch throws KvioUnsupportedException; a request's launch is accepted and ignored
     *       (its limits are still checked).
     *   <li>A shared executor: setLaunch throws KvioUnsupportedException (it would change every
     *       pool's transfers); a request's launch is accepted, as it changes no other transfer.
     * </ul>
     *
     * @throws KvioUnsupportedException on cpu, direct, kernel_ascend and auto without a GPU, which
     *     launch no copy kernel; on a shared executor ({@link #shared(IoBackend, int)}, the default
     *     executor of host pools, returned by {@link HostKvPool#executor()}), whose shape is every
     *     such pool's, process-wide: use a private executor ({@link #create}, {@link #onDevice},
     *     {@link HostKvPool.Builder#threads(int)}) or the per-request launch
     * @throws KvioInvalidArgumentException above 65535 CTAs or 32 warps
     */
    public void setLaunch(int ctaBudget, int warpsPerCta) {
        long handle = handle();
        if (backend == IoBackend.KERNEL
                || backend == IoBackend.STAGED
                || (backend == IoBackend.AUTO && backend.isCuda())) { // others: native refusal
            refuseIfShared(
                    "setLaunch",
                    "or give one transfer its own shape with launch(ctaBudget, warpsPerCta) on"
                            + " its request");
        }
        NativeBridge.executorSetLaunch(handle, ctaBudget, warpsPerCta);
    }

    /**
     * The crossovers an {@link IoBackend#AUTO} executor chooses by, in the calibration file format
     * (docs/cuda.md), with where they came from in its first line. KvioUnsupportedException on an
     * executor of another backend.
     */
    public String autoCalibration() {
        return NativeBridge.executorAutoCalibration(handle());
    }

    /**
     * Replaces an {@link IoBackend#AUTO} executor's crossovers for transfers submitted from now on;
     * {@code text} is the calibration file format (docs/cuda.md). Invalid text changes nothing; a
     * NUL character in it is KvioInvalidArgumentException (the native call takes a C string, which
     * would end there and drop what follows). KvioUnsupportedException on an executor of another
     * backend, and on the shared auto executor ({@link #shared(IoBackend)}, the default executor of
     * host pools), whose crossovers are every such pool's, process-wide: give the pools that need
     * other crossovers a private executor ({@link #create}, {@link #onDevice}, {@link
     * HostKvPool.Builder#threads(int)}).
     */
    public void setAutoCalibration(String text) {
        Objects.requireNonNull(text, "text");
        long handle = handle(); // closed first, then not auto, then shared, then the text
        if (backend != IoBackend.AUTO) {
            throw new KvioUnsupportedException(
                    "this is a '"
                            + backend.userName()
                            + "' executor; only 'auto' executors have a calibration");
        }
        refuseIfShared("setAutoCalibration", "");
        int nul = text.indexOf('\0');
        if (nul >= 0) {
            long line = text.substring(0, nul).chars().filter(c -> c == '\n').count() + 1;
            throw new KvioInvalidArgumentException(
                    "the calibration text holds a NUL character at index "
                            + nul
                            + " (line "
                            + line
                            + "); nothing was changed");
        }
        NativeBridge.executorSetAutoCalibration(handle, text);
    }

    /**
     * A setting of a shared executor would change the transfers of every pool using it, process
     * wide (every host pool built without threads(n) or executor(...) on this backend and device):
     * KvioUnsupportedException saying how to get a private one.
     */
    private void refuseIfShared(String method, String perRequest) {
        if (!shared) {
            return;
        }
        String create =
                backend.isDevice()
                        ? "KvioExecutor.onDevice(IoBackend." + backend.name() + ", " + device + ")"
                        : "KvioExecutor.create(IoBackend." + backend.name() + ", threads)";
        throw new KvioUnsupportedException(
                method
                        + " on the shared "
                        + backend.userName()
                        + " executor (KvioExecutor.shared, which HostKvPool.Builder.build() uses"
                        + " unless given threads(n) or executor(...)) would change the transfers"
                        + " of every pool using it, process-wide; nothing was changed. Use a"
                        + " private executor: "
                        + create
                        + ", passed to HostKvPool.Builder.executor(...), or"
                        + " HostKvPool.Builder.threads(0), which gives the pool its own"
                        + (perRequest.isEmpty() ? "" : "; " + perRequest));
    }

    long handle() {
        if (closed.get()) {
            throw new KvioClosedException("this " + backend.userName() + " executor is closed");
        }
        return handle;
    }

    /**
     * Waits for the transfers submitted to this executor, then releases it; a no-op on shared
     * executors. Pools do not depend on it: a transfer lets go of its pools as soon as it
     * completes, so a closed pool's memory is released when its last transfer completes (see {@link
     * KvPool#closeAndWait()}), whether or not anyone waited for that transfer.
     */
    @Override
    public void close() {
        if (!shared && closed.compareAndSet(false, true)) {
            closer.explicit = true;
            cleanable.clean();
        }
        // Reachable until clean() ran here: a Cleaner that ran the action first (this executor
        // unreachable in between) would wait for the transfers on its own thread, and this close
        // return before they completed.
        Reference.reachabilityFence(this);
    }

    @Override
    public String toString() {
        return "KvioExecutor{"
                + backend.userName()
                + (device >= 0 ? ", device=" + device : "")
                + ", threads="
                + threads
                + (shared ? ", shared" : "")
                + (isClosed() ? ", closed" : "")
                + "}";
    }
}
