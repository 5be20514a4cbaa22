/*
 * A KV pool kvio knows: a native pool handle with its spec, io backend and memory regions.
 * DeviceKvPool and HostKvPool are the only subclasses (the constructor is package-private).
 * Memory regions are exposed as raw addresses and as direct ByteBuffers. Memory kvio allocated
 * stays valid while any ByteBuffer the pool handed out (or a slice, duplicate or view of one) is
 * reachable, closed pool or not: close() drops the pool's own hold, and the last buffer's Cleaner
 * action frees it. A buffer over wrapped caller memory keeps the caller's ByteBuffer or segment
 * reachable; that memory is the caller's to keep valid. copyTo/copyFrom read and write any
 * pool's memory, device memory included, through its backend (synchronously; for tests, debugging
 * and warm-up). On Java 22+, io.kvio.Segments exposes regions as MemorySegments: those of memory
 * kvio allocated die with the pool; those of wrapped caller memory (a segment or ByteBuffer) are
 * slices of it and live as long as that memory does (its arena), not as the pool. Forgotten pools
 * are closed by a Cleaner once they and their ByteBuffers are unreachable, with a warning on the "io.kvio" System.Logger. Memory kvio allocated is freed, and its
 * registration of wrapped memory ends, once no submitted transfer uses the pool
 * (docs/memory-lifetime.md); closeAndWait() waits for that.
 */
package io.kvio;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

public abstract class KvPool implements AutoCloseable {
    private final PoolSpec spec;
    private final IoBackend backend;
    private final long handle;
    private final long[][] regions;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Closer closer;
    private final Cleaner.Cleanable cleanable;
    private Runnable
            onClose; // Segments: closes the arena of this pool's segments (guarded by this)

    private static final System.Logger LOGGER = System.getLogger("io.kvio");

    /** Pools the Cleaner freed because they were never closed (for tests and diagnostics). */
    static final AtomicLong FREED_BY_CLEANER = new AtomicLong();

    /**
     * Never-closed pools the Cleaner found unreachable, freed then or, while a ByteBuffer of theirs
     * was still reachable, later (for tests and diagnostics).
     */
    static final AtomicLong FOUND_UNREACHABLE = new AtomicLong();

    /**
     * Tests only: called with the native handle of each never-closed pool the Cleaner found
     * unreachable, after its hold on the memory was released; null (no call) otherwise.
     */
    static volatile java.util.function.LongConsumer onFoundUnreachable;

    /**
     * Bytes of memory kvio allocated for pools that are closed but still held by a ByteBuffer of
     * theirs (freed when the last one is collected).
     */
    static final AtomicLong HELD_AFTER_CLOSE = new AtomicLong();

    /** A pool was closed with buffers out since the last collection kvio asked for. */
    private static final AtomicBoolean COLLECTION_WANTED = new AtomicBoolean();

    /** Collections kvio asked for (System.gc()) before an allocation (for tests). */
    static final AtomicLong COLLECTIONS_ASKED = new AtomicLong();

    /**
     * The system property that sets {@link #heldAfterCloseLimit()}: a number of bytes (a decimal
     * long, 0 or more).
     */
    static final String HELD_AFTER_CLOSE_LIMIT_PROPERTY = "io.kvio.heldAfterCloseLimit";

    /** {@link #heldAfterCloseLimit()} without the property: 1 GiB. */
    static final long DEFAULT_HELD_AFTER_CLOSE_LIMIT = 1L << 30;

    /** The longest an allocation waits for a collection to free closed pools' memory. */
    private static final long COLLECTION_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private static volatile String warnedLimit; // the invalid property value last warned about

    /**
     * How many bytes of closed pools' memory their ByteBuffers may hold ({@link #HELD_AFTER_CLOSE})
     * before the next allocation of host memory asks the JVM for a collection: the system property
     * {@code io.kvio.heldAfterCloseLimit} (bytes), read at each allocation, so that it can be set
     * at any time; 1 GiB without it. An invalid value (not a whole number, or negative) is logged
     * as a warning on the "io.kvio" System.Logger and the default is used.
     *
     * <p>Why 1 GiB: a collection and the wait for its Cleaner actions cost tens of milliseconds,
     * which small pools closed with a buffer out (tests, tools, short programs) should not pay at
     * every allocation; memory up to a GiB waiting for the collector's own schedule is no more than
     * the JDK lets direct buffers take beside a heap of that size (-XX:MaxDirectMemorySize defaults
     * to the heap's maximum). Pools of a GiB or more, a serving engine's, pass it with a single
     * close, and the time to allocate and fill such a pool dwarfs the collection. Whatever the
     * limit, an allocation that fails for want of memory while closed pools' memory is held
     * collects and tries once more.
     */
    static long heldAfterCloseLimit() {
        String value = System.getProperty(HELD_AFTER_CLOSE_LIMIT_PROPERTY);
        if (value == null) {
            return DEFAULT_HELD_AFTER_CLOSE_LIMIT;
        }
        try {
            long limit = Long.parseLong(value.trim());
            if (limit >= 0) {
                return limit;
            }
        } catch (NumberFormatException e) {
            // warned below
        }
        if (!value.equals(warnedLimit)) {
            warnedLimit = value;
            LOGGER.log(
                    System.Logger.Level.WARNING,
                    "kvio: the system property "
                            + HELD_AFTER_CLOSE_LIMIT_PROPERTY
                            + "=\""
                            + value
                            + "\" is not a number of bytes (a whole number, 0 or more); using the"
                            + " default, "
                            + DEFAULT_HELD_AFTER_CLOSE_LIMIT);
        }
        return DEFAULT_HELD_AFTER_CLOSE_LIMIT;
    }

