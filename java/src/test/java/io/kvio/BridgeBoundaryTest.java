/*
 * The bridge stays thin and private: the natives (KvioNative) are package-private, NativeBridge is
 * the only main class that calls them, the shipped binding has no test hook, and every native it
 * declares is called. Read from the sources and the compiled class, so a new call site or a dead
 * binding fails here rather than in review.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.testng.SkipException;
import org.testng.annotations.Test;

public class BridgeBoundaryTest {
    /** The main sources, from the module (Surefire) or the repository root (other runners). */
    private static final Path MAIN =
            Stream.of("src/main/java/io/kvio", "java/src/main/java/io/kvio")
                    .map(Paths::get)
                    .filter(Files::isDirectory)
                    .findFirst()
                    .orElse(null);

    private static void needSources() {
        if (MAIN == null) {
            throw new SkipException("no io.kvio sources under the working directory");
        }
    }

    private static List<Path> mainSources() throws IOException {
        needSources();
        try (Stream<Path> files = Files.walk(MAIN)) {
            return files.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toList());
        }
    }

    @Test
    public void onlyNativeBridgeCallsTheNatives() throws IOException {
        List<String> callers = new ArrayList<>();
        for (Path p : mainSources()) {
            String name = p.getFileName().toString();
            if (name.equals("NativeBridge.java") || name.equals("KvioNative.java")) {
                continue;
            }
            if (Files.readString(p).contains("KvioNative.kvio_")) {
                callers.add(name);
            }
        }
        assertEquals(callers, List.of(), "main classes calling KvioNative's natives directly");
    }

    @Test
    public void theNativesArePackagePrivateAndEachIsCalled() throws IOException {
        assertFalse(Modifier.isPublic(KvioNative.class.getModifiers()), "KvioNative is public");
        needSources();
        String bridge = Files.readString(MAIN.resolve("NativeBridge.java"));
        int natives = 0;
        for (Method m : KvioNative.class.getDeclaredMethods()) {
            if (!Modifier.isNative(m.getModifiers())) {
                continue;
            }
            natives++;
            int modifiers = m.getModifiers();
            assertFalse(
                    Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers),
                    m.getName() + " is not package-private");
            assertFalse(m.getName().startsWith("kvio_test_"), m.getName() + " is a test hook");
            assertTrue(
                    bridge.contains("KvioNative." + m.getName() + "(")
                            || bridge.contains("KvioNative::" + m.getName()),
                    m.getName() + " is bound but NativeBridge never calls it");
        }
        assertTrue(natives > 0);
    }
}
