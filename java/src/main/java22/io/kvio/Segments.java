/*
 * MemorySegment interop (Java 22+, java.lang.foreign): index lists viewing segments, host pools
 * over a caller's segment, and pools' memory as segments. This class is in the multi-release JAR
 * under META-INF/versions/22 only, because every method's signature needs MemorySegment, which
 * Java 17 lacks: on Java 17 it does not exist (the ByteBuffer forms cover the same ground there:
 * TokenIndices.wrap(LongBuffer), HostKvPool.Builder.wrap(ByteBuffer), KvPool.buffer()/slice()).
 * Segments of memory kvio allocated belong to an arena the pool closes when it is closed, so using
 * one afterwards throws IllegalStateException instead of touching freed memory; segments of a pool
 * over caller memory are slices of that memory and live as long as it does (its arena). A pool over
 * a segment remembers that segment's scope and refuses every use that would touch the memory once
 * its arena is closed (KvioClosedException, before any native call).
 */
package io.kvio;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReferenceArray;

public final class Segments {
    private Segments() {}

    /**
     * An index list over a segment of int64 token slots (native byte order). A native segment is
     * viewed, not copied: it must stay alive and unchanged while transfers are submitted with the
     * list (the list keeps it reachable, and submitting with a list whose segment's arena was
     * closed throws KvioClosedException). A heap segment (over a long[], or any other array or heap
     * buffer, at any offset) is copied into memory the list owns. KvioInvalidArgumentException if
     * the size is not a multiple of 8 or a native segment is not 8-byte aligned.
     */
    public static TokenIndices wrapIndices(MemorySegment indices) {
        Objects.requireNonNull(indices, "indices");
        long bytes = indices.byteSize();
        if (bytes % 8 != 0) {
            throw new KvioInvalidArgumentException(
                    "indices is "
                            + bytes
                            + " bytes, which is not a whole number of int64 token slots (a"
                            + " multiple of 8)");
        }
        if (!indices.isNative()) {
            // Unaligned: a heap segment over a byte[] (or at an odd offset) is not 8-byte aligned,
            // and toArray(JAVA_LONG) would throw IllegalArgumentException for it.
            return TokenIndices.of(indices.toArray(ValueLayout.JAVA_LONG_UNALIGNED));
        }
        if (indices.address() % 8 != 0) {
            throw new KvioInvalidArgumentException(
                    "indices at 0x"
                            + Long.toHexString(indices.address())
                            + " is not 8-byte aligned; allocate it with ValueLayout.JAVA_LONG");
        }
        if (!indices.scope().isAlive()) {
            throw new KvioClosedException("indices' arena is closed");
        }
        return TokenIndices.wrap(
                bytes == 0 ? 0 : indices.address(), bytes / 8, indices, indices.scope()::isAlive);
    }

    /**
     * Builds the host pool {@code configured} describes over the caller's native segment {@code
     * memory} instead of allocating (see {@link HostKvPool.Builder#wrap(long, long)}): the segment
     * must hold all components (componentBytes * components bytes at least) and stay alive until
     * the pool is closed and kvio no longer uses it ({@link KvPool#closeAndWait()}); the pool keeps
     * it reachable. For the CUDA and Ascend io backends kvio registers (pins) it while the pool
     * lives. Close the pool before the segment's arena: once the arena is closed, every use of the
     * pool that would touch its memory (a transfer or its check, copyTo/copyFrom, buffer/slice,
     * {@link #region}) throws KvioClosedException instead of reading or writing freed memory. That
     * check cannot close the race with an Arena.close() on another thread during such a use (or
     * while a transfer submitted with the pool runs): not closing the arena then is the caller's
     * part. {@code configured} is not changed: it may be used again as a template (for another
     * segment, or with {@link HostKvPool.Builder#build()} to allocate), and {@link
     * HostKvPool.Builder#requiredBytes()} on it says how large {@code memory} must be.
     */
    public static HostKvPool wrapHostPool(HostKvPool.Builder configured, MemorySegment memory) {
        Objects.requireNonNull(configured, "configured");
        Objects.requireNonNull(memory, "memory");
        if (!memory.isNative()) {
            throw new KvioInvalidArgumentException(
                    "memory is a heap segment, whose memory can move; use a native segment"
                            + " (Arena.allocate, or a mapped file)");
        }
        if (memory.isReadOnly()) {
            throw new KvioInvalidArgumentException(
                    "memory is a read-only segment; transfers write host pools");
        }
        if (!memory.scope().isAlive()) {
            throw new KvioClosedException("memory's arena is closed");
        }
        MemorySegment.Scope scope = memory.scope();
        return configured
                .copy() // the caller's builder is left as it was: not wrapping this segment
                .wrap(
                        memory.address(),
                        memory.byteSize(),
                        memory,
                        scope::isAlive,
                        "the MemorySegment given to Segments.wrapHostPool")
                .build();
    }

