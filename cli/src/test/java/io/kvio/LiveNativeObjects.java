/*
 * The native library's live-object counters (kvio_debug_live_objects, read through the bridge's
 * package-private NativeBridge) for the CLI tests, which live in another package.
 */
package io.kvio;

public final class LiveNativeObjects {
    private LiveNativeObjects() {}

    /** Pool handles open in this process. */
    public static long pools() {
        return NativeBridge.debugLiveObjects()[0];
    }
}
