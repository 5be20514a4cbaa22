/*
 * `kvio-cli roundtrip` (also what runs with no command): for each host layout it backs up a random
 * set of whole device pages plus a token-granular tail into a host pool, clears a second device
 * region, reloads it layer by layer into different device pages, and checks every moved byte
 * against a deterministic pattern, with expected positions from the oracle (io.kvio.oracle: the
 * documented layout shapes, not kvio). Prints bytes moved, backup/load GB/s and verify OK/FAIL per
 * layout. Exit codes: 0 all verified, 1 a mismatch, 2 bad arguments, 3 kvio error, 4 the io
 * backend chosen with --backend is unavailable here (nothing ran; as bench). This class
 * holds the options; the run is RoundTrip, its workload RoundTripPlan, its checks
 * RoundTripVerifier and its output RoundTripReport.
 */
package io.kvio.cli;

import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvioException;
import io.kvio.KvioUnavailableException;
import io.kvio.PoolKind;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

@Command(
        name = "roundtrip",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Backs up KV pages from a layer_first device pool into a host pool of each layout,"
                    + " reloads them layer by layer into other device pages, and verifies every"
                    + " moved byte. With a GPU (io backend auto, kernel, direct or staged) or an"
                    + " Ascend NPU (auto without a GPU, kernel_ascend) the device pool is device"
                    + " memory and the host pools pinned memory, and each layout's GB/s is printed"
                    + " next to the ceiling: one contiguous copy of the same bytes, measured in the"
                    + " same run. This is what runs when no command is given.",
            ""
        },
        footer = {
            "",
            "Exit status: 0 all layouts verified, 1 a mismatch, 2 bad arguments, 3 kvio error"
                    + " (or the JVM out of memory), 4 the io backend chosen with --backend is"
                    + " unavailable here (the message gives the cause; nothing ran)."
        })
public final class RoundTripCommand implements Callable<Integer> {
    /** The most tokens per page (RoundTripPlan keeps two pages' slots in a Java array). */
    static final long MAX_PAGE_SIZE = 1L << 20;

    /** The most bytes a kvio pool holds (native/src/core/layout.cpp). */
    static final long MAX_POOL_BYTES = 1L << 62;

    @Spec CommandSpec spec;

    @Option(
            names = "--tokens",
            paramLabel = "N",
            description =
                    "tokens moved per layout: whole pages, then the rest slot by slot (with no"
                            + " rest and 2 pages or more, the last page's worth)"
                            + " [${DEFAULT-VALUE}]")
    long tokens = 8192;

    @Option(
            names = "--layers",
            paramLabel = "N",
            description = "model layers, 1 to 1048576 [${DEFAULT-VALUE}]")
    long layers = 32;

    /** Null when not given: the kind's default. */
    @Option(
            names = "--heads",
            paramLabel = "N",
            description = "KV heads per token, at least 1 [8; mla: 1]")
    Long heads;

    @Option(
            names = "--head-dim",
            paramLabel = "N",
            description = "elements per head, at least 1 [128; mla: 576]")
    Long headDim;

    @Option(
            names = "--dtype-bytes",
            paramLabel = "N",
            description = "bytes per element (bf16: 2) [${DEFAULT-VALUE}]")
    long dtypeBytes = 2;

    @Option(
            names = "--page-size",
            paramLabel = "N",
            description = "tokens per page, 1 to 1048576 [${DEFAULT-VALUE}]")
    long pageSize = 64;

    @Option(
            names = "--threads",
            paramLabel = "N",
            description =
                    "io threads of cpu (and auto without a GPU): 1 to 1024, or 0 for one per"
                            + " core (the default); the device backends have none")
    int threads = 0;

    @Option(
            names = "--layouts",
            paramLabel = "LAYOUT",
            split = ",",
            arity = "1",
            converter = Converters.Layout.class,
            description =
                    "host layouts: layer_first, page_first, page_first_direct, page_head [all that"
                            + " fit the kind: 4 for mha, 3 for mla]")
    List<KvLayout> layouts;

