/*
 * `roundtrip`'s Java heap check before the run (RoundTripCommand.heapBytes) counts all the heap
 * the run takes: run in a JVM with a small heap at page size 1, where a run has as many pages as
 * tokens, a roundtrip the check lets through completes (its verification once kept a per-page
 * HashMap the check did not count, and ran out of memory after the backup and load).
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

public class RoundTripHeapTest extends OutputDirTest {
    /** Runs the CLI (the test class path's io.kvio.cli.Main) in a JVM with this heap. */
    private CliRunner cliWithHeap(String xmx, String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx" + xmx);
        cmd.add("-XX:+UseSerialGC"); // the same heap layout on every machine the test runs on
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add("-Dorg.bytedeco.javacpp.cachedir=" + dir.resolve("cache"));
        cmd.add("-Dkvio.progress=false");
        cmd.add(Main.class.getName());
        cmd.addAll(Arrays.asList(args));
        ProcessBuilder builder =
                new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true);
        builder.environment().remove("JAVA_TOOL_OPTIONS"); // no inherited heap or GC settings
        builder.environment().remove("_JAVA_OPTIONS");
        Process p = builder.start();
        // Drained on another thread, so that the timeout below holds while the child runs.
        java.util.concurrent.CompletableFuture<byte[]> out =
                java.util.concurrent.CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return p.getInputStream().readAllBytes();
                            } catch (java.io.IOException e) {
                                return e.toString().getBytes(StandardCharsets.UTF_8);
                            }
                        });
        if (!p.waitFor(300, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out after 300 s: " + cmd);
        }
        return new CliRunner(p.exitValue(), new String(out.get(), StandardCharsets.UTF_8), "");
    }

    private static final String[] PAGE_SIZE_ONE = {
        "roundtrip",
        "--backend",
        "cpu",
        "--page-size",
        "1",
        "--layers",
        "1",
        "--heads",
        "1",
        "--head-dim",
        "4",
        "--layouts",
        "layer_first",
        "--tokens"
    };

    private static String[] tokens(long n) {
        String[] args = Arrays.copyOf(PAGE_SIZE_ONE, PAGE_SIZE_ONE.length + 1);
        args[PAGE_SIZE_ONE.length] = Long.toString(n);
        return args;
    }

    /** A million pages of one token in 96 MiB of heap: let through, and it verifies. */
    @Test
    public void aRunTheHeapCheckLetsThroughFitsTheHeap() throws Exception {
        CliRunner r = cliWithHeap("96m", tokens(1_000_000));
        assertEquals(r.exit, Main.EXIT_OK, r.out);
        assertTrue(r.out.contains("verified OK"), r.out);
    }

    /** Three million pages do not fit in 96 MiB: refused before anything is allocated. */
    @Test
    public void aRunPastTheHeapIsRefusedUpFront() throws Exception {
        CliRunner r = cliWithHeap("96m", tokens(3_000_000));
        assertEquals(r.exit, Main.EXIT_USAGE, r.out);
        assertTrue(r.out.contains("MiB of Java heap for its slot lists and checks"), r.out);
    }

    /** The estimate grows with what the verifier keeps per device token, page size 1 or not. */
    @Test
    public void theEstimateCountsTheVerifiersBitSets() {
        long tokens = 1L << 24;
        long planOnly = 3 * 8 * tokens + 4 * 8 * (tokens + 4) + (16L << 20);
        assertTrue(RoundTripCommand.heapBytes(tokens, 1) > planOnly + tokens / 2);
    }
}
