/*
 * The multi-release kvio.jar on Java 22+ (Failsafe, java22 profile): a program using
 * io.kvio.Segments compiles and runs against kvio.jar + the natives JAR + JavaCPP in a fresh JVM,
 * so META-INF/versions/22 and the Multi-Release manifest entry are really in the JAR, and the
 * JAR's Java 22 version of DirectBuffers (not the Java 17 one in its base) answers there: a
 * ByteBuffer view of a closed arena's segment is refused.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import org.bytedeco.javacpp.Loader;
import org.testng.annotations.Test;

public class SegmentsJarIT {
    private static final String PROGRAM =
            String.join(
                    "\n",
                    "import io.kvio.*;",
                    "import java.lang.foreign.*;",
                    "import java.nio.*;",
                    "public class SegmentSmoke {",
                    "  public static void main(String[] args) {",
                    "    try (Arena arena = Arena.ofConfined();",
                    "         TokenIndices list = Segments.wrapIndices(",
                    "             arena.allocateFrom(ValueLayout.JAVA_LONG, 2, 7))) {",
                    "      System.out.println(\"segments \" + list);",
                    "    }",
                    "    Arena closed = Arena.ofShared();",
                    "    LongBuffer dead = closed.allocate(64, 8).asByteBuffer()",
                    "        .order(ByteOrder.nativeOrder()).asLongBuffer();",
                    "    closed.close();",
                    "    try {",
                    "      TokenIndices.wrap(dead);",
                    "      System.out.println(\"dead buffer accepted\");",
                    "    } catch (KvioClosedException e) {",
                    "      System.out.println(\"dead buffer refused\");",
                    "    }",
                    "  }",
                    "}",
                    "");

    @Test
    public void segmentsLoadFromTheMultiReleaseJar() throws Exception {
        Path core = Paths.get(System.getProperty("kvio.jar")).toAbsolutePath();
        Path natives = Paths.get(System.getProperty("kvio.natives.jar")).toAbsolutePath();
        Path javacpp =
                Paths.get(Loader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (JarFile jar = new JarFile(core.toFile())) {
            assertEquals(jar.getManifest().getMainAttributes().getValue("Multi-Release"), "true");
            assertTrue(jar.getEntry("META-INF/versions/22/io/kvio/Segments.class") != null);
            assertTrue(jar.getEntry("io/kvio/Segments.class") == null, "not in the Java 17 base");
            assertTrue(jar.getEntry("META-INF/versions/22/io/kvio/DirectBuffers.class") != null);
            assertTrue(jar.getEntry("io/kvio/DirectBuffers.class") != null, "the Java 17 one");
        }
        Path dir = Files.createTempDirectory("kvio-segments-it");
        Path program = dir.resolve("SegmentSmoke.java");
        Files.writeString(program, PROGRAM);
        List<String> cmd =
                List.of(
                        Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                        "--enable-native-access=ALL-UNNAMED",
                        "-Dorg.bytedeco.javacpp.cachedir=" + dir.resolve("cache"),
                        "-cp",
                        core + File.pathSeparator + natives + File.pathSeparator + javacpp,
                        program.toString());
        Process p =
                new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "timed out");
        assertEquals(p.exitValue(), 0, out);
        assertTrue(out.contains("segments TokenIndices{size=2, [2, 7]}"), out);
        assertTrue(out.contains("dead buffer refused"), out);
    }
}
