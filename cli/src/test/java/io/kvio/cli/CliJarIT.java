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
import com.fasterxml.jackson.databind.ObjectMapper;
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
import javax.xml.parsers.DocumentBuilderFactory;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;
import org.w3c.dom.Document;

public class CliJarIT {
    private Path workDir;

    @BeforeClass
    public void createWorkDir() throws IOException {
        workDir = Files.createTempDirectory("kvio-cli-it");
    }

    @AfterClass(alwaysRun = true)
    public void deleteWorkDir() throws IOException {
        if (workDir != null) {
            try (Stream<Path> paths = Files.walk(workDir)) {
                paths.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
            }
        }
    }

    private static final class Result {
        final int exit;
        final String output;

        Result(int exit, String output) {
            this.exit = exit;
            this.output = output;
        }
    }

    private Result cli(String... args) throws Exception {
        String jar = System.getProperty("kvio.cli.jar");
        assertTrue(jar != null, "system property kvio.cli.jar is not set (run through mvn verify)");
        assertTrue(Files.isRegularFile(Paths.get(jar)), jar + " does not exist");
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Dorg.bytedeco.javacpp.cachedir=" + workDir.resolve("cache"));
        cmd.add("-jar");
        cmd.add(Paths.get(jar).toAbsolutePath().toString());
        cmd.addAll(Arrays.asList(args));
        Process p =
                new ProcessBuilder(cmd)
                        .directory(workDir.toFile())
                        .redirectErrorStream(true)
                        .start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "timed out: " + cmd);
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    @Test
    public void matrixQuickFromTheJar() throws Exception {
        Result r = cli("matrix", "--quick", "--json", "m.json", "--junit", "m.xml");
        assertEquals(r.exit, 0, r.output);
        assertTrue(
                r.output.contains("| mha | layer_first | layer_table | per_layer | backup |"),
                r.output);
        assertTrue(r.output.contains("0 FAIL"), r.output);
        JsonNode json = new ObjectMapper().readTree(workDir.resolve("m.json").toFile());
        assertEquals(json.get("summary").get("FAIL").asInt(), 0);
        assertTrue(json.get("summary").get("PASS").asInt() > 0, json.get("summary").toString());
        Document junit =
                DocumentBuilderFactory.newInstance()
                        .newDocumentBuilder()
                        .parse(workDir.resolve("m.xml").toFile());
        assertEquals(
                junit.getElementsByTagName("testcase").getLength(),
                json.get("summary").get("cells").asInt());
    }

    @Test
    public void benchFromTheJar() throws Exception {
        Result r =
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
        assertEquals(r.exit, 0, r.output);
        assertTrue(
                r.output.contains("| cpu | page_first_direct | backup | 256 B | 32 |"), r.output);
        assertTrue(Files.size(workDir.resolve("b.svg")) > 0);
        assertEquals(Files.readAllLines(workDir.resolve("b.csv")).size(), 1 + 2 * 2);
    }

    @Test
    public void roundTripFromTheJar() throws Exception {
        Result r = cli("roundtrip", "--tokens", "512", "--layers", "4");
        assertEquals(r.exit, 0, r.output);
        assertTrue(r.output.contains("all 4 layouts verified OK"), r.output);
        assertTrue(!r.output.contains("FAIL"), r.output);
    }

    @Test
    public void badArgumentsExitTwoWithAHint() throws Exception {
        Result r = cli("roundtrip", "--layouts", "page_heda");
        assertEquals(r.exit, 2, r.output);
        assertTrue(r.output.contains("did you mean 'page_head'"), r.output);
    }

    @Test
    public void helpListsTheCommands() throws Exception {
        Result r = cli("--help");
        assertEquals(r.exit, 0, r.output);
        assertTrue(r.output.contains("Usage: java -jar kvio-cli.jar"), r.output);
        assertTrue(r.output.contains("matrix") && r.output.contains("bench"), r.output);
    }
}
