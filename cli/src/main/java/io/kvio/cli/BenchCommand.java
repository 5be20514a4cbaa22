/*
 * `kvio-cli bench`: bandwidth sweeps per io backend: row size x index count, both directions
 * (backup: all layers in one call; load: one call per layer, as a serving engine does), each host
 * layout, against a baseline measured in the same run on the same bytes (cpu: memcpy-like bulk
 * copies between two buffers allocated like kvio's pools, the faster of one thread and one slice
 * per io thread; device backends: one contiguous kvio transfer, layer_first to layer_first over
 * all tokens). Prints a Markdown table; writes CSV, JSON and an SVG plot (GB/s against row size,
 * one line per backend and layout, baselines dashed). This class holds the options; BenchRunner
 * runs the points, BenchBaseline measures the baselines and BenchResult renders the results.
 */
package io.kvio.cli;

import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.Kvio;
import io.kvio.KvioExecutor;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import org.bytedeco.javacpp.Loader;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
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
                    + " cpu: a memcpy (bulk copies between two buffers allocated like kvio's pools:"
                    + " the faster of"
                    + " one thread and as many threads as the kvio executor has);"
                    + " device backends: one contiguous kvio transfer. Unavailable backends are"
                    + " listed with the cause.",
            ""
        },
        footer = {
            "",
            "Example:",
            "  java -jar kvio-cli.jar bench --quick --csv bench.csv --json bench.json --svg bench.svg",
            "",
            "Exit status: 0 done, 2 bad arguments, 3 kvio error."
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

    @Spec CommandSpec spec;

    @Option(
            names = "--backend",
            paramLabel = "NAME[,NAME...]",
            split = ",",
            converter = Converters.Backend.class,
            description =
                    "io backends: cpu, kernel, direct, kernel_ascend, auto, staged [all available but"
                            + " auto, which runs one of the others per transfer]")
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
            paramLabel = "LAYOUT[,LAYOUT...]",
            split = ",",
            converter = Converters.Layout.class,
            description = "host layouts [all four]")
    List<KvLayout> layouts;

    @Option(
            names = "--rows",
            paramLabel = "BYTES[,BYTES...]",
            split = ",",
            description = "row sizes in bytes (all heads of one token, one layer) [by mode]")
    List<Long> rows;

    @Option(
            names = "--tokens",
            paramLabel = "N[,N...]",
            split = ",",
            description = "index counts: tokens per transfer, multiples of 16 [by mode]")
    List<Long> tokens;

    @Option(names = "--layers", paramLabel = "N", description = "model layers [${DEFAULT-VALUE}]")
    long layers = 4;

    @Option(
            names = "--max-bytes",
            paramLabel = "MiB",
            description = "skip points that move more than this per transfer [${DEFAULT-VALUE}]")
    long maxMiB = 128;

    @Option(
            names = "--repeats",
            paramLabel = "N",
            description = "timed runs per point, after a warm-up; GB/s from the best [by mode]")
    int repeats;

    @Option(names = "--threads", paramLabel = "N", description = "io threads [one per core]")
    int threads;

    @Option(names = "--csv", paramLabel = "FILE", description = "write the results as CSV")
    Path csv;

    @Option(names = "--json", paramLabel = "FILE", description = "write the results as JSON")
    Path json;

    @Option(
            names = "--svg",
            paramLabel = "FILE",
            description =
                    "write an SVG plot: GB/s against row size, one line per backend and layout")
    Path svg;

    @Option(names = "--seed", paramLabel = "N", description = "seed of the page order [42]")
    long seed = 42;

    @Option(names = "--quiet", description = "no progress on stderr")
    boolean quiet;

    @Override
    public Integer call() throws IOException {
        boolean full = mode != null && mode.full;
        PrintWriter out = Main.out(spec);
        PrintWriter err = Main.err(spec);
        List<Long> rowList = rowSizes(full);
        List<Long> tokenList = tokenCounts(full);
        Converters.positive(spec, "--layers", layers);
        Converters.positive(spec, "--max-bytes", maxMiB);
        int reps = repeats > 0 ? repeats : DEFAULT_RUNS;
        List<KvLayout> layoutList = layouts != null ? layouts : Arrays.asList(KvLayout.values());
        List<IoBackend> selected = backends != null ? backends : Converters.concreteBackends();

        BenchResult result =
                new BenchResult(Kvio.version(), Loader.getPlatform(), full ? "full" : "quick");
        result.layers = layers;
        result.pageSize = PAGE_SIZE;
        result.repeats = reps;
        BenchRunner.Plan plan =
                new BenchRunner.Plan(
                        rowList, tokenList, layoutList, layers, maxMiB, reps, seed, threads);
        new BenchRunner(plan, result, new Progress(err, quiet)).run(selected);
        result.printMarkdown(out);
        if (selected.contains(IoBackend.AUTO)) {
            try (KvioExecutor auto = KvioExecutor.create(IoBackend.AUTO, 1)) {
                out.println(RoundTripReport.autoCalibrationLine(auto.autoCalibration()));
            }
        }
        ReportFiles.writeIfGiven(csv, result::writeCsv, err);
        ReportFiles.writeIfGiven(json, result::writeJson, err);
        ReportFiles.writeIfGiven(svg, result::writeSvg, err);
        return Main.EXIT_OK;
    }

    /** --rows, each at least 1, or the mode's row sizes. */
    private List<Long> rowSizes(boolean full) {
        List<Long> rowList =
                rows != null
                        ? rows
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
                        ? tokens
                        : full ? List.of(16L, 64L, 256L, 1024L) : List.of(64L, 256L);
        for (long t : tokenList) {
            if (t < PAGE_SIZE || t % PAGE_SIZE != 0) {
                throw new picocli.CommandLine.ParameterException(
                        spec.commandLine(),
                        "--tokens "
                                + t
                                + " is not a multiple of the page size "
                                + PAGE_SIZE
                                + "; e.g. --tokens 64,256");
            }
        }
        return tokenList;
    }
}
