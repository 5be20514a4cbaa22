/*
 * The transfer tests' face of the oracle. The layout math (naive offsets from the documented
 * shapes, placements, the expected destination of a transfer, patterns, index sets) lives in the
 * kvio-oracle module (oracle/, io.kvio.oracle), which shares no code with kvio and which the tests
 * call directly; this class only maps KvLayout to the oracle's Shape by its user name, moves bytes
 * between ByteBuffers and arrays, and turns the oracle's mismatch descriptions into TestNG
 * failures.
 */
package io.kvio;

import static org.testng.Assert.fail;

import io.kvio.oracle.Oracle;
import io.kvio.oracle.Placement;
import io.kvio.oracle.Shape;
import java.nio.ByteBuffer;

final class LayoutOracle {
    private LayoutOracle() {}

    /** The oracle's shape of a kvio layout, matched by user name (never by kvio's own shape). */
    static Shape shape(KvLayout layout) {
        return Shape.of(layout.userName());
    }

    // ---- buffers ----

    static byte[] snapshot(ByteBuffer buffer) {
        ByteBuffer d = buffer.duplicate();
        d.clear();
        byte[] out = new byte[d.capacity()];
        d.get(out);
        return out;
    }

    static void write(ByteBuffer buffer, byte[] content) {
        ByteBuffer d = buffer.duplicate();
        d.clear();
        d.put(content);
    }

    /** Fills the buffer with a seeded pattern and returns what was written. */
    static byte[] fill(ByteBuffer buffer, long seed) {
        byte[] content = Oracle.pattern(buffer.capacity(), seed);
        write(buffer, content);
        return content;
    }

    /** Fills the buffer with a canary distinct from any data seed and returns what was written. */
    static byte[] canary(ByteBuffer buffer, long seed) {
        byte[] content = Oracle.canary(buffer.capacity(), seed);
        write(buffer, content);
        return content;
    }

    // ---- assertions ----

    /** Compares the whole buffer against the expectation; reports the first differing byte. */
    static void assertBufferEquals(ByteBuffer actualBuffer, byte[] expected, String what) {
        assertBytesEqual(snapshot(actualBuffer), expected, what);
    }

    static void assertBytesEqual(byte[] actual, byte[] expected, String what) {
        String mismatch = Oracle.firstMismatch(actual, expected);
        if (mismatch != null) {
            fail(what + ": " + mismatch);
        }
    }

    /** Like {@link #assertBytesEqual} but names the (c, l, t, h) of the first wrong byte. */
    static void assertPoolEquals(byte[] actual, byte[] expected, Placement where, String what) {
        String mismatch = Oracle.firstMismatch(actual, expected, where);
        if (mismatch != null) {
            fail(what + ": " + mismatch);
        }
    }
}