    /**
     * Region {@code region} of a pool's memory as a segment (host pools, and device pools of the
     * cpu io backend; KvioUnsupportedException for CUDA or Ascend device memory, which the host
     * cannot address: use {@link KvPool#copyTo(int, long, java.nio.ByteBuffer)} there). Each call
     * for one region of one pool returns the same segment.
     *
     * <p>Memory kvio allocated: the segment is valid until the pool is closed; after {@link
     * KvPool#close()} every access throws IllegalStateException. It keeps the pool reachable.
     *
     * <p>A pool over caller memory ({@link #wrapHostPool}, {@link
     * HostKvPool.Builder#wrap(java.nio.ByteBuffer)}): the segment is a slice of that memory (of the
     * caller's segment, or of {@code MemorySegment.ofBuffer} of the buffer), with its scope (a
     * confined arena's owner thread included), so it lives as long as that memory does, not as the
     * pool: once the caller's arena is closed every access throws IllegalStateException. A pool
     * over a raw address ({@link HostKvPool.Builder#wrap(long, long)}) is treated as memory kvio
     * allocated.
     *
     * <p>KvioClosedException if the pool is closed, or its wrapped memory's arena is.
     */
    public static MemorySegment region(KvPool pool, int region) {
        Objects.requireNonNull(pool, "pool");
        pool.ensureHostAccessible();
        pool.ensureMemoryAlive();
        return pool.closeScoped(() -> Regions.of(pool), Regions::close).get(pool, region);
    }

    /**
     * The segments of one pool's regions, made once each (a segment per call would add a cleanup
     * action to the arena per call, kept until the pool closes): views of the caller's memory for a
     * pool over a segment or buffer, else segments of one shared arena that the pool closes in
     * close(), whose one cleanup action keeps the pool reachable while any of them is.
     */
    private static final class Regions {
        private final Arena arena; // null for views of the caller's memory
        private final MemorySegment callerMemory; // null for kvio's memory
        private final AtomicReferenceArray<MemorySegment> segments;

        private Regions(Arena arena, MemorySegment callerMemory, int count) {
            this.arena = arena;
            this.callerMemory = callerMemory;
            this.segments = new AtomicReferenceArray<>(count);
        }

        /** Called under the pool's lock while it is open (KvPool.closeScoped). */
        static Regions of(KvPool pool) {
            Object memory = pool.wrappedMemory();
            MemorySegment caller =
                    memory instanceof MemorySegment segment
                            ? segment
                            : memory instanceof ByteBuffer buffer
                                    // the whole buffer: its position may have moved since wrap
                                    ? MemorySegment.ofBuffer(buffer.duplicate().clear())
                                    : null;
            if (caller != null) {
                return new Regions(null, caller, pool.regionCount());
            }
            Arena arena = Arena.ofShared();
            MemorySegment.NULL.reinterpret(arena, segment -> Reference.reachabilityFence(pool));
            return new Regions(arena, null, pool.regionCount());
        }

        MemorySegment get(KvPool pool, int region) {
            long address = pool.regionAddress(region); // range and closed checks
            long bytes = pool.regionBytes(region);
            MemorySegment segment = segments.get(region);
            if (segment != null) {
                return segment;
            }
            segment =
                    callerMemory != null
                            ? callerMemory.asSlice(address - callerMemory.address(), bytes)
                            : MemorySegment.ofAddress(address).reinterpret(bytes, arena, null);
            return segments.compareAndSet(region, null, segment) ? segment : segments.get(region);
        }

        void close() {
            if (arena != null) {
                arena.close();
            }
        }
    }
}
