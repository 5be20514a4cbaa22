/*
 * The handle of a submitted transfer. Transfers on one executor run in submission order; waiting
 * is explicit. The first await() that sees completion releases the native handle and remembers
 * the outcome, so later calls answer from Java (whenDone()'s background wait does the same once
 * it sees completion, and commits the Flight Recorder event then, on its thread); isDone() only
 * asks. close() releases the handle
 * without waiting: an await() or isDone() after a close() that came before any await() throws
 * KvioClosedException, even for a transfer that had completed. A cpu transfer already done when submit
 * returns (a small one runs on the submitting thread) releases its native handle at once and keeps
 * only its outcome: the common small call registers nothing with the Cleaner and leaves nothing
 * native behind. Only a transfer still running at submit holds its handle, and a Cleaner releases
 * it if the Transfer is forgotten. whenDone() waits on a kvio background thread (Completions),
 * which keeps the handle open until it has seen completion, across a close().
 */
package io.kvio;

import java.lang.ref.Cleaner;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongUnaryOperator;
import java.util.function.Predicate;

public final class Transfer implements AutoCloseable {
    // Memory model. What is known at submit (bytes, handle, ranOnCpu, the backend that ran it,
    // the skipped layers) is final, set in the constructor by the submitting thread, and never
    // written again: final-field semantics make these values, and the contents of the
    // skippedLayers array reached through its final field, visible to every thread that gets the
    // Transfer, however it was handed over, at no cost on the submit path (volatile writes there
    // cost a store fence per field per transfer, for values that never change). What changes later
    // (released, done, failure, event) is written and read under lock only, apart from the
    // constructor's initial writes, which precede publication: a Transfer handed to another thread
    // through any safe publication (a queue, a future, a lock, a volatile field) is seen whole.
    private final long bytes;
    private final Cleaner.Cleanable cleanable; // null when it holds no native handle
    private final long handle; // 0: none (nothing moved, or done at submit and released then)
    private final boolean ranOnCpu; // done at submit on the cpu backend: outcome in failure
    private final Object lock = new Object();
    private boolean released; // guarded by lock: closed, or awaited to completion
    private boolean done; // guarded by lock
    private KvioException failure; // guarded by lock: its own failure, once done (or ranOnCpu)
    // guarded by lock: the Flight Recorder event not yet committed, a TransferEvent typed Object so
    // that this class names no jdk.jfr type (reflection on it works without the jdk.jfr module)
    private Object event;
    private final long[] skippedLayers; // read through skippedLayers(), which copies it
    private final IoBackend backend; // what ran it; the executor's when nothing was submitted
    private final long executor; // the executor's handle (whenDone's queue); 0 when none ran it
    private CompletableFuture<Void> stage; // guarded by lock: whenDone()'s, once asked
    // guarded by lock: a background wait of whenDone() uses the native handle; release() leaves
    // closing it to that wait, which closes it once it has seen completion
    private boolean stageWaits;

    private Transfer(
            long handle,
            long bytes,
            Object event,
            IoBackend backend,
            long[] skippedLayers,
            long executor) {
        this.handle = handle;
        this.executor = executor;
        this.bytes = bytes;
        this.event = event;
        this.ranOnCpu = false;
        this.backend = backend;
        this.skippedLayers = skippedLayers;
        this.cleanable =
                handle == 0 ? null : NativeBridge.CLEANER.register(this, new Closer(handle));
        if (handle == 0) {
            released = true;
            done = true;
        }
    }

    /** A cpu transfer done at submit: its outcome taken and its native handle released here. */
    private Transfer(
            long doneHandle,
            long bytes,
            Object event,
            int status,
            IoBackend backend,
            long[] skippedLayers) {
        this.handle = 0;
        this.executor = 0;
        this.bytes = bytes;
        this.ranOnCpu = true;
        this.cleanable = null;
        this.backend = backend;
        this.skippedLayers = skippedLayers;
        if (event != null) {
            TransferEvent.finish(event, doneHandle);
        }
        // A failure's message comes with a wait (done: it answers at once).
        this.failure =
                status == 0 ? null : NativeBridge.error(NativeBridge.transferWait(doneHandle, 0));
        NativeBridge.transferClose(doneHandle);
        // done stays false until the caller sees it done: until then close() then await() says
        // closed, as for any transfer
    }

    private static final class Closer implements Runnable {
        private final long handle;

