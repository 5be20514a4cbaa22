/*
 * One index-list argument of a transfer as the Java caller passed it: a TokenIndices, or a long[]
 * or int[] for one call, with the parameter name the caller wrote (for messages). Arrays are copied
 * into per-thread native scratch memory at submission (two slots per thread: source and
 * destination), which native code reads only during the submitting call, so no native object is
 * left for the caller to close. Used by Kvio.transfer and HostKvPool's request forms.
 */
package io.kvio;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.util.Objects;
import org.bytedeco.javacpp.Pointer;

final class IndexArg {
    /**
     * Scratch kept per thread and slot up to this size (32768 indices; at most 512 KiB per thread);
     * larger lists get a one-off copy in native memory from malloc for the call (not zero-filled,
     * as a direct buffer would be, and freed by release() at once instead of by a later GC).
     */
    private static final int RETAINED_BYTES = 1 << 18;

    private final String name;
    private final TokenIndices list;
    private final long[] longs;
    private final int[] ints;
    // Whole pages (hostPages/devicePages): the name the caller wrote, how many pages, the pool's
    // page size and whose it is ("host", "device"); pageName null for lists of token slots.
    private final String pageName;
    private final long pages;
    private final long pageSize;
    private final String pageOwner;

    private IndexArg(
            String name,
            TokenIndices list,
            long[] longs,
            int[] ints,
            String pageName,
            long pages,
            long pageSize,
            String pageOwner) {
        this.name = name;
        this.list = list;
        this.longs = longs;
        this.ints = ints;
        this.pageName = pageName;
        this.pages = pages;
        this.pageSize = pageSize;
        this.pageOwner = pageOwner;
    }

    private IndexArg(String name, TokenIndices list, long[] longs, int[] ints) {
        this(name, list, longs, ints, null, 0, 0, null);
    }

    static IndexArg of(String name, TokenIndices list) {
        return new IndexArg(name, Objects.requireNonNull(list, name), null, null);
    }

    static IndexArg of(String name, long[] values) {
        return new IndexArg(name, null, Objects.requireNonNull(values, name), null);
    }

    static IndexArg of(String name, int[] values) {
        return new IndexArg(name, null, null, Objects.requireNonNull(values, name));
    }

    /**
     * Token slots expanded from whole pages: {@code pageName} is the call the caller wrote
     * ("hostPages"), {@code pages} the page ids given, {@code pageSize} the page size of the pool
     * they belong to, {@code owner} whose it is ("host", "device"). Messages about the list's
     * length then count pages, as the caller did ({@link #sizeText()}); {@code name} stays for
     * messages about single slots.
     */
    static IndexArg ofPages(
            String name, long[] slots, String pageName, long pages, long pageSize, String owner) {
        return new IndexArg(
                name,
                null,
                Objects.requireNonNull(slots, name),
                null,
                Objects.requireNonNull(pageName, "pageName"),
                pages,
                pageSize,
                owner);
    }

    String name() {
        return name;
    }

    /** The name for a message about the list's length: the page call for whole pages. */
    String lengthName() {
        return pageName != null ? pageName : name;
    }

    /**
     * The list's length in the caller's units: "3 entries", or for whole pages "1 page (4 token
     * slots at the host's page size 4)".
     */
    String sizeText() {
        if (pageName == null) {
            return Kvio.entries(size());
        }
        return pages
                + (pages == 1 ? " page (" : " pages (")
                + size()
                + (size() == 1 ? " token slot" : " token slots")
                + " at the "
                + pageOwner
                + "'s page size "
                + pageSize
                + ")";
    }

    void ensureOpen() {
        if (list != null && list.isClosed()) {
            throw new KvioClosedException(name + " is closed");
        }
    }

    long size() {
        return list != null ? list.size() : longs != null ? longs.length : ints.length;
    }

    /** The address of the int64 values, valid until the next address(slot) on this thread. */
    long address(int slot) {
        if (list != null) {
            return list.address();
        }
        int count = longs != null ? longs.length : ints.length;
        if (count > Integer.MAX_VALUE / 8) {
            throw new KvioInvalidArgumentException(
                    name
                            + " has "
                            + count
                            + " entries, more than one call copies from an array (at most "
                            + Integer.MAX_VALUE / 8
                            + "); pass a TokenIndices or split the transfer");
        }
        Scratch s = SCRATCH.get();
        int bytes = count * 8;
        if (bytes > RETAINED_BYTES) {
            NativeBridge.ensureLoaded();
            NativeBridge.free(s.oneOff[slot]); // one a call left unreleased, if any
            s.oneOff[slot] = 0;
            s.oneOff[slot] =
                    longs != null
                            ? NativeBridge.copyToNative(longs)
                            : NativeBridge.copyToNative(ints);
            return s.oneOff[slot];
        }
        LongBuffer out = s.views[slot];
        long address = s.addresses[slot];
        if (out == null || out.capacity() < count) {
            NativeBridge.ensureLoaded();
            int capacity = Math.max(64, Integer.highestOneBit(Math.max(bytes - 1, 1)) << 1);
            ByteBuffer buffer = ByteBuffer.allocateDirect(capacity).order(ByteOrder.nativeOrder());
            address = new Pointer(buffer).address();
            out = buffer.asLongBuffer(); // keeps the buffer reachable
            s.views[slot] = out;
            s.addresses[slot] = address;
        }
        // Absolute puts on the kept view: no buffer view is made per call.
        if (longs != null) {
            out.put(0, longs);
        } else {
            for (int i = 0; i < count; i++) {
                out.put(i, ints[i]);
            }
        }
        return address;
    }

    /** Frees this thread's one-off copies; call after the native call that read them. */
    static void release() {
        Scratch s = SCRATCH.get();
        for (int slot = 0; slot < 2; slot++) {
            long address = s.oneOff[slot];
            if (address != 0) {
                s.oneOff[slot] = 0;
                NativeBridge.free(address);
            }
        }
    }

    /** One-off copies this thread holds (0 outside the native call that reads them); tests. */
    static int oneOffCopiesHeld() {
        Scratch s = SCRATCH.get();
        return (s.oneOff[0] != 0 ? 1 : 0) + (s.oneOff[1] != 0 ? 1 : 0);
    }

    /**
     * Per slot: the kept scratch (a view of its direct buffer) and its address; the address of a
     * one-off copy (malloc'd, 0 if none).
     */
    private static final class Scratch {
        final LongBuffer[] views = new LongBuffer[2];
        final long[] addresses = new long[2];
        final long[] oneOff = new long[2];
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);
}
