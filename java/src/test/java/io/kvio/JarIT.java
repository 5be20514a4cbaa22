/*
 * Integration test of the packaged JARs (Failsafe, after `package`): the runnable kvio-cli.jar
 * runs from a directory outside the repository and verifies a small round trip of every layout,
 * and kvio.jar + the JavaCPP jar alone, on a fresh class path in a fresh JVM, load the natives
 * from the JAR and move data.
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.bytedeco.javacpp.Loader;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

public class JarIT {
    private Path workDir;

    @BeforeClass
    public void createWorkDir() throws IOException {
        workDir = Files.createTempDirectory("kvio-jar-it");
    }

    @AfterClass(alwaysRun = true)
    public void deleteWorkDir() throws IOException {
        if (workDir != null) {
            try (Stream<Path> paths = Files.walk(workDir)) {
                paths.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
            }
        }
    }

    private static Path jar(String property) {
        String path = System.getProperty(property);
        assertTrue(
                path != null,
                "system property " + property + " is not set (run through mvn verify)");
        Path p = Paths.get(path).toAbsolutePath();
        assertTrue(Files.isRegularFile(p), p + " does not exist");
        return p;
    }

    private static String java() {
        return Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static final class Result {
        final int exit;
        final String output;

        Result(int exit, String output) {
            this.exit = exit;
            this.output = output;
        }
    }

    private Result run(String... command) throws Exception {
        List<String> cmd = new ArrayList<>(Arrays.asList(command));
        ProcessBuilder pb =
                new ProcessBuilder(cmd).directory(workDir.toFile()).redirectErrorStream(true);
        Process process = pb.start();
        byte[] out = process.getInputStream().readAllBytes();
        assertTrue(process.waitFor(120, TimeUnit.SECONDS), "timed out: " + cmd);
        return new Result(process.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    @Test
    public void cliJarRunsFromAnotherDirectory() throws Exception {
        Path cli = jar("kvio.cli.jar");
        Result r =
                run(
                        java(),
                        "-Dorg.bytedeco.javacpp.cachedir=" + workDir.resolve("cache"),
                        "-jar",
                        cli.toString(),
                        "--tokens",
                        "512",
                        "--layers",
                        "4");
        assertEquals(r.exit, 0, r.output);
        for (KvLayout layout : KvLayout.values()) {
            assertTrue(
                    r.output.matches("(?s).*\\n" + layout.userName() + " .*verify OK.*"),
                    "no verification line for " + layout.userName() + ":\n" + r.output);
        }
        assertTrue(r.output.contains("all 4 layouts verified OK"), r.output);
        assertTrue(!r.output.contains("FAIL"), r.output);
    }

    @Test
    public void cliJarRejectsBadArguments() throws Exception {
        Result r = run(java(), "-jar", jar("kvio.cli.jar").toString(), "--layouts", "page_heda");
        assertEquals(r.exit, 2, r.output);
        assertTrue(r.output.contains("did you mean 'page_head'"), r.output);
    }

    @Test
    public void cliJarPrintsHelp() throws Exception {
        Result r = run(java(), "-jar", jar("kvio.cli.jar").toString(), "--help");
        assertEquals(r.exit, 0, r.output);
        assertTrue(r.output.contains("Usage: java -jar kvio-cli.jar"), r.output);
    }

    @Test
    public void coreJarLoadsOnAFreshClassPath() throws Exception {
        Path core = jar("kvio.jar");
        Path javacpp =
                Paths.get(Loader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path cache = workDir.resolve("cache-core");
        String classPath = core + File.pathSeparator + javacpp;
        Result r =
                run(
                        java(),
                        "-Dorg.bytedeco.javacpp.cachedir=" + cache,
                        "-cp",
                        classPath,
                        "io.kvio.cli.Main",
                        "--tokens",
                        "100",
                        "--layers",
                        "2",
                        "--page-size",
                        "16",
                        "--layouts",
                        "page_first_direct");
        assertEquals(r.exit, 0, r.output);
        assertTrue(r.output.contains("verify OK"), r.output);
        // the natives came out of kvio.jar into the cache, not from target/classes
        try (Stream<Path> files = Files.walk(cache)) {
            List<String> names = new ArrayList<>();
            files.forEach(f -> names.add(f.getFileName().toString()));
            assertTrue(
                    names.contains("libkvio.so") && names.contains("libjniKvioNative.so"),
                    names.toString());
        }
    }

    @Test
    public void testClassesUseThePackagedJar() throws Exception {
        // Failsafe puts target/kvio.jar (not target/classes) on the class path
        String location = Kvio.class.getProtectionDomain().getCodeSource().getLocation().toString();
        assertTrue(location.endsWith(".jar"), location);
        assertEquals(Kvio.version(), Kvio.VERSION);
        assertTrue(Kvio.nativeLibraryPath().contains("javacpp-cache-it"), Kvio.nativeLibraryPath());
    }
}
