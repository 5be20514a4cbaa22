/*
 * Integration test of the runnable target/kvio-cli.jar (Failsafe, after `package`): in a fresh
 * JVM started in a temporary folder outside the repository, `matrix --quick` writes JSON and
 * JUnit that parse, `bench` writes its plot, `roundtrip` verifies every layout, and bad
 * arguments exit 2 with what to type instead.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;
import org.w3c.dom.Document;

public class CliJarIT extends OutputDirTest {
    private CliRunner cli(String... args) throws Exception {
        return cliWith(List.of(), args);
    }

    /** Runs the jar in a JVM started with {@code jvmOptions} (e.g. -Xmx64m). */
    private CliRunner cliWith(List<String> jvmOptions, String... args) throws Exception {
        String jar = System.getProperty("kvio.cli.jar");
        assertTrue(jar != null, "system property kvio.cli.jar is not set (run through mvn verify)");
        assertTrue(Files.isRegularFile(Paths.get(jar)), jar + " does not exist");
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmOptions);
        cmd.add("-Dorg.bytedeco.javacpp.cachedir=" + dir.resolve("cache"));
        cmd.add("-jar");
        cmd.add(Paths.get(jar).toAbsolutePath().toString());
        cmd.addAll(Arrays.asList(args));
        Process p =
                new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "timed out: " + cmd);
        return new CliRunner(p.exitValue(), new String(out, StandardCharsets.UTF_8), "");
    }

    @Test
    public void matrixQuickFromTheJar() throws Exception {
        CliRunner r = cli("matrix", "--quick", "--json", "m.json", "--junit", "m.xml");
        assertEquals(r.exit, 0, r.out);
        assertTrue(
                r.out.contains("| mha | layer_first | layer_table | per_layer | backup |"), r.out);
        assertTrue(r.out.contains("0 FAIL"), r.out);
        JsonNode json = readJson("m.json");
        assertEquals(json.get("summary").get("FAIL").asInt(), 0);
        assertTrue(json.get("summary").get("PASS").asInt() > 0, json.get("summary").toString());
        Document junit = readXml("m.xml");
        assertEquals(
                junit.getElementsByTagName("testcase").getLength(),
                json.get("summary").get("cells").asInt());
    }

    @Test
    public void benchFromTheJar() throws Exception {
        CliRunner r =
                cli(
                        "bench",
                        "--rows",
                        "256,4096",
                        "--tokens",
                        "32",
                        "--layouts",
                        "page_first_direct",
                        "--svg",
                        "b.svg",
                        "--csv",
                        "b.csv");
        assertEquals(r.exit, 0, r.out);
        assertTrue(r.out.contains("| cpu | page_first_direct | backup | 256 B | 32 |"), r.out);
        assertTrue(Files.size(dir.resolve("b.svg")) > 0);
        assertEquals(Files.readAllLines(dir.resolve("b.csv")).size(), 1 + 2 * 2);
    }

    @Test
    public void roundTripFromTheJar() throws Exception {
        CliRunner r = cli("roundtrip", "--tokens", "512", "--layers", "4");
        assertEquals(r.exit, 0, r.out);
        assertTrue(r.out.contains("all 4 layouts verified OK"), r.out);
        assertTrue(!r.out.contains("FAIL"), r.out);
    }

    /**
     * A runtime without Flight Recorder (jdk.jfr), as jlink makes one: the modules of the GPU
     * check's Java runtime before it added jdk.jfr. Transfers used to fail with
     * NoClassDefFoundError: jdk/jfr/FlightRecorder.
     */
    @Test
    public void roundTripOnARuntimeWithoutFlightRecorder() throws Exception {
        CliRunner r =
                cliWith(
                        List.of(
                                "--limit-modules",
                                "java.base,java.desktop,java.management,java.sql,"
                                        + "jdk.unsupported,java.xml,java.logging"),
                        "roundtrip",
                        "--tokens",
                        "256",
                        "--layers",
                        "2");
        assertEquals(r.exit, 0, r.out);
        assertTrue(r.out.contains("all 4 layouts verified OK"), r.out);
    }

    @Test
    public void badArgumentsExitTwoWithAHint() throws Exception {
        CliRunner r = cli("roundtrip", "--layouts", "page_heda");
        assertEquals(r.exit, 2, r.out);
        assertTrue(r.out.contains("did you mean 'page_head'"), r.out);
    }

    @Test
    public void roundTripTokensPastTheHeapAreRefusedBeforeAllocating() throws Exception {
        CliRunner r =
                cliWith(
                        List.of("-Xmx64m"),
                        "roundtrip",
                        "--backend",
                        "cpu",
                        "--tokens",
                        "10000000",
                        "--layers",
                        "1");
        assertEquals(r.exit, 2, r.out);
        assertTrue(r.out.contains("MiB of Java heap for its slot lists"), r.out);
        assertTrue(r.out.contains("java -Xmx"), r.out);
    }

    @Test
    public void aJvmOutOfMemoryIsAnErrorNotAVerificationFail() throws Exception {
        CliRunner r = cliWith(List.of("-Xmx12m"), "matrix", "--full", "--backend", "cpu");
        assertEquals(r.exit, 3, r.out);
        assertTrue(r.out.contains("kvio: error: the JVM ran out of memory"), r.out);
    }

    @Test
    public void helpListsTheCommands() throws Exception {
        CliRunner r = cli("--help");
        assertEquals(r.exit, 0, r.out);
        assertTrue(r.out.contains("Usage: java -jar kvio-cli.jar"), r.out);
        assertTrue(r.out.contains("matrix") && r.out.contains("bench"), r.out);
    }
}
