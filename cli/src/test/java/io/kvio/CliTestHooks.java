/*
 * kvio's test hooks for kvio-cli's tests: fault injection and the live-handle count, through the
 * java module's test binding (KvioTestNative, from kvio's tests jar, which puts the test variant
 * of libkvio.so first on kvio-cli's test class path; cli/pom.xml). In package io.kvio because that
 * binding and NativeBridge's diagnostics are package-private. Used by MatrixLifetimeTest.
 */
package io.kvio;

public final class CliTestHooks {
    private CliTestHooks() {}

    /**
     * The cpu backend's next {@code count} transfers over 8 MiB stop before copying until {@link
     * #release()} (or for at most 60 s).
     */
    public static void holdCpuTransfers(long count) {
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, count);
    }

    /** Lets every held cpu transfer go. */
    public static void release() {
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_HOLD, 0);
    }

    /** The cpu backend's next {@code count} transfers fail without copying (BACKEND_ERROR). */
    public static void failCpuCopies(long count) {
        KvioTestNative.injectFault(KvioTestNative.KVIO_TEST_FAULT_CPU_COPY, count);
    }

    /** Transfer handles open in this process (kvio_debug_live_objects). */
    public static long liveTransfers() {
        return NativeBridge.debugLiveObjects()[2];
    }
}