        Closer(long handle) {
            this.handle = handle;
        }

        @Override
        public void run() {
            NativeBridge.transferClose(handle);
        }
    }

    /**
     * {@code executor}: the handle of the executor it was submitted to; {@code doneOnCpu}: the cpu
     * backend completed it before submit returned, with {@code status}; {@code event}: the Flight
     * Recorder event Kvio began for it (a TransferEvent; null when none is recorded); {@code
     * backend}: the io backend that runs it; {@code skippedLayers}: device layers it does not move
     * (kept, not copied: the caller does not change it afterwards).
     */
    static Transfer submitted(
            long executor,
            long handle,
            long bytes,
            boolean doneOnCpu,
            int status,
            Object event,
            IoBackend backend,
            long[] skippedLayers) {
        return doneOnCpu
                ? new Transfer(handle, bytes, event, status, backend, skippedLayers)
                : new Transfer(handle, bytes, event, backend, skippedLayers, executor);
    }

    /**
     * A transfer that moved nothing and is already complete, on an executor of {@code backend},
     * reporting device layers it did not move ({@link Kvio#NO_LAYERS} for none).
     */
    static Transfer completed(IoBackend backend, long[] skippedLayers) {
        return new Transfer(
                0, 0, null, Objects.requireNonNull(backend, "backend"), skippedLayers, 0);
    }

    /**
     * The io backend that runs this transfer: the executor's, or for an {@link IoBackend#AUTO}
     * executor the one it chose (KERNEL, DIRECT or STAGED on a GPU; without one CPU, or
     * KERNEL_ASCEND for NPU memory). Never null: a transfer that moved nothing (empty index lists,
     * a layer the host pool does not hold) reports its executor's backend, {@link IoBackend#AUTO}
     * itself for an auto executor, which chose none.
     */
    public IoBackend backend() {
        return backend;
    }

    /**
     * Device layers this transfer was asked to cover but did not move because the host pool does
     * not hold them (HostKvPool.Builder.layerRange, or a device pool with more layers than the host
     * pool was built for); empty when every layer was moved. A load of such a layer is an already
     * completed Transfer of 0 bytes; HostKvPool.Builder.strictLayers() refuses it instead.
     */
    public long[] skippedLayers() {
        return skippedLayers.clone();
    }

    /**
     * Waits for completion; throws the typed exception if the transfer failed. Not interruptible
     * (like CompletableFuture.join): an interrupt is left set for the caller, and the wait goes on;
     * {@link #awaitInterruptibly()} stops waiting when the thread is interrupted.
     */
    public void await() {
        waitNs(-1);
    }

    /**
     * Waits at most {@code timeout}; true if done (throws if it failed), false on timeout. Not
     * interruptible, as {@link #await()}.
     */
    public boolean await(long timeout, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        return waitNs(Math.max(0, unit.toNanos(timeout)));
    }

    /**
     * {@link #await()} that a thread interrupt ends: InterruptedException (the interrupt status
     * cleared, as the JDK's blocking methods do) when the thread is interrupted before or while it
     * waits. The transfer is not cancelled: its copies go on, and it can be awaited or closed
     * later. An interrupt is seen within about 10 ms: the wait is made of timed native waits, so on
     * the device backends it polls the transfer's event as {@link #await(long, TimeUnit)} does.
     * Unlike {@link #await()}, whose native wait outlives a close() from another thread, a close()
     * during this wait ends it with KvioClosedException.
     */
    public void awaitInterruptibly() throws InterruptedException {
        while (!awaitInterruptibly(Long.MAX_VALUE, TimeUnit.NANOSECONDS)) {
            // Long.MAX_VALUE ns is 292 years; a wait that long goes round again
        }
    }

