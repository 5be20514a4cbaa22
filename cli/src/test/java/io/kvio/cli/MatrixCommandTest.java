/*
 * `matrix` run in-process on this machine: its JSON output (parsed with Jackson) and JUnit XML
 * (parsed with the JDK's DOM parser) must agree with each other and with the machine: every cpu
 * cell PASS or, for the one rule-rejected layout (page_head with mla), UNSUPPORTED with the
 * rule's reason; backends this build or machine lacks UNAVAILABLE with their cause. An injected
 * mismatch must turn into a FAIL naming the first wrong byte, a <failure> and exit status 1.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertNotNull;
import static org.testng.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvio.IoBackend;
import io.kvio.KvioExecutor;
import io.kvio.PoolKind;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.testng.SkipException;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public class MatrixCommandTest extends OutputDirTest {
    /** The backends a matrix runs by default: every io backend but auto, written out here. */
    static final List<IoBackend> DEFAULT_BACKENDS =
            List.of(
                    IoBackend.CPU,
                    IoBackend.KERNEL,
                    IoBackend.DIRECT,
                    IoBackend.KERNEL_ASCEND,
                    IoBackend.STAGED);

    private static final int BACKENDS = DEFAULT_BACKENDS.size();

    private CliRunner quick;
    private JsonNode json;
    private Document junit;

    @BeforeClass
    public void runQuickMatrix() throws Exception {
        quick =
                CliRunner.run(
                        "matrix", "--quick", "--json", out("m.json"), "--junit", out("m.xml"));
        json = readJson("m.json");
        junit = readXml("m.xml");
    }

    @Test
    public void quickMatrixExitsZeroAndPrintsTheTable() {
        assertEquals(quick.exit, 0, quick.toString());
        assertTrue(
                quick.out.contains(
                        "| kind | host layout | device form | granularity | direction | page | row |"
                                + " host layers | cpu | kernel | direct | kernel_ascend |"),
                quick.out);
        for (DeviceForm form : DeviceForm.values()) {
            assertTrue(
                    quick.out.contains(
                            "| mha | page_head | " + form.userName + " | all_layer | load |"),
                    quick.out);
        }
        assertTrue(quick.out.contains("0 FAIL"), quick.out);
    }

    @Test
    public void jsonCellsMatchTheMachine() {
        List<MatrixConfig> configs = MatrixConfig.list(false);
        assertEquals(json.get("mode").asText(), "quick");
        assertEquals(json.get("configurations").size(), configs.size());
        assertEquals(json.get("summary").get("cells").asInt(), configs.size() * BACKENDS);
        assertEquals(json.get("summary").get("FAIL").asInt(), 0);
        JsonNode backends = json.get("backends");
        assertEquals(backends.size(), BACKENDS);
        int unsupported = 0;
        int sharded = 0;
        for (JsonNode row : json.get("configurations")) {
            boolean rejected =
                    row.get("kind").asText().equals(PoolKind.MLA.userName())
                            && row.get("layout").asText().equals("page_head");
            if (row.get("hostLayers").asLong() != row.get("deviceLayers").asLong()) {
                sharded++;
            }
            for (JsonNode b : backends) {
                String name = b.get("name").asText();
                JsonNode cell = row.get("cells").get(name);
                assertNotNull(cell, row.get("id") + " has no cell for " + name);
                String status = cell.get("status").asText();
                if (!b.get("available").asBoolean()) {
                    assertEquals(status, "UNAVAILABLE", row.get("id") + " " + name);
                    assertEquals(cell.get("detail").asText(), b.get("cause").asText());
                } else if (rejected) {
                    assertEquals(status, "UNSUPPORTED", row.get("id") + " " + name);
                    assertTrue(cell.get("detail").asText().contains("page_head"), cell.toString());
                    unsupported++;
                } else {
                    assertEquals(status, "PASS", row.get("id") + " " + name + ": " + cell);
                    assertTrue(cell.get("bytes").asLong() > 0, cell.toString());
                    assertTrue(cell.get("gbps").asDouble() >= 0, cell.toString());
                }
            }
        }
        assertTrue(unsupported >= 8, "mla x page_head rows on cpu: " + unsupported);
        assertEquals(sharded, configs.size() / 2, "half the rows are layer-sharded");
        Map<String, Integer> forms = new java.util.HashMap<>();
        for (JsonNode row : json.get("configurations")) {
            forms.merge(row.get("deviceForm").asText(), 1, Integer::sum);
        }
        for (DeviceForm form : DeviceForm.values()) {
            assertEquals(
                    forms.get(form.userName), Integer.valueOf(configs.size() / 3), form.userName);
        }
    }

    @Test
    public void cpuPassesAndMissingBackendsSayWhy() {
        Map<String, JsonNode> byName = new java.util.HashMap<>();
        for (JsonNode b : json.get("backends")) {
            byName.put(b.get("name").asText(), b);
        }
        assertTrue(byName.get("cpu").get("available").asBoolean());
        assertFalse(byName.containsKey("auto"), "auto runs only when named");
        assertEquals(byName.size(), BACKENDS, byName.keySet().toString());
        for (IoBackend b : DEFAULT_BACKENDS) {
            JsonNode node = byName.get(b.userName());
            assertEquals(node.get("available").asBoolean(), b.isAvailable(), b.userName());
            if (!b.isAvailable()) {
                String cause = node.get("cause").asText();
                assertFalse(cause.isBlank(), b.userName());
                assertEquals(cause, b.unavailabilityCause());
                assertTrue(
                        quick.out.matches(
                                "(?s).*\\n- \\[\\d+\\] ([a-z_]+, )*"
                                        + b.userName()
                                        + "(, [a-z_]+)*: "
                                        + java.util.regex.Pattern.quote(cause)
                                        + "\\n.*"),
                        quick.out);
            }
        }
    }

    @Test
    public void junitHasOneTestCasePerCell() {
        Element suites = junit.getDocumentElement();
        assertEquals(suites.getTagName(), "testsuites");
        NodeList suiteList = suites.getElementsByTagName("testsuite");
        assertEquals(suiteList.getLength(), BACKENDS);
        NodeList cases = suites.getElementsByTagName("testcase");
        int configs = json.get("configurations").size();
        assertEquals(cases.getLength(), configs * BACKENDS);
        assertEquals(suites.getAttribute("tests"), String.valueOf(configs * BACKENDS));
        assertEquals(suites.getAttribute("failures"), "0");
        assertEquals(suites.getElementsByTagName("failure").getLength(), 0);
        int skipped = 0;
        for (int i = 0; i < cases.getLength(); i++) {
            Element tc = (Element) cases.item(i);
            String backend = tc.getAttribute("classname").replace("kvio.matrix.", "");
            String id = tc.getAttribute("name");
            JsonNode cell = null;
            for (JsonNode row : json.get("configurations")) {
                if (row.get("id").asText().equals(id)) {
                    cell = row.get("cells").get(backend);
                }
            }
            assertNotNull(cell, "JUnit case " + id + " on " + backend + " is not in the JSON");
            NodeList skip = tc.getElementsByTagName("skipped");
            if (cell.get("status").asText().equals("PASS")) {
                assertEquals(skip.getLength(), 0, id);
            } else {
                assertEquals(skip.getLength(), 1, id);
                String message = ((Element) skip.item(0)).getAttribute("message");
                assertEquals(
                        message, cell.get("status").asText() + ": " + cell.get("detail").asText());
                skipped++;
            }
        }
        assertEquals(suites.getAttribute("skipped"), String.valueOf(skipped));
    }

    @Test
    public void injectedMismatchFailsTheRun() throws Exception {
        CliRunner r =
                CliRunner.run(
                        "matrix",
                        "--backend",
                        "cpu",
                        "--inject-fault",
                        "--json",
                        out("fault.json"),
                        "--junit",
                        out("fault.xml"));
        assertEquals(r.exit, 1, r.toString());
        assertTrue(r.err.contains("matrix FAILED"), r.err);
        assertTrue(r.out.contains("FAIL [1]"), r.out);
        assertTrue(
                r.out.matches("(?s).*\\[1\\] cpu: mha .*byte \\d+ \\(component 0, layer \\d+.*"),
                r.out);
        JsonNode j = readJson("fault.json");
        assertEquals(j.get("summary").get("FAIL").asInt(), 1);
        JsonNode first = j.get("configurations").get(0).get("cells").get("cpu");
        assertEquals(first.get("status").asText(), "FAIL");
        assertTrue(first.get("detail").asText().contains("expected 0x"), first.toString());
        Document x = readXml("fault.xml");
        NodeList failures = x.getElementsByTagName("failure");
        assertEquals(failures.getLength(), 1);
        assertEquals(x.getDocumentElement().getAttribute("failures"), "1");
    }

    @Test
    public void exitStatusLogic() {
        MatrixConfig cfg = MatrixConfig.list(false).get(0);
        List<MatrixReport.Backend> one = List.of(new MatrixReport.Backend("cpu", null));
        StringWriter sink = new StringWriter();
        PrintWriter err = new PrintWriter(sink, true);
        MatrixReport ok = report(cfg, one, Cell.pass(cfg, "cpu", 10, 10));
        assertEquals(MatrixCommand.exitStatus(ok, List.of(), err), Main.EXIT_OK);
        MatrixReport unsupported =
                report(cfg, one, Cell.of(cfg, "cpu", Cell.Status.UNSUPPORTED, "x"));
        assertEquals(MatrixCommand.exitStatus(unsupported, List.of(), err), Main.EXIT_OK);
        MatrixReport fail = report(cfg, one, Cell.of(cfg, "cpu", Cell.Status.FAIL, "byte 3"));
        assertEquals(MatrixCommand.exitStatus(fail, List.of(), err), Main.EXIT_FAILED);
        List<IoBackend> missing = new ArrayList<>();
        for (IoBackend b : IoBackend.values()) {
            if (!b.isAvailable()) {
                missing.add(b);
            }
        }
        if (!missing.isEmpty()) {
            assertEquals(
                    MatrixCommand.exitStatus(ok, missing, err), Main.EXIT_REQUIRED_UNAVAILABLE);
            assertTrue(sink.toString().contains("is required (--require) but unavailable"));
            // a FAIL outranks a missing backend
            assertEquals(MatrixCommand.exitStatus(fail, missing, err), Main.EXIT_FAILED);
        }
        assertEquals(MatrixCommand.exitStatus(ok, List.of(IoBackend.CPU), err), Main.EXIT_OK);
        // no backend of the run available: no cell ran, as bench's sweep of nothing (4)
        List<MatrixReport.Backend> none =
                List.of(new MatrixReport.Backend("kernel", "no usable CUDA driver"));
        MatrixReport nothing =
                report(cfg, none, Cell.of(cfg, "kernel", Cell.Status.UNAVAILABLE, "no driver"));
        assertEquals(
                MatrixCommand.exitStatus(nothing, List.of(), err), Main.EXIT_REQUIRED_UNAVAILABLE);
        assertTrue(
                sink.toString()
                        .contains(
                                "kvio: matrix ran nothing: no backend of kernel is available here"),
                sink.toString());
        // one available backend among them: the others are reported, not an error
        List<MatrixReport.Backend> both =
                List.of(
                        new MatrixReport.Backend("cpu", null),
                        new MatrixReport.Backend("kernel", "no usable CUDA driver"));
        List<List<Cell>> row =
                List.of(
                        List.of(
                                Cell.pass(cfg, "cpu", 10, 10),
                                Cell.of(cfg, "kernel", Cell.Status.UNAVAILABLE, "no driver")));
        MatrixReport some = new MatrixReport("0", "test", "quick", List.of(cfg), both, row, 0);
        assertEquals(MatrixCommand.exitStatus(some, List.of(), err), Main.EXIT_OK);
    }

    /** `matrix --backend X` where X cannot run here: every cell UNAVAILABLE, exit 4 (as bench). */
    @Test
    public void aMatrixOfOnlyUnavailableBackendsExitsFour() {
        List<String> names = new ArrayList<>();
        for (IoBackend b : DEFAULT_BACKENDS) {
            if (!b.isAvailable()) {
                names.add(b.userName());
            }
        }
        if (names.isEmpty()) {
            throw new SkipException("every io backend is available here");
        }
        CliRunner r =
                CliRunner.run(
                        "matrix",
                        "--quick",
                        "--backend",
                        String.join(",", names),
                        "--device-forms",
                        "allocated",
                        "--quiet");
        r.assertExit(
                Main.EXIT_REQUIRED_UNAVAILABLE,
                "kvio: matrix ran nothing: no backend of "
                        + String.join(", ", names)
                        + " is available here");
        assertTrue(r.out.contains("UNAVAILABLE"), "the table still lists the causes: " + r.out);
        assertTrue(r.out.contains(" cells: 0 PASS, 0 FAIL, 0 UNSUPPORTED, "), r.out);
    }

    @Test
    public void requireOfAnUnavailableBackendExitsFour() {
        for (IoBackend b : IoBackend.values()) {
            if (!b.isAvailable()) {
                CliRunner r =
                        CliRunner.run(
                                "matrix", "--backend", "cpu", "--quiet", "--require", b.userName());
                assertEquals(r.exit, Main.EXIT_REQUIRED_UNAVAILABLE, r.toString());
                assertTrue(r.err.contains(b.unavailabilityCause()), r.err);
                assertTrue(
                        r.err.startsWith(
                                "kvio: io backend '"
                                        + b.userName()
                                        + "' is required (--require) but unavailable"),
                        "said before the run: " + r.err);
                assertTrue(r.err.contains("the run goes on for its report, then exits 4"), r.err);
                return;
            }
        }
    }

    @Test
    public void configurationIdsAreUnique() {
        for (boolean full : new boolean[] {false, true}) {
            List<MatrixConfig> list = MatrixConfig.list(full);
            java.util.Set<String> ids = new java.util.HashSet<>();
            for (MatrixConfig c : list) {
                assertTrue(ids.add(c.id()), "duplicate id " + c.id());
            }
        }
        assertEquals(MatrixConfig.list(false).size(), 3 * 64);
        assertEquals(MatrixConfig.list(true).size(), 3 * 1056);
        for (DeviceForm form : DeviceForm.values()) {
            assertEquals(MatrixConfig.list(false, List.of(form)).size(), 64);
            assertEquals(MatrixConfig.list(true, List.of(form)).size(), 1056);
        }
    }

    @Test
    public void fullMatrixOnCpuPasses() throws Exception {
        CliRunner r =
                CliRunner.run("matrix", "--full", "--backend", "cpu", "--json", out("full.json"));
        assertEquals(r.exit, 0, r.toString());
        JsonNode summary = readJson("full.json").get("summary");
        assertEquals(summary.get("cells").asInt(), 3 * 1056);
        assertEquals(summary.get("FAIL").asInt(), 0);
        // mla x page_head: 3 device forms x 2 pools x 2 granularities x 2 directions x 3 pages
        // x 5 rows
        assertEquals(summary.get("UNSUPPORTED").asInt(), 3 * 120);
        assertEquals(summary.get("PASS").asInt(), 3 * (1056 - 120));
    }

    @Test
    public void deviceFormsSelectTheRows() throws Exception {
        CliRunner r =
                CliRunner.run(
                        "matrix",
                        "--backend",
                        "cpu",
                        "--device-forms",
                        "layer_table,per_component",
                        "--quiet",
                        "--json",
                        out("forms.json"));
        assertEquals(r.exit, 0, r.toString());
        JsonNode j = readJson("forms.json");
        assertEquals(j.get("configurations").size(), 2 * 64);
        assertEquals(j.get("summary").get("FAIL").asInt(), 0);
        // declaration order, whatever order was typed
        assertEquals(j.get("configurations").get(0).get("deviceForm").asText(), "per_component");
        assertTrue(
                r.out.contains("| mha | layer_first | layer_table | per_layer | backup |"), r.out);
        assertFalse(r.out.contains("| allocated |"), r.out);
    }

    @Test
    public void anOutputPathThatCannotBeWrittenIsAUsageErrorBeforeTheRun() throws Exception {
        String missing = dir.resolve("no-such-folder").resolve("m.json").toString();
        CliRunner r = CliRunner.run("matrix", "--backend", "cpu", "--json", missing);
        r.assertUsage("--json " + missing + ": no folder");
        assertFalse(r.out.contains("| kind |"), "refused before the run: " + r.out);
        CliRunner.run("matrix", "--backend", "cpu", "--junit", dir.toString())
                .assertUsage("--junit " + dir + ": is a folder");
        CliRunner.run("matrix", "--backend", "cpu", "--json", out("same"), "--junit", out("same"))
                .assertUsage("--junit " + out("same") + ": --json names the same file");
        // The same file through a symbolic link (a dangling link is replaced by its report: another
        // file).
        Files.writeString(dir.resolve("real.json"), "{}");
        Files.createSymbolicLink(dir.resolve("link.xml"), dir.resolve("real.json"));
        CliRunner.run(
                        "matrix",
                        "--backend",
                        "cpu",
                        "--json",
                        out("real.json"),
                        "--junit",
                        out("link.xml"))
                .assertUsage("--junit " + out("link.xml") + ": --json names the same file");
        assertFalse(Files.exists(dir.resolve("same")));
    }

    /**
     * A file that passes the check but cannot be written (/dev/full: no space left) is one error
     * line; the other file is still written and a FAIL still exits 1, not 3.
     */
    @Test
    public void aFileThatCannotBeWrittenAfterTheRunKeepsTheFail() throws Exception {
        Path full = Path.of("/dev/full");
        if (!Files.isWritable(full)) {
            throw new SkipException("no /dev/full here");
        }
        CliRunner r =
                CliRunner.run(
                        "matrix",
                        "--backend",
                        "cpu",
                        "--device-forms",
                        "allocated",
                        "--inject-fault",
                        "--quiet",
                        "--json",
                        full.toString(),
                        "--junit",
                        out("kept.xml"));
        r.assertExit(Main.EXIT_FAILED, "kvio: could not write --json /dev/full", "matrix FAILED");
        assertEquals(
                readXml("kept.xml").getDocumentElement().getAttribute("failures"),
                "1",
                "the other file is written");
        CliRunner passed =
                CliRunner.run(
                        "matrix",
                        "--backend",
                        "cpu",
                        "--device-forms",
                        "allocated",
                        "--quiet",
                        "--junit",
                        full.toString());
        passed.assertExit(Main.EXIT_ERROR, "kvio: could not write --junit /dev/full");
        assertTrue(passed.out.contains("0 FAIL"), passed.out);
    }

    @Test
    public void threadsOutsideTheExecutorsRangeAreAUsageError() {
        CliRunner.run("matrix", "--backend", "cpu", "--threads", "1025")
                .assertUsage("--threads must be 0 (one per core) or 1 to 1024, got 1025");
        CliRunner.run("matrix", "--backend", "cpu", "--threads", "-1")
                .assertUsage("--threads must be 0 (one per core) or 1 to 1024, got -1");
    }

    /** Threads of kvio's cpu executors in this process (named kvio-cpu-N; Linux: /proc). */
    static int kvioCpuThreads() throws IOException {
        int n = 0;
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                try {
                    if (Files.readString(t.resolve("comm")).startsWith("kvio-cpu-")) {
                        n++;
                    }
                } catch (NoSuchFileException e) {
                    // the thread ended while listing
                }
            }
        }
        return n;
    }

    /**
     * kvioCpuThreads() once it is the expected count (threads name themselves when they start and
     * end after close), or after 5 s.
     */
    private static int kvioCpuThreadsSettled(int expected) throws Exception {
        long deadline = System.nanoTime() + 5_000_000_000L;
        int n = kvioCpuThreads();
        while (n != expected && System.nanoTime() < deadline) {
            Thread.sleep(20);
            n = kvioCpuThreads();
        }
        return n;
    }

    @Test
    public void matrixClosesItsExecutors() throws Exception {
        if (!Files.isDirectory(Path.of("/proc/self/task"))) {
            throw new SkipException("no /proc/self/task here");
        }
        int before = kvioCpuThreads();
        // the count sees an executor's threads, and their end
        try (KvioExecutor e = KvioExecutor.create(IoBackend.CPU, 3)) {
            assertEquals(kvioCpuThreadsSettled(before + 3), before + 3);
        }
        assertEquals(kvioCpuThreadsSettled(before), before);
        for (int i = 0; i < 3; i++) {
            CliRunner r =
                    CliRunner.run(
                            "matrix",
                            "--backend",
                            "cpu",
                            "--device-forms",
                            "allocated",
                            "--threads",
                            "3",
                            "--quiet");
            assertEquals(r.exit, 0, r.toString());
        }
        assertEquals(kvioCpuThreadsSettled(before), before, "threads left by 3 matrix runs");
    }

    private static MatrixReport report(
            MatrixConfig cfg, List<MatrixReport.Backend> backends, Cell cell) {
        List<List<Cell>> cells = new ArrayList<>();
        cells.add(List.of(cell));
        return new MatrixReport("0", "test", "quick", List.of(cfg), backends, cells, 0);
    }
}
