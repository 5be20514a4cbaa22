/*
 * `kvio-cli plot`: draws kvio_cuda_bench's row sweep (the TSV it writes; bench.tsv of
 * scripts/gpu-check.sh) as an SVG and prints the plotted points as a Markdown table, so a GPU
 * run's figures go into docs/benchmarks.md as the CPU sweep's do. Needs no GPU and loads no
 * native library: it reads a file.
 */
package io.kvio.cli;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

@Command(
        name = "plot",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Plots kvio_cuda_bench's row sweep (its TSV) as SVG: GB/s against row size, backup"
                    + " (d2h) and load (h2d), at the largest index count measured per row size;"
                    + " one line per kvio path (kernel at each CTA budget, direct, staged, auto),"
                    + " the reference kernel and the ceiling (one contiguous copy) dashed. Prints"
                    + " the plotted points as a Markdown table.",
            ""
        },
        footer = {
            "",
            "Example (after scripts/gpu-check.sh run):",
            "  java -jar kvio-cli.jar plot results/bench.tsv \\",
            "      --svg docs/img/bench-cuda.svg --title \"H200, driver 570.124\"",
            "",
            "Exit status: 0 done, 2 bad arguments, an unreadable TSV or an SVG path that cannot"
                    + " be written (checked first), 3 the SVG could not be written after all."
        })
public final class PlotCommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(
            index = "0",
            paramLabel = "TSV",
            description = "kvio_cuda_bench's results (--out FILE; gpu-check: bench.tsv)")
    Path tsv;

    @Option(
            names = "--svg",
            converter = Converters.OutputFile.class,
            paramLabel = "FILE",
            required = true,
            description = "the SVG file to write")
    Path svg;

    @Option(
            names = "--title",
            paramLabel = "TEXT",
            description = "added to the plot's title: the machine, driver and date")
    String title;

    @Override
    public Integer call() {
        ReportFiles.checkOutputs(spec, Map.of("--svg", svg));
        ReportFiles.checkNotInput(spec, "--svg", svg, "the TSV file", tsv);
        CudaBenchPlot plot = read();
        plot.printMarkdown(Main.out(spec));
        boolean written =
                ReportFiles.writeIfGiven(
                        "--svg",
                        svg,
                        file ->
                                Files.writeString(
                                        file,
                                        SvgPlot.render(plot.figure(title)),
                                        StandardCharsets.UTF_8),
                        Main.err(spec));
        return ReportFiles.exitStatus(Main.EXIT_OK, written);
    }

    /** The TSV parsed; a file that cannot be read or parsed is a usage error naming it. */
    private CudaBenchPlot read() {
        if (Files.isDirectory(tsv)) {
            throw new ParameterException(spec.commandLine(), tsv + " is a folder, not a TSV file");
        }
        try {
            return CudaBenchPlot.read(tsv);
        } catch (NoSuchFileException e) {
            throw new ParameterException(spec.commandLine(), "no such file: " + tsv);
        } catch (AccessDeniedException e) {
            throw new ParameterException(
                    spec.commandLine(), "cannot read " + tsv + ": permission denied");
        } catch (CharacterCodingException e) {
            throw new ParameterException(
                    spec.commandLine(),
                    "cannot read " + tsv + ": not UTF-8 text (not a kvio_cuda_bench TSV)");
        } catch (IOException e) {
            throw new ParameterException(
                    spec.commandLine(), "cannot read " + tsv + ": " + e.getMessage());
        } catch (UncheckedIOException e) {
            throw new ParameterException(
                    spec.commandLine(), "cannot read " + tsv + ": " + e.getCause().getMessage());
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }
}
