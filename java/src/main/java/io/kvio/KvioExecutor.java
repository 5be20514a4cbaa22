/*
 * An executor of one io backend: the worker threads (cpu) or stream/queue (device backends) that
 * carry out transfers, in submission order. Host pools use the backend's shared executor unless
 * they are given their own. close() waits for submitted transfers, then releases the executor;
 * the shared executors live as long as the process and ignore close().
 */
package io.kvio;

import java.lang.ref.Cleaner;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

public final class KvioExecutor implements AutoCloseable {
    private static final KvioExecutor[] SHARED = new KvioExecutor[IoBackend.values().length];

    private final IoBackend backend;
    private final long handle;
    private final int threads;
    private final boolean shared;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Cleaner.Cleanable cleanable;

    private KvioExecutor(IoBackend backend, int threads, boolean shared) {
        this.backend = backend;
        this.shared = shared;
        this.handle = Dispatcher.executorCreate(backend.ordinal(), threads);
        int t;
        try {
            t = Dispatcher.executorThreads(handle);
        } catch (RuntimeException e) {
            Dispatcher.executorClose(handle);
            throw e;
        }
        this.threads = t;
        this.cleanable = shared ? null : Dispatcher.CLEANER.register(this, new Closer(handle));
    }

    private static final class Closer implements Runnable {
        private final long handle;

        Closer(long handle) {
            this.handle = handle;
        }

        @Override
        public void run() {
            Dispatcher.executorClose(handle);
        }
    }

    /** A private executor; {@code threads <= 0} means one per core. */
    public static KvioExecutor create(IoBackend backend, int threads) {
        Objects.requireNonNull(backend, "backend");
        backend.ensureAvailability();
        return new KvioExecutor(backend, threads, false);
    }

    /** The process-wide executor of {@code backend} (one thread per core), created on first use. */
    public static KvioExecutor shared(IoBackend backend) {
        Objects.requireNonNull(backend, "backend");
        synchronized (SHARED) {
            KvioExecutor e = SHARED[backend.ordinal()];
            if (e == null) {
                backend.ensureAvailability();
                e = new KvioExecutor(backend, 0, true);
                SHARED[backend.ordinal()] = e;
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

    public boolean isShared() {
        return shared;
    }

    public boolean isClosed() {
        return closed.get();
    }

    /**
     * The kernel backend's launch shape for transfers submitted from now on: at most {@code
     * ctaBudget} thread blocks of {@code warpsPerCta} warps (0: the defaults, 4 and 16). The copy
     * kernel shares the GPU with the forward pass, so the budget is small by default.
     * KvioUnsupportedException on other backends.
     */
    public void setLaunch(int ctaBudget, int warpsPerCta) {
        Dispatcher.executorSetLaunch(handle(), ctaBudget, warpsPerCta);
    }

    long handle() {
        if (closed.get()) {
            throw new KvioClosedException("this " + backend.userName() + " executor is closed");
        }
        return handle;
    }

    /**
     * Waits for the transfers submitted to this executor, then releases it; a no-op on shared
     * executors.
     */
    @Override
    public void close() {
        if (!shared && closed.compareAndSet(false, true)) {
            cleanable.clean();
        }
    }

    @Override
    public String toString() {
        return "KvioExecutor{"
                + backend.userName()
                + ", threads="
                + threads
                + (shared ? ", shared" : "")
                + (isClosed() ? ", closed" : "")
                + "}";
    }
}
