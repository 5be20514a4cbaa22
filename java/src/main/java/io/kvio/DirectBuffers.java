/*
 * Whether a direct buffer's memory is still there, asked before kvio takes its address (copyTo,
 * copyFrom, HostKvPool.Builder.wrap(ByteBuffer), TokenIndices.wrap(LongBuffer)) and, for pools and
 * index lists that view such a buffer, before each later use. On Java 17 a direct buffer's memory
 * lives as long as the buffer is reachable, so nothing is checked. This class has a Java 22+
 * version in the multi-release JAR (src/main/java22): there a buffer may be a view of a
 * MemorySegment (segment.asByteBuffer()) whose arena can be closed while the buffer is still
 * reachable, and JNI's GetDirectBufferAddress still answers the freed address.
 */
package io.kvio;

import java.nio.Buffer;
import java.util.function.BooleanSupplier;

final class DirectBuffers {
    private DirectBuffers() {}

    /** KvioClosedException, naming {@code name}, if direct buffer {@code buffer} is dead. */
    static void ensureAlive(Buffer buffer, String name) {}

    /**
     * Whether the memory of direct buffer {@code buffer} is still alive, asked on each later use of
     * a view of it, once {@link #ensureAlive} passed now; null when nothing but its unreachability
     * can end it (always, on Java 17).
     */
    static BooleanSupplier checkedLiveness(Buffer buffer, String name) {
        return null;
    }

    /**
     * The address of direct buffer {@code buffer}'s index 0; the caller has just checked the buffer
     * ({@link #ensureAlive} or {@link #checkedLiveness}).
     */
    static long address(Buffer buffer) {
        return NativeBridge.directAddress(buffer);
    }
}
