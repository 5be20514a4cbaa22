/*
 * MemorySegment interop (Java 22+, java.lang.foreign): index lists viewing segments, host pools
 * over a caller's segment, and pools' memory as segments. This class is in the multi-release JAR
 * under META-INF/versions/22 only, because every method's signature needs MemorySegment, which
 * Java 17 lacks: on Java 17 it does not exist (the ByteBuffer forms cover the same ground there:
 * TokenIndices.wrap(LongBuffer), HostKvPool.Builder.wrap(ByteBuffer), KvPool.buffer()/slice()).
 * Segments of a pool's memory belong to an arena the pool closes when it is closed, so using one
 * afterwards throws IllegalStateException instead of touching freed memory.
 */
package io.kvio;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.util.Objects;

public final class Segments {
    private Segments() {}

    /**
     * An index list over a segment of int64 token slots (native byte order). A native segment is
     * viewed, not copied: it must stay alive and unchanged while transfers are submitted with the
     * list (the list keeps it reachable, and submitting with a list whose segment's arena was
     * closed throws KvioClosedException). A heap segment is copied into memory the list owns.
     * KvioInvalidArgumentException if the size is not a multiple of 8 or a native segment is not
     * 8-byte aligned.
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
            return TokenIndices.of(indices.toArray(ValueLayout.JAVA_LONG));
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
     * lives.
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
        return configured.wrap(memory.address(), memory.byteSize(), memory).build();
    }

    /**
     * Region {@code region} of a pool's memory as a segment (host pools, and device pools of the
     * cpu io backend; KvioUnsupportedException for CUDA or Ascend device memory, which the host
     * cannot address: use {@link KvPool#copyTo(int, long, java.nio.ByteBuffer)} there). The segment
     * is valid until the pool is closed; after {@link KvPool#close()} every access throws
     * IllegalStateException. It keeps the pool reachable.
     */
    public static MemorySegment region(KvPool pool, int region) {
        Objects.requireNonNull(pool, "pool");
        pool.ensureHostAccessible();
        long address = pool.regionAddress(region);
        long bytes = pool.regionBytes(region);
        Arena arena = pool.closeScoped(Arena::ofShared, Arena::close);
        return MemorySegment.ofAddress(address)
                .reinterpret(bytes, arena, segment -> Reference.reachabilityFence(pool));
    }
}