    /**
     * Whether buffers can hold memory of {@code memoryKind} (KvioNative.KVIO_MEMORY_*): host
     * memory, pageable or pinned. Device memory (CUDA, Ascend) has no ByteBuffers, so a collection
     * frees none of it, and an allocation of it asks for none.
     */
    static boolean collectsFor(int memoryKind) {
        return memoryKind != KvioNative.KVIO_MEMORY_CUDA_DEVICE
                && memoryKind != KvioNative.KVIO_MEMORY_ASCEND_DEVICE;
    }

    /**
     * Whether an allocation of {@code memoryKind} asks for a collection before it allocates: host
     * memory, {@code held} bytes of closed pools held by their buffers over {@code limit}, and a
     * pool closed with buffers out since the last collection kvio asked for ({@code closedSince};
     * without one, another collection would find nothing new).
     */
    static boolean collectsBefore(int memoryKind, long held, long limit, boolean closedSince) {
        return collectsFor(memoryKind) && held > limit && closedSince;
    }

    /**
     * Allocates a pool's memory of {@code memoryKind} ({@code allocate}: the native allocation,
     * which returns the pool handle), collecting closed pools' memory that dropped ByteBuffers
     * still hold when it needs to. That memory is freed only once the JVM collects the buffers,
     * which a program with little garbage may not do for a long time, while each new pool takes
     * native memory the collector does not see. So for host memory, (1) when more than {@link
     * #heldAfterCloseLimit()} bytes are held so (and a pool was closed with buffers out since the
     * last such collection), the allocation first asks for a collection; (2) when the allocation
     * fails with KvioOutOfMemoryException while any is held, it asks for one and tries once more
     * (the JDK does likewise for direct buffers, only once they reach -XX:MaxDirectMemorySize).
     * Each collection waits at most 100 ms, until some held memory is freed. Device memory asks for
     * none.
     */
    static long allocateCollecting(int memoryKind, java.util.function.LongSupplier allocate) {
        if (!collectsFor(memoryKind)) {
            return allocate.getAsLong();
        }
        long held = HELD_AFTER_CLOSE.get();
        if (collectsBefore(memoryKind, held, heldAfterCloseLimit(), COLLECTION_WANTED.get())
                && COLLECTION_WANTED.compareAndSet(true, false)) {
            collectMemoryOfClosedPools(held);
        }
        try {
            return allocate.getAsLong();
        } catch (KvioOutOfMemoryException e) {
            long stillHeld = HELD_AFTER_CLOSE.get();
            if (stillHeld == 0) {
                throw e;
            }
            COLLECTION_WANTED.set(false);
            collectMemoryOfClosedPools(stillHeld);
            try {
                return allocate.getAsLong();
            } catch (KvioOutOfMemoryException again) {
                again.addSuppressed(e);
                throw again;
            }
        }
    }

