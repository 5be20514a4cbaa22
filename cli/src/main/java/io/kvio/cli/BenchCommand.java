/*
 * `kvio-cli bench`: bandwidth sweeps per io backend: row size x index count, both directions
 * (backup: all layers in one call; load: one call per layer, as a serving engine does), each host
 * layout, against a baseline measured in the same run on the same bytes (cpu, and auto without a
 * GPU: memcpy-like bulk copies between two buffers allocated like kvio's pools, the faster of one
 * thread and one slice per io thread plus one on the calling thread; device backends: one contiguous kvio transfer, layer_first
 * to layer_first over all tokens). Prints a Markdown table; writes CSV, JSON and an SVG plot (GB/s against row size,
 * one line per backend and layout, baselines dashed). After each backend's points, the host cost
 * of a one-page per-layer load through the Java API (BenchSubmitCost; --no-submit-cost skips it).
 * This class holds the options; BenchRunner runs the points, BenchBaseline measures the baselines
 * and BenchResult renders the results.
 */
package io.kvio.cli;

import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.Kvio;
import io.kvio.KvioExecutor;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.bytedeco.javacpp.Loader;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Measures transfer bandwidth per io backend: row size x index count, backup (device"
                    + " to host, all layers in one call) and load (host to device, one call per"
                    + " layer), each host layout; whole pages (16 tokens) in random order on both"
                    + " sides. A baseline is measured in the same run on the same number of bytes:"
                    + " backends in host memory (cpu, and auto without a GPU): a memcpy (bulk copies between two buffers allocated like kvio's pools:"
                    + " the faster of"
                    + " one thread and one per io thread of the kvio executor plus the calling"
                    + " thread, as kvio copies a mid-size job);"
                    + " device backends (auto with a GPU): one contiguous kvio transfer. Unavailable backends are"
                    + " listed with the cause. After each backend's points, its submit cost:"
                    + " a one-page per-layer load through the Java API, the submit call alone"
                    + " and submit + await, us per transfer (--no-submit-cost skips it).",
            ""
        },
        footer = {
            "",
            "Example:",
            "  java -jar kvio-cli.jar bench --quick --csv bench.csv --json bench.json \\",
            "      --svg bench.svg",
            "",
            "Repeated names and sizes in --backend, --layouts, --rows and --tokens run once.",
            "",
            "Exit status: 0 done, 2 bad arguments (among them an output file that cannot be"
                    + " written, checked before the run, and a sweep in which no point fits"
                    + " --max-bytes), 3 kvio error or an output file that could not be written"
                    + " after all (the others are still written), 4 a backend named by --require"
                    + " is unavailable, or no backend selected is (nothing was measured)."
        })
public final class BenchCommand implements Callable<Integer> {
    static final long PAGE_SIZE = 16;

    /**
     * Timed runs per point by default, for kvio and its baseline alike. GB/s comes from the best
     * run, an estimate of what the machine can do that scheduling noise only lowers; on a shared
     * 2-vCPU VM the best of 5 moved a point by up to 0.38x memcpy between two invocations of the
     * same build, the best of 15 by much less, and a quick sweep still takes seconds
     * (docs/benchmarks.md).
     */
    static final int DEFAULT_RUNS = 15;

    /** The most timed runs per point --repeats takes. */
    static final int MAX_RUNS = 10_000;

    /** The most layers a kvio pool has (native/src/core/layout.cpp kMaxLayers). */
    static final long MAX_LAYERS = 1L << 20;

    /**
     * The most --max-bytes takes, in MiB: a point's host pool is filled through one ByteBuffer (at
     * most 2 GiB - 1 bytes) and a cpu device pool, of twice the point's tokens, too, as is the
     * memcpy baseline's buffer.
     */
    static final long MAX_MIB = 1023;

    @Spec CommandSpec spec;

    @Option(
            names = "--backend",
            paramLabel = "NAME",
            split = ",",
            arity = "1",
            converter = Converters.Backend.class,
            description =
                    "io backends: cpu, kernel, direct, kernel_ascend, auto, staged [every one but"
                            + " auto, which runs one of the others per transfer; those not"
                            + " available here are listed as UNAVAILABLE]")
    List<IoBackend> backends;

    static final class Mode {
        @Option(
                names = "--quick",
                description =
                        "rows 64 B to 64 KiB in steps of 4x, 64 and 256 tokens, 15 runs"
                                + " [default]")
        boolean quick;

        @Option(
                names = "--full",
                description = "rows 64 B to 64 KiB in steps of 2x, 16 to 1024 tokens, 15 runs")
        boolean full;
    }

