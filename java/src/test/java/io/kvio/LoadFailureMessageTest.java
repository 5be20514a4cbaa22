/*
 * The UnsatisfiedLinkError NativeBridge throws when the natives did not load: where the class
 * path has no JNI library for the platform, it names the natives JAR to add (JarIT runs that
 * case for real); where the library is there but loading it failed (a missing libstdc++ symbol,
 * another architecture), it leads with the cause's own message instead of sending the reader
 * after a JAR they already have.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import java.net.URL;
import org.testng.annotations.Test;

public class LoadFailureMessageTest {
    private static final String PLATFORM = "linux-x86_64";

    @Test
    public void aMissingLibraryNamesTheNativesJar() {
        UnsatisfiedLinkError cause =
                new UnsatisfiedLinkError("no jniKvioNative in java.library.path");
        String m = NativeBridge.loadFailureMessage(PLATFORM, null, cause);
        assertTrue(m.startsWith("kvio: could not load the native libraries"), m);
        assertTrue(m.contains("the natives JAR, kvio-linux-x86_64.jar"), m);
        assertTrue(m.contains("io.kvio:kvio with classifier linux-x86_64,"), m);
        assertTrue(m.contains("no jniKvioNative in java.library.path"), m);
    }

    @Test
    public void aLibraryThatFailedToLoadLeadsWithTheCause() throws Exception {
        URL library = new URL("jar:file:/app/kvio-linux-x86_64.jar!/io/kvio/linux-x86_64/lib.so");
        UnsatisfiedLinkError inner =
                new UnsatisfiedLinkError(
                        "/tmp/cache/libkvio.so: /lib64/libstdc++.so.6: version `GLIBCXX_3.4.32'"
                                + " not found");
        UnsatisfiedLinkError cause = new UnsatisfiedLinkError("could not load jniKvioNative");
        cause.initCause(inner);
        String m = NativeBridge.loadFailureMessage(PLATFORM, library, cause);
        assertTrue(m.startsWith("kvio: could not load jniKvioNative; caused by: /tmp/cache"), m);
        assertTrue(m.contains("GLIBCXX_3.4.32"), m);
        assertTrue(m.contains("are on the class path, at " + library), m);
        assertFalse(m.contains("put it on the class path"), m);
        assertFalse(m.contains("kvio-linux-x86_64.jar (the Maven artifact"), m);
    }

    /** A cause whose message repeats its own cause's is given once. */
    @Test
    public void aRepeatedCauseMessageIsGivenOnce() throws Exception {
        URL library = new URL("file:/classes/io/kvio/linux-x86_64/libjniKvioNative.so");
        UnsatisfiedLinkError inner = new UnsatisfiedLinkError("wrong ELF class: ELFCLASS32");
        RuntimeException outer = new RuntimeException(inner); // message: inner.toString()
        String m = NativeBridge.loadFailureMessage(PLATFORM, library, outer);
        assertTrue(m.startsWith("kvio: java.lang.UnsatisfiedLinkError: wrong ELF class"), m);
        assertFalse(m.contains("caused by"), m);
    }

    /** Causes that form a cycle (a -> b -> a) are each given once, and the chain ends. */
    @Test
    public void aCycleOfCausesIsGivenOnce() {
        UnsatisfiedLinkError a = new UnsatisfiedLinkError("could not load jniKvioNative");
        IllegalStateException b = new IllegalStateException("a cause that points back", a);
        a.initCause(b);
        assertEquals(
                NativeBridge.causeChain(a),
                "could not load jniKvioNative; caused by: a cause that points back");
    }
}
