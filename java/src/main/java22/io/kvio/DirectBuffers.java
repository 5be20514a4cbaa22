/*
 * Java 22+ version of DirectBuffers (META-INF/versions/22 of the multi-release JAR; the Java 17
 * one is in src/main/java): a direct buffer may be a view of a MemorySegment
 * (segment.asByteBuffer()), dead once that segment's arena is closed although the buffer is still
 * reachable, and JNI's GetDirectBufferAddress, which kvio uses, ignores that and answers the freed
 * address. MemorySegment.ofBuffer gives the buffer's scope: the arena's for such a view (and its
 * slices, duplicates and typed views), an always-alive one for other direct buffers. A check
 * cannot close the race with an Arena.close() on another thread while kvio uses the memory: not
 * closing the arena then is the caller's part (docs/memory-lifetime.md).
 */
package io.kvio;

import java.lang.foreign.MemorySegment;
import java.nio.Buffer;
import java.util.function.BooleanSupplier;

final class DirectBuffers {
    private DirectBuffers() {}

    /** KvioClosedException, naming {@code name}, if direct buffer {@code buffer} is dead. */
    static void ensureAlive(Buffer buffer, String name) {
        if (!MemorySegment.ofBuffer(buffer).scope().isAlive()) {
            throw gone(name);
        }
    }

    /**
     * Whether the memory of direct buffer {@code buffer} is still alive (its arena open), asked on
     * each later use of a view of it, once {@link #ensureAlive} passed now (one segment made for
     * both).
     */
    static BooleanSupplier checkedLiveness(Buffer buffer, String name) {
        MemorySegment.Scope scope = MemorySegment.ofBuffer(buffer).scope();
        if (!scope.isAlive()) {
            throw gone(name);
        }
        return scope::isAlive;
    }

    private static KvioClosedException gone(String name) {
        return new KvioClosedException(
                name
                        + " is a ByteBuffer view of a MemorySegment whose arena was closed: its"
                        + " memory is gone, so kvio neither reads nor writes it");
    }

    /**
     * The address of direct buffer {@code buffer}'s index 0; the caller has just checked the buffer
     * ({@link #ensureAlive} or {@link #checkedLiveness}).
     */
    static long address(Buffer buffer) {
        return NativeBridge.directAddress(buffer);
    }
}