    @ArgGroup(exclusive = true, multiplicity = "0..1")
    Mode mode;

    @Option(
            names = "--layouts",
            paramLabel = "LAYOUT",
            split = ",",
            arity = "1",
            converter = Converters.Layout.class,
            description = "host layouts [all four]")
    List<KvLayout> layouts;

    @Option(
            names = "--rows",
            paramLabel = "BYTES",
            split = ",",
            arity = "1",
            description = "row sizes in bytes (all heads of one token, one layer) [by mode]")
    List<Long> rows;

    @Option(
            names = "--tokens",
            paramLabel = "N",
            split = ",",
            arity = "1",
            description = "index counts: tokens per transfer, multiples of 16 [by mode]")
    List<Long> tokens;

    @Option(
            names = "--layers",
            paramLabel = "N",
            description = "model layers, 1 to 1048576 [${DEFAULT-VALUE}]")
    long layers = 4;

    @Option(
            names = "--max-bytes",
            paramLabel = "MiB",
            description =
                    "skip points that move more than this, K and V of all layers together (a"
                            + " backup's one call; a load's calls together), 1 to 1023"
                            + " [${DEFAULT-VALUE}]")
    long maxMiB = 128;

    @Option(
            names = "--repeats",
            paramLabel = "N",
            description =
                    "timed runs per point, after a warm-up; GB/s from the best; 1 to 10000"
                            + " [15]")
    Integer repeats;

    @Mixin RequiredBackends required;

    @Option(
            names = "--threads",
            paramLabel = "N",
            description =
                    "io threads of cpu (and auto without a GPU): 1 to 1024, or 0 for one per"
                            + " core (the default); the device backends have none")
    int threads;

    @Option(
            names = "--csv",
            converter = Converters.OutputFile.class,
            paramLabel = "FILE",
            description = "write the results as CSV")
    Path csv;

    @Option(
            names = "--json",
            converter = Converters.OutputFile.class,
            paramLabel = "FILE",
            description = "write the results as JSON")
    Path json;

    @Option(
            names = "--svg",
            converter = Converters.OutputFile.class,
            paramLabel = "FILE",
            description =
                    "write an SVG plot: GB/s against row size, one line per backend and layout")
    Path svg;

    @Option(names = "--seed", paramLabel = "N", description = "seed of the page order [42]")
    long seed = 42;

    @Option(
            names = "--no-submit-cost",
            description =
                    "skip the submit cost measured after each backend's points: a one-page"
                            + " per-layer load through the Java API (mha, 8 heads x 256 B, 64"
                            + " tokens), the submit call alone and submit + await, us per"
                            + " transfer; the shape of kvio_cuda_bench's submit lines")
    boolean noSubmitCost;

    @Option(names = "--quiet", description = "no progress on stderr")
    boolean quiet;

    @Override
    public Integer call() {
        boolean full = mode != null && mode.full;
        PrintWriter out = Main.out(spec);
        PrintWriter err = Main.err(spec);
        List<Long> rowList = rowSizes(full);
        List<Long> tokenList = tokenCounts(full);
        Converters.inRange(spec, "--layers", layers, MAX_LAYERS, " (kvio's limit)");
        Converters.inRange(
                spec,
                "--max-bytes",
                maxMiB,
                MAX_MIB,
                " MiB (a point's pools are filled through Java buffers of under 2 GiB, and a cpu"
                        + " device pool holds twice a point's tokens)");
        int reps =
                repeats == null
                        ? DEFAULT_RUNS
                        : (int) Converters.inRange(spec, "--repeats", repeats, MAX_RUNS, "");
        int threadCount = Converters.threads(spec, "--threads", threads);
        List<KvLayout> layoutList =
                layouts != null ? Converters.distinct(layouts) : Arrays.asList(KvLayout.values());
        List<IoBackend> selected =
                backends != null ? Converters.distinct(backends) : Converters.concreteBackends();
        Map<String, Path> files = new LinkedHashMap<>();
        files.put("--csv", csv);
        files.put("--json", json);
        files.put("--svg", svg);
        ReportFiles.checkOutputs(spec, files);
        required.announce(err);

        BenchRunner.Plan plan =
                new BenchRunner.Plan(
                        rowList,
                        tokenList,
                        layoutList,
                        layers,
                        maxMiB,
                        reps,
                        seed,
                        threadCount,
                        noSubmitCost ? null : BenchSubmitCost.Counts.of(full));
        checkSomePointFits(plan);
        BenchResult result =
                new BenchResult(Kvio.version(), Loader.getPlatform(), full ? "full" : "quick");
        result.layers = layers;
        result.pageSize = PAGE_SIZE;
        result.repeats = reps;
        result.maxMiB = maxMiB;
        new BenchRunner(plan, result, new Progress(err, quiet)).run(selected);
        result.printMarkdown(out);
        // auto's GPU crossovers: only where auto runs on a CUDA device (without one it is cpu or
        // kernel_ascend, which have none)
        if (selected.contains(IoBackend.AUTO) && IoBackend.AUTO.isCuda()) {
            try (KvioExecutor auto = KvioExecutor.create(IoBackend.AUTO, 0)) {
                out.println(RoundTripReport.autoCalibrationLine(auto.autoCalibration()));
            }
        }
        boolean written = ReportFiles.writeIfGiven("--csv", csv, result::writeCsv, err);
        written &= ReportFiles.writeIfGiven("--json", json, result::writeJson, err);
        written &= ReportFiles.writeIfGiven("--svg", svg, result::writeSvg, err);
        return ReportFiles.exitStatus(
                exitStatus(result, selected, required.backends, err), written);
    }

