/*
 * Entry points that are not tied to one pool: the version, the general transfer (any pool to
 * any pool, any layouts, a layer range on each side) and the support-rule check that host pools
 * run at configuration time. Arguments are validated in Java where that is cheap (nulls, closed
 * objects, lengths, layer ranges, backends); per-index checks run natively before any byte moves.
 */
package io.kvio;

import java.util.Objects;

public final class Kvio {
    /** Version of this Java API; the native library must report the same (checked at load). */
    public static final String VERSION = "0.1.0";

    private Kvio() {}

    /** The native library's version (equal to VERSION once loaded). */
    public static String version() {
        return Dispatcher.nativeVersion();
    }

    /** Where the JNI library was loaded from (diagnostics). */
    public static String nativeLibraryPath() {
        Dispatcher.ensureLoaded();
        return Dispatcher.libraryPath();
    }

    /**
     * Submits the general transfer: for each index pair i and each layer j < numLayers, every
     * component's row of token srcIndices[i] in src layer srcLayerStart + j is copied to token
     * dstIndices[i] in dst layer dstLayerStart + j. Index lists may be closed once this returns.
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
        Objects.requireNonNull(executor, "executor");
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(dst, "dst");
        Objects.requireNonNull(srcIndices, "srcIndices");
        Objects.requireNonNull(dstIndices, "dstIndices");
        ensureOpen("src", src);
        ensureOpen("dst", dst);
        ensureOpen("srcIndices", srcIndices);
        ensureOpen("dstIndices", dstIndices);
        long executorHandle = executor.handle();
        long srcHandle = src.handle();
        long dstHandle = dst.handle();
        for (KvPool p : new KvPool[] {src, dst}) {
            if (p instanceof DeviceKvPool && p.backend() != executor.backend()) {
                throw new KvioInvalidArgumentException(
                        "the "
                                + (p == src ? "src" : "dst")
                                + " device pool lives on io backend '"
                                + p.backend().userName()
                                + "' but the executor runs io backend '"
                                + executor.backend().userName()
                                + "'; use an executor of the device pool's backend");
            }
        }
        checkLengths("srcIndices", srcIndices, "dstIndices", dstIndices);
        checkLayers("src", srcLayerStart, numLayers, src.spec().numLayers());
        checkLayers("dst", dstLayerStart, numLayers, dst.spec().numLayers());
        return submit(
                src instanceof DeviceKvPool && dst instanceof HostKvPool
                        ? TransferEvent.BACKUP
                        : src instanceof HostKvPool && dst instanceof DeviceKvPool
                                ? TransferEvent.LOAD
                                : TransferEvent.OTHER,
                executorHandle,
                srcHandle,
                dstHandle,
                srcIndices,
                dstIndices,
                srcLayerStart,
                dstLayerStart,
                numLayers);
    }

    /**
     * The one submit path. {@code direction} (TransferEvent.BACKUP, LOAD or OTHER) is for the
     * Flight Recorder event only, begun here when a recording enables it.
     */
    static Transfer submit(
            String direction,
            long executor,
            long src,
            long dst,
            TokenIndices srcIndices,
            TokenIndices dstIndices,
            long srcLayerStart,
            long dstLayerStart,
            long numLayers) {
        TransferEvent event = TransferEvent.begin(direction);
        long[] bytes = new long[1];
        long handle =
                Dispatcher.submit(
                        executor,
                        src,
                        dst,
                        srcIndices.address(),
                        dstIndices.address(),
                        srcIndices.size(),
                        srcLayerStart,
                        dstLayerStart,
                        numLayers,
                        bytes);
        return Transfer.submitted(handle, bytes[0], event);
    }

    static void ensureOpen(String name, KvPool pool) {
        if (pool.isClosed()) {
            throw new KvioClosedException(name + " (" + pool.what() + ") is closed");
        }
    }

    static void ensureOpen(String name, TokenIndices indices) {
        if (indices.isClosed()) {
            throw new KvioClosedException(name + " is closed");
        }
    }

    static void checkLengths(String aName, TokenIndices a, String bName, TokenIndices b) {
        long an = a.size();
        long bn = b.size();
        if (an != bn) {
            throw new KvioInvalidArgumentException(
                    aName
                            + " has "
                            + an
                            + " entries but "
                            + bName
                            + " has "
                            + bn
                            + "; each source slot needs exactly one destination slot");
        }
    }

    static void checkLayers(String side, long start, long count, long poolLayers) {
        if (count < 1) {
            throw new KvioInvalidArgumentException("numLayers must be at least 1, got " + count);
        }
        if (start < 0 || start >= poolLayers) {
            throw new KvioOutOfRangeException(
                    side
                            + " layer start "
                            + start
                            + " is outside the "
                            + side
                            + " pool's layers (valid: 0 to "
                            + (poolLayers - 1)
                            + ")");
        }
        if (count > poolLayers - start) {
            throw new KvioOutOfRangeException(
                    side
                            + " layers ["
                            + start
                            + ", "
                            + (start + count)
                            + ") run past the "
                            + side
                            + " pool's "
                            + poolLayers
                            + " layers (valid: numLayers <= "
                            + (poolLayers - start)
                            + " from layer "
                            + start
                            + ")");
        }
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
        Dispatcher.checkSupport(
                kind.ordinal(),
                layout.ordinal(),
                backend.ordinal(),
                granularity.ordinal(),
                heads,
                headBytes,
                pageSize,
                hostLayers,
                deviceLayers,
                deviceLayerStart);
    }
}
