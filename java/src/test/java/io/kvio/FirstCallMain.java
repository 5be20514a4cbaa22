/*
 * Run in a fresh JVM by TokenIndicesBufferTest: TokenIndices.wrap(LongBuffer) as the very first
 * kvio call (on today's natives it must load the library itself; JavaCPP's Pointer natives live in
 * it, so taking a buffer's address first used to throw UnsatisfiedLinkError).
 */
package io.kvio;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;

public final class FirstCallMain {
    private FirstCallMain() {}

    public static void main(String[] args) {
        LongBuffer slots =
                ByteBuffer.allocateDirect(24).order(ByteOrder.nativeOrder()).asLongBuffer();
        slots.put(new long[] {3, 1, 4}).flip();
        try (TokenIndices list = TokenIndices.wrap(slots)) {
            System.out.println(list);
        }
    }
}