    /**
     * Asks the JVM for a collection and waits, at most 100 ms, until memory of closed pools that
     * their buffers held ({@code held} bytes before) is freed, which the buffers' Cleaner actions
     * do once the collector has found them unreachable. An interrupt ends the wait (the flag stays
     * set for the caller).
     */
    private static void collectMemoryOfClosedPools(long held) {
        COLLECTIONS_ASKED.incrementAndGet();
        System.gc();
        long start = System.nanoTime();
        try {
            while (HELD_AFTER_CLOSE.get() >= held
                    && System.nanoTime() - start < COLLECTION_WAIT_NANOS) {
                Thread.sleep(1);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the allocation goes on; the caller sees the flag
        }
    }

    /**
     * Takes ownership of {@code handle}; {@code allocated}: kvio allocated its memory (one region),
     * which a ByteBuffer of the pool then keeps after close() (Closer).
     */
    KvPool(PoolSpec spec, IoBackend backend, long handle, boolean allocated) {
        this.spec = spec;
        this.backend = backend;
        this.handle = handle;
        this.regions =
                NativeBridge.queryOrClose(
                        handle, NativeBridge::poolRegions, NativeBridge::poolClose);
        this.closer =
                new Closer(
                        handle,
                        getClass().getSimpleName() + " " + spec,
                        allocated ? spec : null,
                        regions[0][0],
                        regions[0][1]);
        this.cleanable = NativeBridge.CLEANER.register(this, closer);
    }

    /**
     * Closes the native pool once: at close(), or, for a pool that is never closed, when the pool
     * and every ByteBuffer it handed out have become unreachable (with a warning). A direct
     * ByteBuffer made over native memory cannot keep its owner reachable, so each buffer() and
     * slice() holds the memory through this count instead: its own Cleaner action releases it.
     * Slices, duplicates and views of such a buffer keep it reachable (their attachment), so they
     * are covered too. Freeing the memory while the program still held a buffer would turn its next
     * access into a crash of the JVM.
     *
     * <p>close() closes the native pool at once (its transfers, registrations and closeAndWait keep
     * their meaning), so for memory kvio allocated the buffers need a hold of their own: the first
     * buffer() or slice() opens a second native pool over the allocation (the keeper: a
     * kvio_pool_wrap of host memory kind over region 0, which holds a kvio allocation it lies in
     * until it is closed, and is never used for a transfer). The keeper is closed when the count
     * reaches 0: close() drops the pool's own hold, the last buffer's Cleaner action the last. For
     * wrapped caller memory there is no keeper: the caller owns that memory (a buffer's Cleaner
     * action keeps a wrapped ByteBuffer or segment reachable, which on Java 17 keeps a direct
     * buffer's memory; raw addresses and arenas are the caller's to keep).
     */
    private static final class Closer implements Runnable {
        private final long handle;
        private final String description; // no reference to the pool itself
        private final AtomicInteger holders = new AtomicInteger(1); // the pool + live ByteBuffers
        private final PoolSpec keeperSpec; // null: not memory kvio allocated, no keeper
        private final long keeperAddress;
        private final long keeperBytes;
        private boolean nativeClosed; // guarded by this: the pool's own native handle
        private long keeper; // guarded by this: 0 until the first buffer, and once closed
        volatile boolean explicit;

        /**
         * Wrapped caller memory (a direct ByteBuffer, a MemorySegment), kept reachable here rather
         * than by the pool: the Cleaner holds this action until it runs, so the memory outlives an
         * unreachable pool until the pool is closed, and closeNative() then hands it to
         * MemoryRetainer until kvio no longer uses it. Held by the pool, it could be freed with the
         * pool (by its own Cleaner) while a submitted transfer still wrote it.
         */
        volatile Object memory;

        Closer(long handle, String description, PoolSpec keeperSpec, long address, long bytes) {
            this.handle = handle;
            this.description = description;
            this.keeperSpec = keeperSpec;
            this.keeperAddress = address;
            this.keeperBytes = bytes;
        }

        /** The pool's Cleaner action: close() ran it, or the pool became unreachable. */
        @Override
        public void run() {
            if (explicit) {
                closeNative(); // the handle now; the memory once no buffer holds it
                release(); // the pool's own hold
                countHeldAfterClose();
            } else {
                release();
                FOUND_UNREACHABLE.incrementAndGet(); // after: a test reading it sees the release
                java.util.function.LongConsumer hook = onFoundUnreachable;
                if (hook != null) {
                    hook.accept(handle);
                }
            }
        }

        /**
         * One more holder of the memory: a ByteBuffer about to be made over it. The pool is
         * reachable while this runs (holdingBuffer fences it), so its own hold is still counted.
         * For memory kvio allocated the keeper is opened first, while the pool's handle is open:
         * KvioClosedException ({@code what} names the pool) if close() on another thread has closed
         * it meanwhile; an error opening the keeper (out of memory) is thrown with no buffer made.
         */
        synchronized void retain(String what) {
            if (nativeClosed) {
                throw new KvioClosedException("this " + what + " is closed (" + description + ")");
            }
            if (keeperSpec != null && keeper == 0) {
                keeper =
                        NativeBridge.poolWrap(
                                keeperSpec,
                                KvioNative.KVIO_MEMORY_HOST,
                                Kvio.HOST_DEVICE,
                                keeperAddress,
                                keeperBytes);
            }
            if (holders.getAndIncrement() == 0) {
                throw new IllegalStateException(
                        "kvio: a pool's memory was retained after its release");
            }
        }

        /** A holder is gone: the pool (closed or unreachable), or a ByteBuffer's Cleaner action. */
        void release() {
            if (holders.decrementAndGet() == 0) {
                closeNative();
                closeKeeper();
            }
        }

        /** Lets go of the keeper's hold on memory kvio allocated: the last holder is gone. */
        private synchronized void closeKeeper() {
            if (keeper != 0) {
                NativeBridge.poolClose(keeper);
                keeper = 0;
                if (heldCounted) {
                    HELD_AFTER_CLOSE.addAndGet(-keeperBytes);
                }
            }
        }

        private boolean heldCounted; // guarded by this: counted in HELD_AFTER_CLOSE

        /** After close(): the memory counts as held by buffers if they still hold it. */
        private synchronized void countHeldAfterClose() {
            if (keeper != 0 && !heldCounted) {
                heldCounted = true;
                HELD_AFTER_CLOSE.addAndGet(keeperBytes);
                COLLECTION_WANTED.set(true);
            }
        }

        private synchronized void closeNative() {
            if (nativeClosed) {
                return; // closed explicitly before its buffers became unreachable
            }
            nativeClosed = true;
            if (!explicit) {
                FREED_BY_CLEANER.incrementAndGet();
                LOGGER.log(
                        System.Logger.Level.WARNING,
                        "kvio: a "
                                + description
                                + " was never closed; the Cleaner freed it after it and the"
                                + " ByteBuffers it handed out became unreachable. Close pools"
                                + " (try-with-resources) so their memory is released when you"
                                + " choose");
            }
            NativeBridge.poolClose(handle);
            Object wrapped = memory;
            memory = null;
            if (wrapped != null) {
                MemoryRetainer.retainUntilReleased(handle, wrapped, description);
            }
        }
    }

    /**
     * A ByteBuffer over the pool's memory that holds the memory while it is reachable: kvio's
     * allocation (the Closer's count), and wrapped caller memory (kept reachable by the buffer's
     * Cleaner action, which runs only once the buffer is unreachable).
     */
    private ByteBuffer holdingBuffer(long address, int bytes) {
        ensureMemoryAlive();
        Closer c = closer; // the action must not capture the pool or the buffer
        Object wrapped = c.memory;
        c.retain(what()); // before the buffer exists, while the pool is reachable (the fence below)
        ByteBuffer buffer;
        try {
            buffer = NativeBridge.byteBuffer(address, bytes);
            NativeBridge.CLEANER.register(
                    buffer,
                    () -> {
                        Reference.reachabilityFence(wrapped);
                        c.release();
                    });
        } catch (RuntimeException | Error e) {
            // No buffer holds the memory (made or not, none is returned, and no Cleaner action
            // will release it): give the hold back, so that the count reaches 0 with the pool's.
            c.release();
            throw e;
        }
        // Without it the pool may be unreachable from the last read of its fields on: its Cleaner
        // could release the pool's hold, free the memory, and the count start again at 0.
        Reference.reachabilityFence(this);
        return buffer;
    }

    /** A direct, writable ByteBuffer a pool may wrap: its memory from position to limit. */
    static final class WrappableBuffer {
        final long address;
        final long bytes;
        final BooleanSupplier alive; // null: it lives as long as it is reachable

        private WrappableBuffer(long address, long bytes, BooleanSupplier alive) {
            this.address = address;
            this.bytes = bytes;
            this.alive = alive;
        }
    }

    /**
     * Checks that {@code memory} can be wrapped by a pool that transfers write: direct (a heap
     * buffer's memory can move), writable (a read-only mapping would crash the JVM), alive (a view
     * of a MemorySegment whose arena is closed: KvioClosedException). {@code method} names the call
     * in messages ("wrap(ByteBuffer)"), {@code pools} what transfers write ("host pools").
     */
    static WrappableBuffer wrappable(ByteBuffer memory, String name, String method, String pools) {
        Objects.requireNonNull(memory, name);
        if (!memory.isDirect()) {
            throw new KvioInvalidArgumentException(
                    method
                            + " needs a direct buffer (ByteBuffer.allocateDirect or a mapped file);"
                            + " a heap buffer's memory can move");
        }
        if (memory.isReadOnly()) {
            throw new KvioInvalidArgumentException(
                    method
                            + " got a read-only buffer; transfers write "
                            + pools
                            + " (a read-only mapping would crash the JVM): pass a writable buffer");
        }
        BooleanSupplier alive = DirectBuffers.checkedLiveness(memory, name);
        long address =
                memory.capacity() == 0 ? 0 : DirectBuffers.address(memory) + memory.position();
        return new WrappableBuffer(address, memory.remaining(), alive);
    }

    /**
     * Keeps wrapped caller memory (a buffer or segment) reachable while the pool is open and, once
     * it is closed, until kvio no longer uses it (Closer.memory). {@code alive} (null: always)
     * tells whether that memory still exists: a MemorySegment's arena, or on Java 22+ that of the
     * segment a ByteBuffer views, can be closed while the object is reachable. {@code name} says
     * what it is, for messages.
     */
    void keepReachable(Object memory, BooleanSupplier alive, String name) {
        closer.memory = memory;
        this.memoryAlive = alive;
        this.memoryName = name;
    }

    /**
     * The caller memory this pool wraps (a ByteBuffer or MemorySegment); null if none, or once the
     * pool is closed.
     */
    Object wrappedMemory() {
        return closer.memory;
    }

    /**
     * KvioClosedException if the caller memory this pool wraps is gone (its arena was closed):
     * asked before each use that would touch it (copyTo/copyFrom, buffer/slice, Segments.region; a
     * transfer or its check asks {@link #memoryGone} itself), so the use is refused instead of
     * reading or writing freed memory. The message names the pool "this host pool" (built only
     * then). It cannot close the race with an Arena.close() on another thread during the use:
     * keeping the arena open while kvio uses the memory is the caller's part.
     */
    void ensureMemoryAlive() {
        if (memoryGone()) {
            throw memoryGoneException("this " + what());
        }
    }

    /**
     * The exception for a pool whose wrapped memory is gone ({@link #memoryGone}); {@code name} is
     * the pool as the caller named it ("this host pool", "src (the host pool)").
     */
    KvioClosedException memoryGoneException(String name) {
        return new KvioClosedException(
                name
                        + " wraps "
                        + memoryName
                        + " whose arena was closed: its memory is gone, so kvio neither reads nor"
                        + " writes it; close the pool (and close a pool before the arena of the"
                        + " memory it wraps)");
    }

    /**
     * Whether the caller memory this pool wraps is gone (ensureMemoryAlive's test, for callers that
     * build the pool's name only when it is: the submit path).
     */
    boolean memoryGone() {
        BooleanSupplier alive = memoryAlive;
        return alive != null && !alive.getAsBoolean();
    }

    // Null when nothing but close() ends the memory, and once closed (it may hold the memory's
    // owner, which a closed pool lets go of: MemoryRetainer).
    private volatile BooleanSupplier memoryAlive;
    private volatile String memoryName;

    /**
     * The object {@code create} makes once for this pool (Segments: its regions' segments), and
     * {@code close} runs on it when the pool is closed explicitly. Null once closed.
     */
    synchronized <T> T closeScoped(
            java.util.function.Supplier<T> create, java.util.function.Consumer<T> close) {
        ensureOpen();
        if (scoped == null) {
            T value = create.get();
            scoped = value;
            onClose = () -> close.accept(value);
        }
        @SuppressWarnings("unchecked")
        T value = (T) scoped;
        return value;
    }

    private Object scoped;

    /** "device pool" or "host pool", for messages. */
    abstract String what();

    public PoolSpec spec() {
        return spec;
    }

    /**
     * The backend whose memory this pool lives in (host pools: the io backend that moves their
     * data).
     */
    public IoBackend backend() {
        return backend;
    }

    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Releases the pool; idempotent. Transfers already submitted still complete. When none of them
     * is still running and no other call with the pool (a submit being checked, {@code copyTo},
     * {@code copyFrom} or {@link #prefault()}) is running on another thread, kvio's use of the
     * pool's memory ends before close() returns: memory kvio allocated is freed (unless a pool that
     * wraps part of it, such as one over this pool's {@link #buffer()}, is still open: that pool
     * holds it; or a ByteBuffer from {@link #buffer()} or {@link #slice} is still reachable: the
     * buffers hold it, and the last one's Cleaner frees it once it is collected), and its
     * registration of wrapped memory (cudaHostRegister, aclrtHostRegisterV2) ends, so the owner of
     * wrapped memory may free it right after. Otherwise that happens when the last of those
     * transfers or calls ends; where one may still run, {@link #closeAndWait()} waits for it before
     * the memory is freed.
     *
     * @throws IllegalStateException (Java 22+) a MemorySegment of this pool (io.kvio.Segments) is
     *     in use (a downcall or an I/O operation holds it), so its arena cannot close: the pool is
     *     left open, unchanged; close it again once that use has ended
     */
    @Override
    public void close() {
        closePool();
    }

    /** {@link #close()} of the pool itself, without what a subclass closes with it. */
    final void closePool() {
        if (closeScopedThenMark()) {
            memoryAlive = null;
            closer.explicit = true;
            cleanable.clean();
        }
        // The pool stays reachable until its explicit close has run: collected in between, its
        // Cleaner would take the close for a forgotten pool's (and, with buffers out, not free).
        Reference.reachabilityFence(this);
    }

    /**
     * Closes what closeScoped made (the segments' arena), then marks the pool closed; false if it
     * was closed already. Under the pool's lock: closeScoped cannot add an arena meanwhile. If the
     * arena cannot close, the pool is not marked closed and nothing of it is freed: its segments
     * stay usable, and a later close() tries again.
     */
    private synchronized boolean closeScopedThenMark() {
        if (closed.get()) {
            return false;
        }
        if (onClose != null) {
            try {
                onClose.run();
            } catch (IllegalStateException e) {
                throw new IllegalStateException(
                        "this "
                                + what()
                                + " was not closed: a MemorySegment of it is in use (a downcall"
                                + " or an I/O operation holds it, on this thread or another), so"
                                + " its segments cannot be closed; close the pool again once that"
                                + " use has ended ("
                                + e.getMessage()
                                + ")",
                        e);
            }
            onClose = null;
        }
        closed.set(true);
        return true;
    }

    /**
     * Closes the pool (as {@link #close()}) and waits until kvio no longer uses its memory: every
     * transfer submitted with it has completed, memory kvio allocated is freed (or held only by
     * ByteBuffers of the pool that are still reachable, or by other pools that wrap part of it:
     * while such a pool is open or its own transfers run, they may still write that memory, so wait
     * for that pool too) and its registration of wrapped memory has ended. After it returns,
     * wrapped memory may be freed.
     */
    public void closeAndWait() {
        close();
        NativeBridge.poolCloseWait(handle, -1);
    }

    /**
     * Like {@link #closeAndWait()}, waiting at most {@code timeout} (0: only checks). True once
     * kvio no longer uses the pool's memory; false if a transfer submitted with it was still
     * running at the deadline: the pool is closed all the same, and wrapped memory must not be
     * freed until a later call returns true. A host pool built with its own executor (threads(n))
     * closes that executor when this returns true.
     */
    public boolean closeAndWait(long timeout, TimeUnit unit) {
        java.util.Objects.requireNonNull(unit, "unit");
        closePool();
        boolean quiet = NativeBridge.poolCloseWait(handle, Math.max(0, unit.toNanos(timeout)));
        if (quiet) {
            closeOwned();
        }
        return quiet;
    }

    /**
     * Closes what the pool owns beside its memory (a host pool's private executor), once no
     * transfer uses the pool; closeAndWait(timeout) calls it when it returns true.
     */
    void closeOwned() {}

    /** The native handle; KvioClosedException once closed. */
    long handle() {
        ensureOpen();
        return handle;
    }

    void ensureOpen() {
        if (closed.get()) {
            throw new KvioClosedException("this " + what() + " is closed (" + spec + ")");
        }
    }

    public int regionCount() {
        ensureOpen();
        return regions.length;
    }

    public long regionAddress(int region) {
        return region(region)[0];
    }

    public long regionBytes(int region) {
        return region(region)[1];
    }

    private long[] region(int region) {
        ensureOpen();
        if (region < 0 || region >= regions.length) {
            throw new KvioOutOfRangeException(
                    "region "
                            + region
                            + " is out of range: this "
                            + what()
                            + " has "
                            + regions.length
                            + " region"
                            + (regions.length == 1 ? "" : "s")
                            + " (valid: 0 to "
                            + (regions.length - 1)
                            + ")");
        }
        return regions[region];
    }

    void ensureHostAccessible() {
        if (this instanceof DeviceKvPool && (backend().isCuda() || backend().isAscend())) {
            throw new KvioUnsupportedException(
                    "this "
                            + what()
                            + (backend().isCuda() ? " is CUDA" : " is Ascend NPU")
                            + " device memory, which the host "
                            + "cannot read or write through a ByteBuffer; move it to a host pool with a transfer");
        }
    }

    /**
     * A direct ByteBuffer (native byte order) over all of region 0. KvioUnsupportedException if the
     * region is larger than a ByteBuffer can address; use {@link #slice} then; KvioClosedException
     * once the pool is closed.
     *
     * <p>Memory kvio allocated (DeviceKvPool.allocate on the host-memory backends, a host pool
     * built without wrap): the buffer holds it, so it stays valid while the buffer (or a slice,
     * duplicate or view of it) is reachable, also after {@link #close()}: close() drops the pool's
     * own hold, and the memory is freed once the pool is closed and the last such buffer has been
     * collected (its Cleaner). After close() the buffer is plain memory: no new transfer can use it
     * (transfers submitted before still complete, as close() says). The first buffer of a pool
     * opens a second native pool over the memory to hold it (the keeper: a kvio_pool_wrap of it,
     * used for no transfer). It is a pool handle like any other: kvio_debug_live_objects counts it
     * as an open pool, and it takes one of the pool handles kvio allows open at once (2^24; past
     * them opening a pool fails with KvioOutOfMemoryException), so this call can fail with
     * KvioOutOfMemoryException, no buffer made. It is closed once the pool is closed and its last
     * buffer collected. A closed pool's memory that buffers still hold is freed only when the JVM
     * collects them; so that it does not pile up in a program that makes little garbage, an
     * allocation of host pool memory asks the JVM for a collection when such memory exceeds a limit
     * (system property {@code io.kvio.heldAfterCloseLimit}, bytes, default 1 GiB), or when it fails
     * for want of memory while any is held (then it tries once more).
     *
     * <p>Wrapped caller memory: the caller owns it. The buffer keeps the caller's ByteBuffer or
     * MemorySegment reachable (a direct ByteBuffer's memory then lives on Java 17), but memory
     * given as an address, or a segment whose arena the caller closes, is the caller's to keep
     * valid: once the caller frees it, the buffer reads freed memory and can crash the JVM (a
     * ByteBuffer cannot be invalidated; {@code io.kvio.Segments} on Java 22+ gives segments that
     * fail cleanly instead). KvioClosedException if the pool wraps caller memory whose arena was
     * closed (Java 22+); a buffer taken before that must not be used after it.
     */
    public ByteBuffer buffer() {
        ensureHostAccessible();
        long bytes = regionBytes(0);
        if (bytes > Integer.MAX_VALUE) {
            throw new KvioUnsupportedException(
                    "region 0 of this "
                            + what()
                            + " is "
                            + bytes
                            + " bytes, more than one ByteBuffer can address ("
                            + Integer.MAX_VALUE
                            + "); use slice(region, offset, length) for parts of it");
        }
        return holdingBuffer(regionAddress(0), (int) bytes);
    }

    /**
     * A direct ByteBuffer (native byte order) over [offset, offset + length) of a region; it holds
     * the memory as {@link #buffer()}'s does, and is valid as long. KvioInvalidArgumentException
     * for a negative length; KvioOutOfRangeException for a region or a byte range outside the pool.
     */
    public ByteBuffer slice(int region, long offset, int length) {
        ensureHostAccessible();
        if (length < 0) { // a size no call accepts, not a place outside this pool
            throw new KvioInvalidArgumentException(
                    "length must be at least 0, got " + length + " (a size in bytes)");
        }
        long[] r = region(region);
        if (offset < 0 || offset > r[1] - length) {
            throw new KvioOutOfRangeException(
                    "slice ["
                            + offset
                            + ", "
                            + offset
                            + " + "
                            + length
                            + ") is outside region "
                            + region
                            + " of this "
                            + what()
                            + ", which has "
                            + r[1]
                            + " bytes (valid: 0 <= offset, length >= 0, offset + length <= "
                            + r[1]
                            + ")");
        }
        return holdingBuffer(r[0] + offset, length);
    }

    /**
     * Reads {@code dst.remaining()} bytes of region {@code region}, starting at byte {@code
     * offset}, into {@code dst} (from its position, which advances), through this pool's backend: a
     * memcpy for host memory, a copy on a private stream of the pool's device for CUDA and Ascend
     * device memory. It is synchronous: the bytes are in {@code dst} when it returns. It is not
     * ordered with transfers in flight, so wait for those first. For tests, debugging and warm-up,
     * not for the serving path: use transfers there. Heap buffers are copied through a temporary
     * native buffer. KvioOutOfRangeException for a region or byte range outside the pool (nothing
     * is copied then), ReadOnlyBufferException for a read-only {@code dst}. KvioClosedException,
     * with nothing copied, if the pool is closed, if it wraps caller memory whose arena was closed
     * (Java 22+: a MemorySegment, or a ByteBuffer view of one), or if {@code dst} is a ByteBuffer
     * view of a MemorySegment whose arena was closed.
     */
    public void copyTo(int region, long offset, ByteBuffer dst) {
        Objects.requireNonNull(dst, "dst");
        if (dst.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
        copy(region, offset, dst, true);
    }

    /** {@link #copyTo(int, long, ByteBuffer)} from the start of region 0. */
    public void copyTo(ByteBuffer dst) {
        copyTo(0, 0, dst);
    }

    /**
     * Writes {@code src.remaining()} bytes of {@code src} (from its position, which advances) into
     * region {@code region} at byte {@code offset}, through this pool's backend; synchronous and
     * unordered with transfers in flight, like {@link #copyTo(int, long, ByteBuffer)}, and refused
     * in the same cases (KvioClosedException for a {@code src} whose arena was closed).
     */
    public void copyFrom(int region, long offset, ByteBuffer src) {
        Objects.requireNonNull(src, "src");
        copy(region, offset, src, false);
    }

    /** {@link #copyFrom(int, long, ByteBuffer)} to the start of region 0. */
    public void copyFrom(ByteBuffer src) {
        copyFrom(0, 0, src);
    }

    /**
     * Backs every page of this pool's pageable host memory with physical memory now, keeping every
     * byte (kvio_pool_prefault). The operating system maps such memory on first touch, so without
     * this the first transfers into a new host pool also pay a page fault per page (the first
     * backup into a new 512 MiB pool took 4 times as long as the second in docs/benchmarks.md, "A
     * new host pool's first backup"). Call it at start-up, before the pool's transfers: it is not
     * ordered with them. Pinned and device memory is backed already: nothing to do.
     *
     * <p>Pageable memory, kvio's own and caller memory alike, is populated with
     * madvise(MADV_POPULATE_WRITE) (Linux 5.14). On a kernel without it (before 5.14; some
     * sandboxes, such as gVisor), memory kvio allocated is touched instead, one byte of each page
     * (written back as it was, atomically), while caller memory is refused with
     * KvioUnsupportedException naming MADV_POPULATE_WRITE, since kvio does not write to caller
     * memory: touch a byte of each page yourself.
     *
     * @throws KvioClosedException the pool is closed, or wraps caller memory whose arena was closed
     *     (Java 22+)
     * @throws KvioInvalidArgumentException the memory cannot be backed for writing (madvise
     *     answered EINVAL or EPERM): a read-only mapping wrapped by address, or memory that is not
     *     ordinary (a device mapping, VM_IO or VM_PFNMAP)
     * @throws KvioOutOfMemoryException the system cannot back the pages (ENOMEM, EAGAIN), or a
     *     write to them would raise SIGBUS (EFAULT: a file mapping past the end of its file, huge
     *     pages of a hugetlb mapping exhausted); the message says which. The page-touching fallback
     *     (kvio's own memory on an older kernel) cannot report a shortage: the kernel may kill the
     *     process instead (the OOM killer), as at any first write to such memory
     * @throws KvioUnsupportedException caller memory on a kernel without
     *     madvise(MADV_POPULATE_WRITE)
     */
    public void prefault() {
        ensureMemoryAlive();
        NativeBridge.poolPrefault(handle());
    }

    private static final int STAGING_BYTES = 8 << 20;

    private void copy(int region, long offset, ByteBuffer buffer, boolean toHost) {
        long[] r = region(region);
        int bytes = buffer.remaining();
        if (offset < 0 || offset > r[1] - bytes) {
            throw new KvioOutOfRangeException(
                    (toHost ? "copyTo" : "copyFrom")
                            + ": bytes ["
                            + offset
                            + ", "
                            + offset
                            + " + "
                            + bytes
                            + ") are outside region "
                            + region
                            + " of this "
                            + what()
                            + ", which has "
                            + r[1]
                            + " bytes (valid: 0 <= offset, offset + buffer.remaining() <= "
                            + r[1]
                            + ")");
        }
        String name = toHost ? "dst" : "src";
        ensureMemoryAlive();
        if (buffer.isDirect()) {
            DirectBuffers.ensureAlive(buffer, name); // before any native call, even for 0 bytes
        }
        if (bytes == 0) {
            return;
        }
        long pool = handle();
        int position = buffer.position();
        if (buffer.isDirect()) {
            long address = DirectBuffers.address(buffer) + position; // checked above
            NativeBridge.poolCopy(pool, region, offset, address, bytes, toHost);
        } else {
            int chunk = Math.min(bytes, STAGING_BYTES);
            long staging = NativeBridge.malloc(chunk);
            try {
                ByteBuffer stage = NativeBridge.byteBuffer(staging, chunk);
                NativeBridge.forEachChunk(
                        bytes,
                        chunk,
                        (done, n) -> {
                            if (toHost) {
                                NativeBridge.poolCopy(
                                        pool, region, offset + done, staging, n, true);
                                buffer.put(position + done, stage, 0, n);
                            } else {
                                stage.put(0, buffer, position + done, n);
                                NativeBridge.poolCopy(
                                        pool, region, offset + done, staging, n, false);
                            }
                        });
            } finally {
                NativeBridge.free(staging);
            }
        }
        buffer.position(position + bytes);
    }

    @Override
    public String toString() {
        return getClass().getSimpleName()
                + "{"
                + spec
                + ", backend="
                + backend.userName()
                + (isClosed() ? ", closed" : "")
                + "}";
    }
}
