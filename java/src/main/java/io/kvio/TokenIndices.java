/*
 * A list of token slot numbers (page * pageSize + slot) in native int64 memory, as transfers take
 * them. of(...) and pages(...) copy into memory this object owns (freed by close() or, if
 * forgotten, by a Cleaner), arrays and buffers alike; wrap(...) only views caller-owned memory (a
 * raw address, or a direct native-order LongBuffer, which it keeps reachable), never copies it
 * and never frees it: a buffer it cannot view is refused, not silently copied.
 * On Java 22+, io.kvio.Segments wraps MemorySegments the same way, and a list viewing a segment (or
 * a buffer view of one) is refused once the segment's arena is closed. Transfers read
 * the list only while they are submitted, so it may be closed or reused right after.
 */
package io.kvio;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.ByteOrder;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

public final class TokenIndices implements AutoCloseable {
    private final long address;
    private final long count;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Cleaner.Cleanable cleanable; // null for wrapped memory
    private final LongBuffer view; // null when too long for one buffer
    private final Object memory; // the wrapped buffer or segment, kept reachable; else null
    private final BooleanSupplier alive; // whether a wrapped segment is still alive; or null

    private TokenIndices(long address, long count, boolean owned) {
        this(address, count, owned, null, null);
    }

    private TokenIndices(
            long address, long count, boolean owned, Object memory, BooleanSupplier alive) {
        this.memory = memory;
        this.alive = alive;
        this.address = address;
        this.count = count;
        this.view =
                count > 0 && count <= Integer.MAX_VALUE / 8
                        ? NativeBridge.byteBuffer(address, (int) (count * 8)).asLongBuffer()
                        : null;
        this.cleanable =
                owned
                        ? NativeBridge.CLEANER.register(
                                this, NativeBridge.closing(NativeBridge::free, address))
                        : null;
    }

    /**
     * Copies {@code indices} into native memory. An empty list is allowed: transfers with it
     * complete at once, moving 0 bytes. For one call, the transfer methods also take the array
     * itself (nothing to close).
     */
    public static TokenIndices of(long... indices) {
        Objects.requireNonNull(indices, "indices");
        return new TokenIndices(NativeBridge.copyToNative(indices), indices.length, true);
    }

    /** Copies {@code indices} (widened to int64) into native memory. */
    public static TokenIndices of(int... indices) {
        Objects.requireNonNull(indices, "indices");
        return new TokenIndices(NativeBridge.copyToNative(indices), indices.length, true);
    }

    /**
     * Views {@code count} int64 values at {@code address}, caller-owned native memory that must
     * stay valid while transfers are submitted with this list; close() does not free it.
     */
    public static TokenIndices wrap(long address, long count) {
        if (count < 0) {
            throw new KvioInvalidArgumentException("count must be at least 0, got " + count);
        }
        if (address == 0 && count > 0) {
            throw new KvioInvalidArgumentException("address is 0 (null) but count is " + count);
        }
        return new TokenIndices(address, count, false);
    }

    /**
     * Views the int64 values from {@code indices}' position to its limit, without a copy: the list
     * reads the buffer's memory, so an engine may refill one buffer per batch and wrap it again (or
     * keep the list, which sees the new values). The buffer must be direct and in native byte
     * order; its contents must stay unchanged while transfers are submitted with this list, and
     * this list keeps the buffer reachable until it is. The buffer's position is left as it was.
     * Loads kvio's native library if no kvio call has yet. On Java 22+ the buffer may be a view of
     * a MemorySegment (segment.asByteBuffer()): KvioClosedException if its arena is closed, and
     * submitting with the list once it is closed throws KvioClosedException too.
     *
     * @throws KvioInvalidArgumentException for a buffer that cannot be viewed: a heap buffer, or a
     *     direct one in the other byte order (such as {@code
     *     ByteBuffer.allocateDirect(n).asLongBuffer()}, big-endian); the message says how to make
     *     one that can be, or to copy it with {@link #of(LongBuffer)}
     */
    public static TokenIndices wrap(LongBuffer indices) {
        Objects.requireNonNull(indices, "indices");
        if (!indices.isDirect() || indices.order() != ByteOrder.nativeOrder()) {
            throw new KvioInvalidArgumentException(
                    "indices is "
                            + (indices.isDirect()
                                    ? "a direct LongBuffer in "
                                            + indices.order()
                                            + " byte order, but this machine's is "
                                            + ByteOrder.nativeOrder()
                                    : "a heap LongBuffer (over a long[])")
                            + ": wrap(LongBuffer) views a buffer without copying it, and kvio reads"
                            + " int64 slots in native byte order from native memory; allocate one"
                            + " it can view with ByteBuffer.allocateDirect(8 * n)"
                            + ".order(ByteOrder.nativeOrder()).asLongBuffer(), or copy this one"
                            + " with TokenIndices.of(indices)");
        }
        int count = indices.remaining();
        BooleanSupplier alive = DirectBuffers.checkedLiveness(indices, "indices");
        if (count == 0) {
            return new TokenIndices(0, 0, false, null, null);
        }
        return new TokenIndices(
                DirectBuffers.address(indices) + indices.position() * 8L,
                count,
                false,
                indices,
                alive);
    }