    /**
     * {@link #await(long, TimeUnit)} that a thread interrupt ends, as {@link
     * #awaitInterruptibly()}: true if done (throws if it failed), false on timeout.
     */
    public boolean awaitInterruptibly(long timeout, TimeUnit unit) throws InterruptedException {
        Objects.requireNonNull(unit, "unit");
        long remaining = Math.max(0, unit.toNanos(timeout));
        long deadline = System.nanoTime() + remaining;
        boolean awaiting = false; // a slice has waited: a close from now on came while awaited
        for (; ; ) {
            if (Thread.interrupted()) {
                throw new InterruptedException("interrupted while awaiting a kvio transfer");
            }
            // The native wait cannot be interrupted: it waits in slices, checking in between.
            if (waitNs(Math.min(remaining, INTERRUPT_CHECK_NS), awaiting)) {
                return true;
            }
            awaiting = true;
            remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return false;
            }
        }
    }

    /** How often an interruptible wait looks at the thread's interrupt status. */
    static final long INTERRUPT_CHECK_MS = 10;

    private static final long INTERRUPT_CHECK_NS =
            TimeUnit.MILLISECONDS.toNanos(INTERRUPT_CHECK_MS);

    private boolean waitNs(long timeoutNs) {
        return waitNs(timeoutNs, false);
    }

    /** {@code awaited}: an earlier slice of the same wait has waited (awaitInterruptibly). */
    private boolean waitNs(long timeoutNs, boolean awaited) {
        synchronized (lock) {
            if (done) {
                return finish();
            }
            if (released) {
                throw new KvioClosedException(
                        awaited
                                ? "this transfer was closed while it was awaited"
                                : "this transfer was closed before it was awaited");
            }
            if (ranOnCpu) {
                done = true;
                release();
                return finish();
            }
        }
        // Wait outside the lock: the native state outlives a concurrent close of the handle.
        int status = NativeBridge.transferWait(handle, timeoutNs);
        KvioException error = status == 0 ? null : NativeBridge.error(status);
        synchronized (lock) {
            if (done) {
                // Another await saw completion first and released the handle: its outcome holds
                // (this wait may have found the handle already closed).
                return finish();
            }
            if (error != null && error.status() == KvioException.Status.TIMEOUT) {
                return false;
            }
            if (error != null && error.status() == KvioException.Status.CLOSED && released) {
                throw new KvioClosedException("this transfer was closed while it was awaited");
            }
            done = true;
            failure = error;
            release(); // commits the Flight Recorder event first, if any
            return finish();
        }
    }

    private boolean finish() {
        if (failure != null) {
            throw KvioException.of(failure.status(), failure.getMessage());
        }
        return true;
    }

    /**
     * Whether the transfer has completed (successfully or not). After close(), only a transfer an
     * await() saw complete (or one that moved nothing) still answers; for the others the handle
     * that could tell is gone: KvioClosedException.
     */
    public boolean isDone() {
        synchronized (lock) {
            if (done) {
                return true;
            }
            if (released) {
                throw new KvioClosedException("this transfer is closed");
            }
            if (ranOnCpu) {
                return true;
            }
            boolean isDone = NativeBridge.transferIsDone(handle);
            if (isDone && event != null) {
                commitEvent();
            }
            return isDone;
        }
    }

    /**
     * A future completed when this transfer completes: normally when it moved every byte, else
     * exceptionally with the exception {@link #await()} would throw (a KvioException, wrapped in a
     * CompletionException by {@code join()}, in an ExecutionException by {@code get()}), for code
     * that chains work on a transfer instead of blocking a thread in await():
     *
     * <pre>{@code
     * host.load(device, layer).hostIndices(h).deviceIndices(d).submit()
     *         .whenDone()
     *         .thenRun(() -> layerReady(layer));
     * }</pre>
     *
     * <p>Each call returns a new future of the same completion ({@code CompletableFuture.copy()}):
     * completing or cancelling it changes neither the transfer, whose copies go on, nor the futures
     * other calls returned. A transfer already complete (one that moved nothing, or a small cpu
     * transfer done at submit) returns a completed future. Otherwise one kvio background thread per
     * executor waits for its transfers whose futures were asked, in the order they were asked, and
     * completes them; dependents added with the non-async methods ({@code thenRun}, ...) run on
     * that thread, so keep them short or use the {@code ...Async} forms: the completion of the
     * executor's next transfers waits for them (an await() there delays them too), and a dependent
     * that blocks on the future of a transfer of the same executor asked after this one ({@code
     * join()} or {@code get()} of its whenDone()) waits for itself, for ever. Seeing completion
     * releases the transfer, on that thread, as an await() that sees it does: take its CUDA or
     * Ascend event before calling this. A close() after this call does not end the wait: the native
     * handle stays open until the transfer has completed, and the future completes as it would
     * have. Where no thread can be started to wait, the future completes exceptionally with
     * KvioOutOfMemoryException (the transfer still runs; a later whenDone() tries again).
     *
     * @throws KvioClosedException when the transfer was closed before it was awaited or this was
     *     asked
     */
    public CompletableFuture<Void> whenDone() {
        CompletableFuture<Void> future;
        boolean background;
        KvioException outcome = null; // a known outcome's failure
        synchronized (lock) {
            if (stage != null) {
                return stage.copy();
            }
            if (released && !done) {
                throw new KvioClosedException(
                        "this transfer was closed before whenDone() was asked, and the handle"
                                + " that could tell its completion is gone");
            }
            future = new CompletableFuture<>();
            stage = future;
            background = !done && !ranOnCpu;
            stageWaits = background;
            if (!background) {
                // Known now (done, or done at submit on the cpu): taken as await() takes it, under
                // this lock, so that a close() right after this call cannot come in between.
                if (!done) {
                    done = true;
                    release();
                }
                outcome = failure;
            }
        }
        if (!background) {
            complete(future, outcome);
        } else {
            Completions.enqueue(
                    executor,
                    new Completions.Wait() {
                        @Override
                        public void await() {
                            settleInBackground(future);
                        }

                        @Override
                        public void abandon(Throwable why) {
                            synchronized (lock) {
                                if (released) {
                                    commitEvent(); // closed meanwhile: its close, left here
                                }
                                stageWaits = false;
                                if (released && cleanable != null) {
                                    cleanable.clean();
                                }
                                if (stage == future) {
                                    stage = null; // a later whenDone() tries again
                                }
                            }
                            future.completeExceptionally(why);
                        }
                    });
        }
        return future.copy();
    }

    /** Completes {@code future} with an outcome: normally, or with what await() would throw. */
    private static void complete(CompletableFuture<Void> future, KvioException failure) {
        if (failure == null) {
            future.complete(null);
        } else {
            future.completeExceptionally(KvioException.of(failure.status(), failure.getMessage()));
        }
    }

    /**
     * On whenDone()'s background thread: waits for completion on the native handle, which no
     * close() closes meanwhile (stageWaits), records the outcome as await() does unless an await()
     * saw it first, releases the transfer, then completes {@code future} outside the lock (its
     * dependents run here).
     */
    private void settleInBackground(CompletableFuture<Void> future) {
        int status = NativeBridge.transferWait(handle, -1);
        KvioException error = status == 0 ? null : NativeBridge.error(status);
        KvioException outcome;
        synchronized (lock) {
            if (!done) {
                done = true;
                failure = error;
            }
            outcome = failure;
            commitEvent(); // the handle is still open (a close() meanwhile left the event here)
            stageWaits = false;
            release(); // closes the handle
            if (cleanable != null) {
                cleanable.clean(); // a close() that came meanwhile left it here
            }
        }
        complete(future, outcome);
    }

    /**
     * The CUDA event (a cudaEvent_t) recorded after this transfer's work on its executor's stream,
     * for another stream to wait on (e.g. start layer i as soon as its load lands). Valid until the
     * transfer is released (the first await() that sees completion, the background wait of {@link
     * #whenDone()} once the transfer completes, or close()): take it before calling whenDone();
     * keep this Transfer reachable while the event is used, as a Transfer that becomes unreachable
     * is released by a Cleaner and its event reused or destroyed. 0 for a transfer that moved
     * nothing (empty index lists, a layer the host pool does not hold), whatever the backend: no
     * work was queued, there is nothing to wait for. Otherwise KvioUnsupportedException for a
     * transfer that ran on a backend without CUDA events: cpu, kernel_ascend, and {@link
     * IoBackend#AUTO} where it chose one of them (a machine without a GPU). Code written for {@code
     * auto} asks {@link #hasCudaEvent()} first (and, as the event completes for a transfer that
     * failed too, a stream that waits on it goes ahead on whatever was written: await() the
     * transfer before trusting its destination):
     *
     * <pre>{@code
     * Transfer load = host.load(device, layer).hostIndices(h).deviceIndices(d).submit();
     * if (load.hasCudaEvent()) {
     *     cudaStreamWaitEvent(computeStream, load.cudaEvent(), 0); // a GPU: wait on the stream
     * } else {
     *     load.await(); // cpu (or nothing moved): the data is in place once this returns
     * }
     * }</pre>
     */
    public long cudaEvent() {
        return event("CUDA", IoBackend::isCuda, NativeBridge::transferCudaEvent);
    }

    /**
     * Whether {@link #cudaEvent()} has an event to give: true for a transfer that moved data on a
     * CUDA backend (kernel, direct, staged, or {@link IoBackend#AUTO} when it chose one of them);
     * false for one that ran on cpu or kernel_ascend ({@code auto} without a GPU) and for one that
     * moved nothing (then cudaEvent() is 0). Never throws, and the answer does not change when the
     * transfer is released (cudaEvent() then throws KvioClosedException: take the event before).
     */
    public boolean hasCudaEvent() {
        return hasEvent(IoBackend::isCuda);
    }

    /**
     * The Ascend event (an aclrtEvent) recorded after this kernel_ascend transfer's work on its
     * executor's stream, for another stream to wait on (aclrtStreamWaitEvent). Valid until the
     * transfer is released; 0 for a transfer that moved nothing, as {@link #cudaEvent()}.
     * KvioUnsupportedException for transfers of other backends; {@link #hasAscendEvent()} asks
     * without throwing. The event completes for a transfer that failed too (and a copy that fails
     * on the NPU in the runtime's default mode is not reported through it: docs/ascend.md, "Failed
     * copies"): a stream that waits on it goes ahead on whatever was written, so await() the
     * transfer before trusting its destination.
     */
    public long ascendEvent() {
        return event("Ascend", IoBackend::isAscend, NativeBridge::transferAscendEvent);
    }

    /**
     * Whether {@link #ascendEvent()} has an event to give: true for a transfer that moved data on
     * kernel_ascend (or {@link IoBackend#AUTO} when it chose it), false otherwise; never throws, as
     * {@link #hasCudaEvent()}.
     */
    public boolean hasAscendEvent() {
        return hasEvent(IoBackend::isAscend);
    }

    /** Whether the transfer moved data on a backend {@code records} says records events. */
    private boolean hasEvent(Predicate<IoBackend> records) {
        // handle, ranOnCpu and backend are final: no lock needed
        boolean movedData = handle != 0 || ranOnCpu;
        return movedData && backend != null && records.test(backend);
    }

    /**
     * The vendor's event of this transfer, from {@code query} on its handle; {@code records} says
     * which backends record one. Whether it has one does not depend on whether it was released.
     */
    private long event(String vendor, Predicate<IoBackend> records, LongUnaryOperator query) {
        synchronized (lock) {
            if (handle == 0 && !ranOnCpu) {
                return 0; // moved nothing: never had a handle (not closed), nothing to wait on
            }
            if (backend != null && !records.test(backend)) {
                throw new KvioUnsupportedException(
                        "this transfer has no "
                                + vendor
                                + " event (it ran on the "
                                + backend.userName()
                                + " io backend)");
            }
            if (released) {
                throw new KvioClosedException(
                        "this transfer was released (by close(), or by the first await() that saw"
                                + " it complete), and its "
                                + vendor
                                + " event with it: take the event before that");
            }
            return query.applyAsLong(handle);
        }
    }

    /** Bytes this transfer moves (the planned total, known at submission). */
    public long bytes() {
        return bytes;
    }

    /** Releases the native handle without waiting (the copy itself still completes); idempotent. */
    @Override
    public void close() {
        synchronized (lock) {
            release();
        }
    }

    /**
     * Commits the Flight Recorder event, if any, once, while the native handle is open: before it
     * is released, or while whenDone()'s wait keeps it open after a close().
     */
    private void commitEvent() {
        Object e = event;
        if (e == null || (released && !stageWaits)) {
            return;
        }
        event = null;
        TransferEvent.finish(e, handle);
    }

    private void release() {
        if (done || !stageWaits) {
            // close() without await: the event says whether it was still running. A close() while
            // whenDone()'s wait is pending leaves it to that wait, which commits it once it has
            // seen completion.
            commitEvent();
        }
        if (!released) {
            released = true;
            if (cleanable != null && !stageWaits) {
                cleanable.clean(); // else whenDone()'s wait closes it once it has seen completion
            }
        }
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "Transfer{bytes="
                    + bytes
                    + (done ? (failure == null ? ", done" : ", failed") : "")
                    + (released && !done ? ", closed" : "")
                    + (skippedLayers.length == 0
                            ? ""
                            : ", skipped device layers "
                                    + java.util.Arrays.toString(skippedLayers)
                                    + " (not held by the host pool)")
                    + "}";
        }
    }
}