    @Option(
            names = "--kind",
            paramLabel = "mha|mla",
            converter = Converters.Kind.class,
            description = "pool kind [mha]")
    PoolKind kind = PoolKind.MHA;

    @Option(
            names = "--backend",
            paramLabel = "BACKEND",
            converter = Converters.Backend.class,
            description =
                    "io backend: auto (kernel, direct or staged per transfer on CUDA device 0;"
                            + " without one, kernel_ascend on NPU 0 where an Ascend NPU is usable,"
                            + " else cpu), cpu, kernel, direct, kernel_ascend, staged [auto]")
    IoBackend backend = IoBackend.AUTO;

    @Option(
            names = "--seed",
            paramLabel = "N",
            description = "seed of the page choice and data pattern [${DEFAULT-VALUE}]")
    long seed = 42;

    @Override
    public Integer call() {
        RoundTripOptions o = options();
        PrintWriter out = Main.out(spec);
        PrintWriter err = Main.err(spec);
        try {
            o.checkSupport();
        } catch (KvioUnavailableException e) {
            // the support check asks for the backend last, after every argument passed
            String cause = o.backend.unavailabilityCause();
            if (cause != null) {
                err.println(unavailable(o.backend, cause));
                err.flush();
                return Main.EXIT_REQUIRED_UNAVAILABLE;
            }
            throw new ParameterException(spec.commandLine(), e.getMessage());
        } catch (KvioException e) { // a usage error as any other: the message, then the help hint
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        return new RoundTrip(o, out, err).run();
    }

    /**
     * "kvio: io backend 'kernel' (--backend) is unavailable here: cause; available here: cpu,
     * auto": nothing can run, as for bench when no backend of its sweep is available (exit 4).
     */
    static String unavailable(IoBackend backend, String cause) {
        List<String> available = new ArrayList<>();
        for (IoBackend b : IoBackend.values()) {
            if (b.isAvailable()) {
                available.add(b.userName());
            }
        }
        return "kvio: io backend '"
                + backend.userName()
                + "' (--backend) is unavailable here: "
                + cause
                + "; available here: "
                + String.join(", ", available)
                + " (auto, the default, runs on what this machine has)";
    }

    /** The options range-checked, with the kind's defaults filled in. */
    private RoundTripOptions options() {
        RoundTripOptions o = new RoundTripOptions();
        o.tokens = Converters.positive(spec, "--tokens", tokens);
        o.layers = Converters.positive(spec, "--layers", layers);
        Converters.inRange(spec, "--layers", layers, BenchCommand.MAX_LAYERS, " (kvio's limit)");
        o.dtypeBytes = Converters.positive(spec, "--dtype-bytes", dtypeBytes);
        o.pageSize = Converters.positive(spec, "--page-size", pageSize);
        if (o.pageSize > MAX_PAGE_SIZE) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--page-size "
                            + o.pageSize
                            + " is too large; use at most "
                            + MAX_PAGE_SIZE
                            + " tokens per page");
        }
        o.threads = Converters.threads(spec, "--threads", threads);
        o.seed = seed;
        o.kind = kind;
        o.backend = backend;
        o.heads =
                heads == null
                        ? (kind == PoolKind.MHA ? 8 : 1)
                        : Converters.positive(spec, "--heads", heads);
        o.headDim =
                headDim == null
                        ? (kind == PoolKind.MHA ? 128 : 576)
                        : Converters.positive(spec, "--head-dim", headDim);
        o.layouts = layouts == null ? layoutsOf(kind) : Converters.distinct(layouts);
        if (o.tokens > (1L << 28)) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--tokens " + o.tokens + " is too many for one run; use at most " + (1L << 28));
        }
        checkSizes(o);
        checkHeap(o, Runtime.getRuntime());
        return o;
    }

    /**
     * The Java heap a run takes, estimated before anything is allocated: RoundTripPlan's slot lists
     * (three arrays of one long per token, and page permutations of up to four longs per whole
     * page) and RoundTripVerifier's bit sets (one bit per host token, per device token and per
     * device page, each counted twice: a BitSet may grow to twice its bits), plus 16 MiB for the
     * rest.
     */
    static long heapBytes(long tokens, long pageSize) {
        long pages = tokens / pageSize + 4;
        long plan = 3 * 8 * tokens + 4 * 8 * pages;
        long hostTokens = tokens + pageSize;
        long deviceTokens = 2 * tokens + 4 * pageSize;
        long bits = hostTokens + deviceTokens + 2 * pages; // 2 * pages: the device pages
        long verifier = 2 * (bits / 8 + 3 * 8);
        return plan + verifier + (16L << 20);
    }

    /** --tokens within what this JVM's heap can hold; else a usage error that says what to do. */
    private void checkHeap(RoundTripOptions o, Runtime runtime) {
        long needed = heapBytes(o.tokens, o.pageSize);
        long free = runtime.maxMemory() - (runtime.totalMemory() - runtime.freeMemory());
        if (needed > free) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--tokens "
                            + o.tokens
                            + " (--page-size "
                            + o.pageSize
                            + ") needs about "
                            + (needed >> 20)
                            + " MiB of Java heap for its slot lists and checks, more than the "
                            + (free >> 20)
                            + " MiB this JVM has free (of -Xmx "
                            + (runtime.maxMemory() >> 20)
                            + " MiB); lower --tokens or give the JVM more heap, e.g. java -Xmx"
                            + ((needed >> 30) + 2)
                            + "g -jar kvio-cli.jar roundtrip ...");
        }
    }

    /**
     * The device pool's size (RoundTripPlan: 2 x the whole pages + 4 pages, every layer and
     * component) within kvio's 2^62 bytes, and no product on the way to it past 64 bits; else a
     * usage error that names the options.
     */
    private void checkSizes(RoundTripOptions o) {
        String row =
                "--heads "
                        + o.heads
                        + " x --head-dim "
                        + o.headDim
                        + " x --dtype-bytes "
                        + o.dtypeBytes;
        long rowBytes;
        try {
            rowBytes = Math.multiplyExact(o.heads, Math.multiplyExact(o.headDim, o.dtypeBytes));
        } catch (ArithmeticException e) {
            rowBytes = Long.MAX_VALUE;
        }
        if (rowBytes > MAX_POOL_BYTES) {
            throw new ParameterException(
                    spec.commandLine(),
                    "a token's row, "
                            + row
                            + " bytes, is too large: a pool holds at most 2^62 bytes");
        }
        long pages = 2 * (o.tokens / o.pageSize) + 4;
        long poolBytes;
        try {
            poolBytes =
                    Math.multiplyExact(
                            Math.multiplyExact(
                                    Math.multiplyExact(
                                            Math.multiplyExact(pages, o.pageSize), rowBytes),
                                    o.layers),
                            o.kind.components());
        } catch (ArithmeticException e) {
            poolBytes = Long.MAX_VALUE;
        }
        if (poolBytes > MAX_POOL_BYTES) {
            throw new ParameterException(
                    spec.commandLine(),
                    "the device pool would be too large: "
                            + pages
                            + " pages of --page-size "
                            + o.pageSize
                            + " tokens x --layers "
                            + o.layers
                            + " x "
                            + o.kind.components()
                            + " components x rows of "
                            + rowBytes
                            + " bytes is more than 2^62 bytes; lower --tokens, --layers,"
                            + " --page-size, --heads, --head-dim or --dtype-bytes");
        }
    }

    /** The host layouts that fit a pool kind, in declaration order. */
    private static List<KvLayout> layoutsOf(PoolKind kind) {
        List<KvLayout> out = new ArrayList<>();
        for (KvLayout l : KvLayout.values()) {
            if (l.fits(kind)) {
                out.add(l);
            }
        }
        return out;
    }
}