    /**
     * 4 when a backend named by --require is unavailable, or when no point was measured because
     * every backend selected is unavailable (a sweep of nothing is no benchmark); else 0.
     */
    static int exitStatus(
            BenchResult result,
            List<IoBackend> selected,
            List<IoBackend> required,
            PrintWriter err) {
        int status = RequiredBackends.status(required, err);
        if (status != Main.EXIT_OK) {
            return status;
        }
        if (result.points.isEmpty()) {
            List<String> names = new ArrayList<>();
            for (IoBackend b : selected) {
                names.add(b.userName());
            }
            err.println(
                    "kvio: bench measured nothing: no backend of "
                            + String.join(", ", names)
                            + " is available here (the table lists the causes)");
            return Main.EXIT_REQUIRED_UNAVAILABLE;
        }
        return Main.EXIT_OK;
    }

    /** A sweep in which no point fits --max-bytes is a usage error that says why. */
    private void checkSomePointFits(BenchRunner.Plan plan) {
        long smallest = Long.MAX_VALUE;
        long row0 = 0;
        long count0 = 0;
        for (long row : plan.rows()) {
            for (long count : plan.tokens()) {
                if (plan.fits(row, count)) {
                    return;
                }
                long moved = BenchRunner.moved(row, count, plan.layers());
                if (moved <= smallest) {
                    smallest = moved;
                    row0 = row;
                    count0 = count;
                }
            }
        }
        throw new picocli.CommandLine.ParameterException(
                spec.commandLine(),
                "no point fits --max-bytes "
                        + plan.maxMiB()
                        + " MiB: the smallest, rows of "
                        + row0
                        + " B x "
                        + count0
                        + " tokens x "
                        + plan.layers()
                        + " layers x 2 (K and V), moves "
                        + (smallest == Long.MAX_VALUE
                                ? "more than 2^63 bytes"
                                : (smallest >> 20) + " MiB")
                        + "; raise --max-bytes (at most "
                        + MAX_MIB
                        + ") or lower --layers, --rows or --tokens");
    }

    /** --rows, each at least 1, or the mode's row sizes. */
    private List<Long> rowSizes(boolean full) {
        List<Long> rowList =
                rows != null
                        ? Converters.distinct(rows)
                        : full
                                ? List.of(
                                        64L, 128L, 256L, 512L, 1024L, 2048L, 4096L, 8192L, 16384L,
                                        32768L, 65536L)
                                : List.of(64L, 256L, 1024L, 4096L, 16384L, 65536L);
        for (long r : rowList) {
            Converters.positive(spec, "--rows", r);
        }
        return rowList;
    }

    /** --tokens, each a multiple of the page size, or the mode's index counts. */
    private List<Long> tokenCounts(boolean full) {
        List<Long> tokenList =
                tokens != null
                        ? Converters.distinct(tokens)
                        : full ? List.of(16L, 64L, 256L, 1024L) : List.of(64L, 256L);
        for (long t : tokenList) {
            if (t < PAGE_SIZE || t % PAGE_SIZE != 0) {
                throw new picocli.CommandLine.ParameterException(
                        spec.commandLine(),
                        "--tokens "
                                + t
                                + " is not a positive multiple of the page size "
                                + PAGE_SIZE
                                + "; e.g. --tokens 64,256");
            }
        }
        return tokenList;
    }
}
