/*
 * kvio command-line tool: the --require option that matrix and bench share.
 */
package io.kvio.cli;

import io.kvio.IoBackend;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The {@code --require} option (a picocli mixin of matrix and bench): io backends whose absence
 * fails the run with exit 4, so that a GPU runner with a broken driver does not pass by skipping
 * them.
 */
final class RequiredBackends {
    @Option(
            names = "--require",
            paramLabel = "NAME",
            split = ",",
            arity = "1",
            converter = Converters.Backend.class,
            description =
                    "exit 4 when one of these backends is unavailable (so a GPU runner with a"
                            + " broken driver does not pass by skipping them); auto counts as"
                            + " unavailable where it would run on cpu: --require auto asks for"
                            + " a usable CUDA GPU or Ascend NPU")
    List<IoBackend> backends = new ArrayList<>();

    /**
     * Says at the start of a run which required backends are unavailable (the run goes on, so that
     * its report shows what did run, and then exits 4 by {@link #status}).
     */
    void announce(PrintWriter err) {
        for (IoBackend b : backends) {
            String line = unavailable(b);
            if (line != null) {
                err.println(line + "; the run goes on for its report, then exits 4");
            }
        }
        err.flush();
    }

    /**
     * 4 when a backend of {@code required} is unavailable (one line on err with the cause), else 0.
     */
    static int status(List<IoBackend> required, PrintWriter err) {
        for (IoBackend b : required) {
            String line = unavailable(b);
            if (line != null) {
                err.println(line);
                return Main.EXIT_REQUIRED_UNAVAILABLE;
            }
        }
        return Main.EXIT_OK;
    }

    /**
     * "kvio: io backend 'X' is required (--require) but unavailable: cause", or null. auto is
     * always available (it falls back to cpu), so requiring it asks for more: that it runs on an
     * accelerator, a CUDA GPU or an Ascend NPU; where it would run on cpu the line gives both
     * causes.
     */
    static String unavailable(IoBackend b) {
        if (b == IoBackend.AUTO) {
            if (b.isDevice()) {
                return null;
            }
            return "kvio: io backend 'auto' is required (--require) but runs on cpu here:"
                    + " --require auto asks for a usable accelerator, and there is none (CUDA: "
                    + IoBackend.KERNEL.unavailabilityCause()
                    + "; Ascend: "
                    + IoBackend.KERNEL_ASCEND.unavailabilityCause()
                    + ")";
        }
        String cause = b.unavailabilityCause();
        return cause == null
                ? null
                : "kvio: io backend '"
                        + b.userName()
                        + "' is required (--require) but unavailable: "
                        + cause;
    }
}
