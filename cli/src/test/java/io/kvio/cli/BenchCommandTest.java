/*
 * `bench` run in-process: the CSV and JSON it writes parse and hold one point per row size x
 * index count x direction x layout of each available backend, with a baseline measured in the
 * same run, and the SVG plot is well-formed XML with one polyline per backend and layout plus
 * one per backend's baseline, in each of its two panels; each backend that ran has its submit cost
 * (a one-page per-layer load) in the text and the JSON, unless --no-submit-cost.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kvio.IoBackend;
import io.kvio.KvioExecutor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

public class BenchCommandTest extends OutputDirTest {
    private CliRunner run;

    @BeforeClass
    public void runSmallSweep() throws Exception {
        run =
                CliRunner.run(
                        "bench",
                        "--rows",
                        "64,1024,4096",
                        "--tokens",
                        "16,64",
                        "--layouts",
                        "page_first,layer_first,page_head",
                        "--repeats",
                        "2",
                        "--csv",
                        out("b.csv"),
                        "--json",
                        out("b.json"),
                        "--svg",
                        out("b.svg"));
    }

    /** The sweep asked for above, written out: every point's key comes from these. */
    private static final List<String> ROWS = List.of("64", "1024", "4096");

    private static final List<String> TOKENS = List.of("16", "64");
    private static final List<String> LAYOUTS = List.of("page_first", "layer_first", "page_head");
    private static final List<String> DIRECTIONS = List.of("backup", "load");

    /** The names of the io backends that can run here, in the order a bench runs them. */
    private static List<String> availableNames() {
        return MatrixCommandTest.DEFAULT_BACKENDS.stream()
                .filter(IoBackend::isAvailable)
                .map(IoBackend::userName)
                .collect(Collectors.toList());
    }

    /** How many io backends can run here. */
    private static int available() {
        return availableNames().size();
    }

    /**
     * The baseline a backend is measured against here, by the documented rule: a memcpy where it
     * runs in host memory (cpu, and auto without a GPU), else one contiguous kvio transfer.
     */
    private static String baselineOf(IoBackend b) {
        boolean hostMemory =
                b == IoBackend.CPU || (b == IoBackend.AUTO && !IoBackend.KERNEL.isAvailable());
        return hostMemory ? "memcpy" : "contiguous";
    }

    /** A point's backend, layout, direction, row size and index count. */
    private static String key(
            String backend, String layout, String direction, String row, String tokens) {
        return String.join("/", backend, layout, direction, row, tokens);
    }

    @Test
    public void exitsZeroAndPrintsTheTable() {
        assertEquals(run.exit, 0, run.toString());
        assertTrue(run.out.contains("| backend | layout | direction | row | tokens |"), run.out);
        assertTrue(
                run.out.matches("(?s).*- cpu \\(\\d+ io threads?\\): baseline = memcpy.*"),
                run.out);
        for (IoBackend b : IoBackend.values()) {
            if (!b.isAvailable()) {
                assertTrue(
                        run.out.contains(
                                "- " + b.userName() + ": UNAVAILABLE: " + b.unavailabilityCause()),
                        run.out);
            }
        }
    }

    @Test
    public void csvHasOnePointPerSweepStep() throws Exception {
        List<String> lines = Files.readAllLines(dir.resolve("b.csv"), StandardCharsets.UTF_8);
        assertEquals(lines.get(0), BenchResult.CSV_HEADER);
        int columns = BenchResult.CSV_HEADER.split(",").length;
        assertEquals(lines.size() - 1, available() * 3 * 2 * 2 * 3);
        Set<String> expected = new HashSet<>();
        for (String b : availableNames()) {
            for (String layout : LAYOUTS) {
                for (String direction : DIRECTIONS) {
                    for (String row : ROWS) {
                        for (String tokens : TOKENS) {
                            expected.add(key(b, layout, direction, row, tokens));
                        }
                    }
                }
            }
        }
        Set<String> keys = new HashSet<>();
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",", -1); // -1: a device backend's threads field is empty
            assertEquals(f.length, columns, line);
            long row = Long.parseLong(f[3]);
            long heads = Long.parseLong(f[4]);
            long headBytes = Long.parseLong(f[5]);
            assertEquals(heads * headBytes, row, line);
            long bytes = Long.parseLong(f[8]);
            assertEquals(bytes, Long.parseLong(f[6]) * Long.parseLong(f[7]) * 2 * row, line);
            assertTrue(Double.parseDouble(f[11]) > 0, line);
            assertTrue(Double.parseDouble(f[15]) > 0, line);
            assertEquals(f[12], baselineOf(IoBackend.parse(f[0])), line);
            assertTrue(Double.parseDouble(f[10]) <= Double.parseDouble(f[9]), "best <= median");
            assertTrue(keys.add(key(f[0], f[1], f[2], f[3], f[6])), "duplicate " + line);
        }
        assertEquals(keys, expected, "the points are the sweep asked for, each once");
    }

    /**
     * The io threads of the executor each backend ran on: the count for those with io threads, none
     * for device backends (their executors report 1; they run on a device stream).
     */
    private static Integer threadsOf(IoBackend b) {
        if (!b.hasIoThreads()) {
            return null;
        }
        try (KvioExecutor e = KvioExecutor.create(b, Converters.executorThreads(b, 0))) {
            return e.threads();
        }
    }

    /**
     * Each backend's figures carry the io threads they were measured with (its line in the
     * Markdown, each CSV row and JSON point, its JSON backend entry), not one count for the whole
     * run: that was the last backend's, so a device backend after cpu made cpu's look like 1.
     */
    @Test
    public void eachBackendCarriesItsOwnIoThreads() throws Exception {
        assertEquals(run.exit, 0, run.toString());
        assertFalse(run.out.lines().findFirst().orElse("").contains("io thread"), run.out);
        JsonNode j = readJson("b.json");
        assertFalse(j.has("threads"), "one count for every backend");
        List<String> csv = Files.readAllLines(dir.resolve("b.csv"), StandardCharsets.UTF_8);
        int column = List.of(BenchResult.CSV_HEADER.split(",")).indexOf("threads");
        assertTrue(column >= 0, BenchResult.CSV_HEADER);
        for (JsonNode b : j.get("backends")) {
            IoBackend backend = IoBackend.parse(b.get("name").asText());
            if (!backend.isAvailable()) {
                continue;
            }
            Integer threads = threadsOf(backend);
            String text =
                    threads == null
                            ? "no io threads, a device stream"
                            : Main.count(threads, "io thread", "io threads");
            String runsOn =
                    backend == IoBackend.AUTO ? RoundTripReport.autoRunsOnText() + "; " : "";
            assertTrue(
                    run.out.contains(
                            "- " + backend.userName() + " (" + runsOn + text + "): baseline = "),
                    run.out);
            assertEquals(
                    b.has("runsOn") ? b.get("runsOn").asText() : null,
                    backend == IoBackend.AUTO ? RoundTripReport.autoRunsOn() : null,
                    b + "");
            assertEquals(
                    b.get("threads").isNull() ? null : b.get("threads").asInt(), threads, b + "");
        }
        JsonNode points = j.get("points");
        assertTrue(points.size() > 0);
        for (int i = 0; i < points.size(); i++) {
            JsonNode p = points.get(i);
            Integer threads = threadsOf(IoBackend.parse(p.get("backend").asText()));
            assertEquals(p.get("threads").isNull() ? null : p.get("threads").asInt(), threads);
            assertEquals(
                    csv.get(i + 1).split(",", -1)[column],
                    threads == null ? "" : threads.toString());
        }
    }

    /**
     * A run over a backend with io threads and a device backend (the case a GPU machine sees, built
     * by hand here): each keeps its own count in every rendering.
     */
    @Test
    public void aMixedRunRendersEachBackendsThreads() throws Exception {
        BenchResult r = new BenchResult("v", "linux-x86_64", "quick");
        r.layers = 1;
        r.pageSize = 16;
        r.repeats = 1;
        r.backends.add(new MatrixReport.Backend("cpu", null));
        r.backends.add(new MatrixReport.Backend("kernel", null));
        r.baselines.put("cpu", "memcpy");
        r.baselines.put("kernel", "contiguous");
        r.threads.put("cpu", 2);
        r.threads.put("kernel", null);
        for (String b : List.of("cpu", "kernel")) {
            for (Direction d : Direction.values()) {
                r.points.add(
                        new BenchResult.Point(
                                b,
                                "layer_first",
                                d,
                                b.equals("cpu") ? "memcpy" : "contiguous",
                                64,
                                1,
                                64,
                                16,
                                1,
                                2048,
                                1e-6,
                                1e-6,
                                1e-6,
                                1e-6,
                                r.threads.get(b)));
            }
        }
        r.submitCosts.add(new BenchResult.SubmitCost("cpu", 2.5, 7.25));
        r.submitCosts.add(new BenchResult.SubmitCost("kernel", 1.5, 9.125));
        java.io.StringWriter md = new java.io.StringWriter();
        r.printMarkdown(new java.io.PrintWriter(md, true));
        assertTrue(
                md.toString().contains("\n- cpu: submit 2.50, submit+await 7.25\n"), md.toString());
        assertTrue(
                md.toString().contains("\n- kernel: submit 1.50, submit+await 9.13\n"),
                md.toString());
        JsonNode costs = r.toJson().get("submitCost");
        assertEquals(costs.size(), 2, costs.toString());
        assertEquals(costs.get(1).get("backend").asText(), "kernel");
        assertFalse(costs.get(1).has("runsOn"), "only auto says what it runs on: " + costs);
        assertEquals(costs.get(1).get("submitUs").asDouble(), 1.5);
        assertEquals(costs.get(1).get("submitToCompletionUs").asDouble(), 9.125);
        assertTrue(
                md.toString().contains("- cpu (2 io threads): baseline = memcpy"), md.toString());
        assertTrue(
                md.toString()
                        .contains(
                                "- kernel (no io threads, a device stream): baseline = contiguous"),
                md.toString());
        JsonNode j = r.toJson();
        assertEquals(j.get("backends").get(0).get("threads").asInt(), 2);
        assertTrue(j.get("backends").get(1).get("threads").isNull());
        assertEquals(j.get("points").get(0).get("threads").asInt(), 2);
        assertTrue(j.get("points").get(3).get("threads").isNull());
        List<String> csv = r.toCsv().lines().collect(Collectors.toList());
        assertTrue(csv.get(1).startsWith("cpu,") && csv.get(1).endsWith(",2"), csv.get(1));
        assertTrue(csv.get(4).startsWith("kernel,") && csv.get(4).endsWith(","), csv.get(4));
        String svg = SvgPlot.render(r);
        assertTrue(svg.contains("cpu 2 io threads, kernel no io threads"), svg);
    }

    /**
     * auto's GPU crossovers are printed only where auto runs on a CUDA device: on a machine without
     * one auto is cpu, which has no crossovers to show.
     */
    @Test
    public void autoPrintsItsGpuCalibrationOnlyOnAGpu() {
        CliRunner r =
                CliRunner.run(
                        "bench",
                        "--backend",
                        "auto",
                        "--rows",
                        "64",
                        "--tokens",
                        "16",
                        "--layouts",
                        "layer_first",
                        "--repeats",
                        "1",
                        "--quiet");
        assertEquals(r.exit, 0, r.toString());
        assertEquals(r.out.contains("auto calibration"), IoBackend.AUTO.isCuda(), r.out);
    }

    @Test
    public void jsonMatchesTheCsv() throws Exception {
        JsonNode j = readJson("b.json");
        assertEquals(j.get("backends").size(), MatrixCommandTest.DEFAULT_BACKENDS.size());
        JsonNode points = j.get("points");
        List<String> csv = Files.readAllLines(dir.resolve("b.csv"), StandardCharsets.UTF_8);
        assertEquals(points.size(), csv.size() - 1);
        for (int i = 0; i < points.size(); i++) {
            // The same point as the CSV's line i: its key, sizes and times (the CSV prints
            // seconds to 9 decimals).
            JsonNode p = points.get(i);
            String[] f = csv.get(i + 1).split(",");
            assertEquals(
                    key(
                            p.get("backend").asText(),
                            p.get("layout").asText(),
                            p.get("direction").asText(),
                            p.get("rowBytes").asText(),
                            p.get("tokens").asText()),
                    key(f[0], f[1], f[2], f[3], f[6]));
            assertEquals(p.get("bytes").asLong(), Long.parseLong(f[8]), f[8]);
            assertEquals(p.get("seconds").asDouble(), Double.parseDouble(f[9]), 1e-9);
            assertEquals(p.get("bestSeconds").asDouble(), Double.parseDouble(f[10]), 1e-9);
            assertEquals(p.get("baselineBestSeconds").asDouble(), Double.parseDouble(f[14]), 1e-9);
        }
        for (JsonNode p : points) {
            double gbps = p.get("bytes").asLong() / p.get("bestSeconds").asDouble() / 1e9;
            assertEquals(p.get("gbps").asDouble(), gbps, gbps * 1e-9);
            assertEquals(
                    p.get("ratio").asDouble(),
                    p.get("baselineBestSeconds").asDouble() / p.get("bestSeconds").asDouble(),
                    1e-9);
        }
        List<String> names = new ArrayList<>();
        for (JsonNode b : j.get("backends")) {
            names.add(b.get("name").asText());
            if (b.get("available").asBoolean()) {
                assertTrue(b.get("baseline").asText().length() > 0, b.toString());
            } else {
                assertTrue(b.get("cause").asText().length() > 0, b.toString());
            }
        }
        assertEquals(
                names,
                MatrixCommandTest.DEFAULT_BACKENDS.stream()
                        .map(IoBackend::userName)
                        .collect(Collectors.toList()));
    }

    @Test
    public void svgIsWellFormedWithOnePolylinePerSeries() throws Exception {
        Document svg = readXml("b.svg");
        Element root = svg.getDocumentElement();
        assertEquals(root.getTagName(), "svg");
        NodeList lines = root.getElementsByTagName("polyline");
        // per panel: backends x 3 layouts + one baseline per backend; two panels
        assertEquals(lines.getLength(), 2 * (available() * 3 + available()));
        for (int i = 0; i < lines.getLength(); i++) {
            Element l = (Element) lines.item(i);
            // every series has a point per row size (3), at the plotted index count
            assertEquals(l.getAttribute("points").trim().split(" ").length, 3, l.toString());
        }
        assertTrue(root.getTextContent().contains("64 tokens"), "plots the largest index count");
    }

    @Test
    public void tokensMustBeWholePages() {
        CliRunner.run("bench", "--tokens", "20")
                .assertUsage(
                        "--tokens 20 is not a positive multiple of the page size 16; e.g. --tokens"
                                + " 64,256");
        CliRunner.run("bench", "--tokens", "0")
                .assertUsage("--tokens 0 is not a positive multiple of the page size 16");
    }

    /** auto's baseline is the one it was measured against: a memcpy on a machine without a GPU. */
    @Test
    public void autoNamesTheBaselineItWasMeasuredAgainst() throws Exception {
        CliRunner r =
                CliRunner.run(
                        "bench",
                        "--backend",
                        "auto",
                        "--rows",
                        "256,1024",
                        "--tokens",
                        "16",
                        "--layouts",
                        "page_first",
                        "--layers",
                        "2",
                        "--repeats",
                        "1",
                        "--quiet",
                        "--csv",
                        out("auto.csv"),
                        "--json",
                        out("auto.json"),
                        "--svg",
                        out("auto.svg"));
        assertEquals(r.exit, 0, r.toString());
        String expected = baselineOf(IoBackend.AUTO);
        assertTrue(r.out.matches("(?s).*- auto \\([^)]*\\): baseline = " + expected + ".*"), r.out);
        List<String> lines = Files.readAllLines(dir.resolve("auto.csv"), StandardCharsets.UTF_8);
        assertEquals(lines.size(), 1 + 2 * 2);
        for (String line : lines.subList(1, lines.size())) {
            assertEquals(line.split(",")[12], expected, line);
        }
        for (JsonNode p : readJson("auto.json").get("points")) {
            assertEquals(p.get("baseline").asText(), expected, p.toString());
        }
        JsonNode costs = readJson("auto.json").get("submitCost");
        assertEquals(costs.size(), 1, costs + "");
        assertEquals(costs.get(0).get("backend").asText(), "auto");
        assertEquals(costs.get(0).get("runsOn").asText(), RoundTripReport.autoRunsOn());
        assertTrue(
                r.out.contains("\n- auto (runs on " + RoundTripReport.autoRunsOn() + "): submit "),
                r.out);
        assertTrue(
                readXml("auto.svg")
                        .getDocumentElement()
                        .getTextContent()
                        .contains("auto baseline (" + expected + ")"),
                "the SVG's legend");
    }

    @Test
    public void anOutputPathThatCannotBeWrittenIsAUsageErrorBeforeTheRun() {
        String missing = dir.resolve("no-such-folder").resolve("b.svg").toString();
        CliRunner r = CliRunner.run("bench", "--backend", "cpu", "--svg", missing);
        r.assertUsage("--svg " + missing + ": no folder");
        assertEquals(r.out, "", "refused before the run");
        CliRunner.run("bench", "--csv", dir.toString())
                .assertUsage("--csv " + dir + ": is a folder");
    }

    /** A file that cannot be written after a run: one error line, the others written, exit 3. */
    @Test
    public void aFileThatCannotBeWrittenAfterTheRunIsOneLineAndExitThree() throws Exception {
        if (!Files.isWritable(java.nio.file.Path.of("/dev/full"))) {
            throw new org.testng.SkipException("no /dev/full here");
        }
        CliRunner r =
                CliRunner.run(
                        "bench",
                        "--backend",
                        "cpu",
                        "--rows",
                        "256",
                        "--tokens",
                        "16",
                        "--layouts",
                        "page_first",
                        "--repeats",
                        "1",
                        "--quiet",
                        "--csv",
                        "/dev/full",
                        "--json",
                        out("kept.json"));
        r.assertExit(Main.EXIT_ERROR, "kvio: could not write --csv /dev/full");
        assertTrue(r.err.contains("kvio: wrote " + out("kept.json")), r.err);
        assertEquals(readJson("kept.json").get("points").size(), 2);
    }

    /** Io backends that cannot run here (kernel and direct in a build without CUDA). */
    private static List<String> unavailableNames() {
        List<String> names =
                MatrixCommandTest.DEFAULT_BACKENDS.stream()
                        .filter(b -> !b.isAvailable())
                        .map(IoBackend::userName)
                        .collect(Collectors.toList());
        if (names.isEmpty()) {
            throw new org.testng.SkipException("every io backend is available here");
        }
        return names;
    }

    /**
     * docs/matrix.md's GPU CI step on a runner whose backends are unavailable: nothing measured is
     * exit 4 (not a passing empty benchmark), and the header claims no io threads.
     */
    @Test
    public void aSweepOfOnlyUnavailableBackendsMeasuresNothingAndExitsFour() throws Exception {
        List<String> names = unavailableNames();
        String backends = String.join(",", names);
        CliRunner r =
                CliRunner.run(
                        "bench",
                        "--backend",
                        backends,
                        "--rows",
                        "64",
                        "--tokens",
                        "16",
                        "--repeats",
                        "1",
                        "--quiet",
                        "--csv",
                        out("none.csv"),
                        "--json",
                        out("none.json"));
        r.assertExit(
                Main.EXIT_REQUIRED_UNAVAILABLE,
                "kvio: bench measured nothing: no backend of "
                        + String.join(", ", names)
                        + " is available");
        assertTrue(r.out.contains("no backend ran"), r.out);
        assertFalse(r.out.contains("io thread"), r.out);
        assertFalse(readJson("none.json").has("threads"), "no backend ran: no io threads");
        assertEquals(readJson("none.json").get("points").size(), 0);
    }

    @Test
    public void aRequiredBackendThatIsUnavailableIsExitFour() {
        String missing = unavailableNames().get(0);
        CliRunner r =
                CliRunner.run(
                        "bench",
                        "--backend",
                        "cpu",
                        "--require",
                        missing,
                        "--rows",
                        "64",
                        "--tokens",
                        "16",
                        "--layouts",
                        "layer_first",
                        "--repeats",
                        "1",
                        "--quiet");
        r.assertExit(
                Main.EXIT_REQUIRED_UNAVAILABLE,
                "kvio: io backend '" + missing + "' is required (--require) but unavailable: ");
        assertTrue(r.out.contains("| cpu | layer_first |"), "cpu still ran: " + r.out);
        assertTrue(
                r.err.startsWith(
                        "kvio: io backend '"
                                + missing
                                + "' is required (--require) but unavailable"),
                "said first: " + r.err);
        assertTrue(r.err.contains("; the run goes on for its report, then exits 4"), r.err);
    }

    @Test
    public void threadsOutsideTheExecutorsRangeAreAUsageError() {
        CliRunner.run("bench", "--threads", "100000")
                .assertUsage("--threads must be 0 (one per core) or 1 to 1024, got 100000");
        CliRunner.run("bench", "--threads", "-1")
                .assertUsage("--threads must be 0 (one per core) or 1 to 1024, got -1");
    }

    @Test
    public void repeatsBelowOneAreAUsageError() {
        CliRunner.run("bench", "--repeats", "0").assertUsage("--repeats must be 1 to 10000, got 0");
        CliRunner.run("bench", "--repeats", "-5")
                .assertUsage("--repeats must be 1 to 10000, got -5");
    }

    @Test
    public void maxBytesIsCappedAndASweepWithNoPointThatFitsSaysWhy() {
        CliRunner.run("bench", "--max-bytes", "9000000000000")
                .assertUsage("--max-bytes must be 1 to 1023 MiB", "got 9000000000000");
        // 4 MiB rows x 128 tokens x 4 layers x 2: 4 GiB, past what one Java buffer holds
        CliRunner.run("bench", "--max-bytes", "4096", "--rows", "4194304", "--tokens", "128")
                .assertUsage("--max-bytes must be 1 to 1023 MiB", "got 4096");
        CliRunner.run("bench", "--layers", "100000000000")
                .assertUsage("--layers must be 1 to 1048576", "got 100000000000");
        CliRunner.run("bench", "--layers", "1000000")
                .assertUsage(
                        "no point fits --max-bytes 128 MiB: the smallest, rows of 64 B x 64 tokens"
                                + " x 1000000 layers x 2 (K and V), moves 7812 MiB",
                        "lower --layers, --rows or --tokens");
        CliRunner help = CliRunner.run("bench", "--help");
        String text = help.out.replaceAll("\\s+", " ");
        assertTrue(text.contains("move more than this, K and V of all layers together"), text);
        assertFalse(text.contains("per transfer [128]"), text);
    }

    @Test
    public void pointsOverMaxBytesAreCountedAsSkipped() {
        CliRunner r =
                CliRunner.run(
                        "bench",
                        "--backend",
                        "cpu",
                        "--rows",
                        "64,65536",
                        "--tokens",
                        "16",
                        "--layouts",
                        "page_first",
                        "--layers",
                        "1",
                        "--max-bytes",
                        "1",
                        "--repeats",
                        "1",
                        "--quiet");
        assertEquals(r.exit, 0, r.toString());
        // 65536 B x 16 tokens x 2 = 2 MiB: over 1 MiB, both directions skipped
        assertTrue(
                r.out.contains("2 points, 2 skipped (they would move more than --max-bytes 1 MiB)"),
                r.out);
    }

    @Test
    public void repeatedNamesAndSizesRunOnce() {
        CliRunner r =
                CliRunner.run(
                        "bench",
                        "--backend",
                        "cpu,cpu",
                        "--layouts",
                        "page_first,page_first",
                        "--rows",
                        "256,256",
                        "--tokens",
                        "16,16",
                        "--layers",
                        "1",
                        "--repeats",
                        "1",
                        "--quiet");
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.contains("\n2 points"), r.out);
        assertEquals(r.out.split("- cpu \\(").length, 2, r.out);
    }

    /** A submit-cost line of the text output: "- cpu: submit 2.41, submit+await 9.87". */
    private static final Pattern COST_LINE =
            Pattern.compile(
                    "(?m)^- (\\S+)(?: \\(runs on \\S+\\))?: submit (\\S+), submit\\+await (\\S+)$");

    /** The heading over the submit-cost lines names the C bench's lines to subtract. */
    private static final String COST_HEADING_END =
            "The C figure for the same shape is kvio_cuda_bench's `submit` /"
                    + " `submit_to_completion` lines:";

    /** The smallest cpu sweep, and what more it is given. */
    private static CliRunner smallestCpuBench(String... more) {
        List<String> args =
                new ArrayList<>(
                        List.of(
                                "bench",
                                "--backend",
                                "cpu",
                                "--rows",
                                "64",
                                "--tokens",
                                "16",
                                "--layouts",
                                "layer_first",
                                "--layers",
                                "1",
                                "--repeats",
                                "1",
                                "--quiet"));
        args.addAll(List.of(more));
        return CliRunner.run(args.toArray(new String[0]));
    }

    /**
     * On cpu the submit cost is one line under its heading, after the table, with two positive
     * figures, and the JSON holds the same two; --quiet keeps stderr empty through it.
     */
    @Test
    public void cpuReportsItsSubmitCostInTextAndJson() throws Exception {
        CliRunner r = smallestCpuBench("--json", out("cost.json"));
        assertEquals(r.exit, 0, r.toString());
        assertEquals(r.err.strip(), "kvio: wrote " + out("cost.json"), "--quiet: no progress");
        int heading = r.out.indexOf(COST_HEADING_END);
        assertTrue(heading > r.out.indexOf("\n2 points"), r.out);
        assertTrue(
                r.out.contains(
                        "mha, 8 heads x 256 B, 64 tokens; page_first host pool ->"
                                + " layer_first device pool, 4 layers, 64 pages"),
                r.out);
        Matcher m = COST_LINE.matcher(r.out);
        assertTrue(m.find(), r.out);
        assertTrue(m.start() > heading, r.out);
        assertEquals(m.group(1), "cpu");
        double submit = Double.parseDouble(m.group(2));
        double complete = Double.parseDouble(m.group(3));
        assertTrue(submit > 0 && complete > 0, m.group());
        assertFalse(m.find(), "one line, for the one backend: " + r.out);
        JsonNode costs = readJson("cost.json").get("submitCost");
        assertTrue(costs != null && costs.isArray() && costs.size() == 1, "submitCost: " + costs);
        JsonNode cpu = costs.get(0);
        assertEquals(cpu.get("backend").asText(), "cpu");
        assertFalse(cpu.has("runsOn"), cpu + "");
        for (String field : List.of("submitUs", "submitToCompletionUs")) {
            double v = cpu.get(field).asDouble();
            assertTrue(cpu.get(field).isNumber() && v > 0 && Double.isFinite(v), cpu + "");
        }
        // the text prints the JSON's figures to two decimals
        assertEquals(submit, cpu.get("submitUs").asDouble(), 0.0051);
        assertEquals(complete, cpu.get("submitToCompletionUs").asDouble(), 0.0051);
    }

    @Test
    public void noSubmitCostLeavesItOutOfTextAndJson() throws Exception {
        CliRunner r = smallestCpuBench("--no-submit-cost", "--json", out("nocost.json"));
        assertEquals(r.exit, 0, r.toString());
        assertTrue(r.out.contains("| cpu | layer_first |"), "the sweep still ran: " + r.out);
        assertFalse(r.out.contains("kvio_cuda_bench"), r.out);
        assertFalse(COST_LINE.matcher(r.out).find(), r.out);
        JsonNode j = readJson("nocost.json");
        assertEquals(j.get("points").size(), 2);
        assertFalse(j.has("submitCost"), j.toString());
    }

    /** The default sweep measures the submit cost of every backend it ran, in the same order. */
    @Test
    public void everyBackendThatRanHasItsSubmitCost() throws Exception {
        assertEquals(run.exit, 0, run.toString());
        List<String> names = new ArrayList<>();
        for (JsonNode c : readJson("b.json").get("submitCost")) {
            names.add(c.get("backend").asText());
            assertTrue(c.get("submitUs").asDouble() > 0, c + "");
            assertTrue(c.get("submitToCompletionUs").asDouble() > 0, c + "");
        }
        assertEquals(names, availableNames());
        List<String> lines = new ArrayList<>();
        Matcher m = COST_LINE.matcher(run.out);
        while (m.find()) {
            lines.add(m.group(1));
        }
        assertEquals(lines, availableNames(), run.out);
    }

    @Test
    public void helpListsNoSubmitCost() {
        CliRunner help = CliRunner.run("bench", "--help");
        String text = help.out.replaceAll("\\s+", " ");
        assertTrue(text.contains("--no-submit-cost skip the submit cost"), text);
    }

    @Test
    public void submitCostCountsAreWholeStepsOfAtLeastTheSubmitsAsked() {
        assertEquals(BenchSubmitCost.Counts.of(false), new BenchSubmitCost.Counts(320, 200));
        assertEquals(BenchSubmitCost.Counts.of(true), new BenchSubmitCost.Counts(640, 500));
        assertEquals(BenchSubmitCost.Counts.of(false).steps(), 10);
        assertEquals(new BenchSubmitCost.Counts(33, 1).steps(), 2);
    }

    @Test
    public void niceAxisCeiling() {
        assertEquals(SvgPlot.niceCeiling(7.3), 10.0);
        assertEquals(SvgPlot.niceCeiling(11), 20.0);
        assertEquals(SvgPlot.niceCeiling(0.3), 0.5);
        assertEquals(SvgPlot.niceCeiling(0), 1.0);
    }
}