    /**
     * Copies the int64 values from {@code indices}' position to its limit into memory this list
     * owns, whatever the buffer (heap or direct, either byte order): later writes to the buffer do
     * not change the list. The buffer's position is left as it was. {@link #wrap(LongBuffer)} views
     * a direct native-order buffer instead.
     */
    public static TokenIndices of(LongBuffer indices) {
        Objects.requireNonNull(indices, "indices");
        long[] copy = new long[indices.remaining()];
        indices.duplicate().get(copy);
        return of(copy);
    }

    /**
     * Copies the int32 values from {@code indices}' position to its limit, widened to int64, into
     * memory this list owns (transfers take int64 slots, so an IntBuffer cannot be viewed). The
     * buffer's position is left as it was.
     */
    public static TokenIndices of(IntBuffer indices) {
        Objects.requireNonNull(indices, "indices");
        int[] copy = new int[indices.remaining()];
        indices.duplicate().get(copy);
        return of(copy);
    }

    /**
     * Views {@code count} int64 values at {@code address} inside {@code memory} (a buffer or
     * segment the list keeps reachable).
     */
    static TokenIndices wrap(long address, long count, Object memory, BooleanSupplier alive) {
        wrap(address, count); // the checks; owns nothing, so nothing to close
        return new TokenIndices(address, count, false, memory, alive);
    }

    /**
     * The token slots of whole pages: for each page id p, the pageSize slots p*pageSize to
     * p*pageSize + pageSize - 1, in the order given.
     */
    public static TokenIndices pages(long pageSize, long... pageIds) {
        Objects.requireNonNull(pageIds, "pageIds");
        if (pageSize < 1) {
            throw new KvioInvalidArgumentException("pageSize must be at least 1, got " + pageSize);
        }
        long total = pageSize * pageIds.length;
        if (pageIds.length != 0
                && (total / pageIds.length != pageSize || total > Integer.MAX_VALUE - 8)) {
            throw new KvioInvalidArgumentException(
                    pageIds.length
                            + " pages of "
                            + pageSize
                            + " tokens are too many slots for one list; split the transfer");
        }
        long[] slots = new long[(int) total];
        int i = 0;
        for (long page : pageIds) {
            if (page < 0) {
                throw new KvioOutOfRangeException(
                        "page id " + page + " is negative (page ids start at 0)");
            }
            if (page > (Long.MAX_VALUE - (pageSize - 1)) / pageSize) {
                // its slots would pass Long.MAX_VALUE and wrap to small, valid-looking slots
                throw new KvioOutOfRangeException(
                        "page id "
                                + page
                                + " is too large: its slots of "
                                + pageSize
                                + " tokens each pass the largest slot number, "
                                + Long.MAX_VALUE);
            }
            long first = page * pageSize;
            for (long s = 0; s < pageSize; s++) {
                slots[i++] = first + s;
            }
        }
        return of(slots);
    }

    public long size() {
        ensureOpen();
        return count;
    }

    /** Address of the first int64 value. */
    public long address() {
        ensureOpen();
        return address;
    }

    public long get(long i) {
        ensureOpen();
        if (i < 0 || i >= count) {
            throw new KvioOutOfRangeException(
                    "index "
                            + i
                            + " is out of range"
                            + (count == 0
                                    ? ": this list is empty"
                                    : " (valid: 0 to " + (count - 1) + ")"));
        }
        try {
            return view != null ? view.get((int) i) : NativeBridge.getLong(address + i * 8);
        } finally {
            // Owned memory is freed by a Cleaner once this list is unreachable, which may happen
            // as soon as the view or address was read: not before the read.
            Reference.reachabilityFence(this);
        }
    }

    public boolean isClosed() {
        return closed.get();
    }

    /** Frees memory this list owns; idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true) && cleanable != null) {
            cleanable.clean();
        }
    }

    void ensureOpen() {
        if (closed.get()) {
            throw new KvioClosedException("this token index list is closed");
        }
        if (alive != null && !alive.getAsBoolean()) {
            throw new KvioClosedException(
                    "the memory this token index list views (a MemorySegment, or a ByteBuffer"
                            + " view of one) is no longer alive (its arena was closed)");
        }
    }

    @Override
    public String toString() {
        if (closed.get()) {
            return "TokenIndices{closed}";
        }
        StringBuilder sb = new StringBuilder("TokenIndices{size=").append(count).append(", [");
        for (long i = 0; i < Math.min(count, 8); i++) {
            sb.append(i == 0 ? "" : ", ").append(get(i));
        }
        return sb.append(count > 8 ? ", ...]}" : "]}").toString();
    }
}
