/*
 * Test helper: runs a test class's main in a fresh JVM on this test run's class path and JavaCPP
 * cache, for what only a new process shows (the first kvio call of a JVM, a runtime without a
 * module).
 */
package io.kvio;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

final class FreshJvm {
    private FreshJvm() {}

    /**
     * Runs {@code main} with {@code jvmOptions} (e.g. --limit-modules) and returns its output
     * (stdout and stderr), asserting that it ended within 120 s with exit status 0.
     */
    static String run(List<String> jvmOptions, Class<?> main) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(
                "-Dorg.bytedeco.javacpp.cachedir="
                        + System.getProperty(
                                "org.bytedeco.javacpp.cachedir",
                                System.getProperty("java.io.tmpdir")
                                        + File.separator
                                        + "kvio-javacpp-cache"));
        cmd.add(main.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "timed out: " + cmd);
        String output = new String(out, StandardCharsets.UTF_8);
        assertEquals(p.exitValue(), 0, output);
        return output;
    }
}
