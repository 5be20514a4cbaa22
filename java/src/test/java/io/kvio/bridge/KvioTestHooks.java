/*
 * Test only: the JavaCPP mapping of kvio's test hooks (native/tests/kvio_test_hooks.h), which only
 * the test variant of libkvio exports; the shipped libkvio.so has none. java/pom.xml builds its
 * JNI library, libjniKvioTestHooks.so, in process-test-classes and puts it with the test variant
 * of libkvio.so under target/test-classes/io/kvio/<platform>/: the test class path lists
 * target/test-classes first, so KvioNative and this class both load the test variant.
 */
package io.kvio.bridge;

import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.annotation.Cast;
import org.bytedeco.javacpp.annotation.NoException;
import org.bytedeco.javacpp.annotation.Platform;

@Platform(include = "kvio_test_hooks.h", link = "kvio")
@NoException
public final class KvioTestHooks {
    static {
        Loader.load(KvioNative.class);
        Loader.load(KvioTestHooks.class);
    }

    private KvioTestHooks() {}

    public static final int KVIO_TEST_FAULT_HOST_ALLOCATION = 1;
    public static final int KVIO_TEST_FAULT_CPU_COPY = 2;

    /** The next {@code count} occurrences of {@code fault} fail (0 disarms). */
    public static native int kvio_test_inject_fault(int fault, @Cast("int64_t") long count);
}
