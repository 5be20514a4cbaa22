/*
 * Test-only access to one trivial native call for benchmarks outside io.kvio (SmallCallBenchmark's
 * JNI round-trip baseline): the natives are package-private, and this class is not in the JAR.
 */
package io.kvio;

public final class NativeCallProbe {
    private NativeCallProbe() {}

    /** kvio_backend_available, straight through the bridge: its raw status. */
    public static int backendAvailable(IoBackend backend) {
        return KvioNative.kvio_backend_available(backend.nativeValue());
    }
}
