/*
 * `kvio-cli bench`: bandwidth sweeps per io backend: row size x index count, both directions
 * (backup: all layers in one call; load: one call per layer, as a serving engine does), each host
 * layout, against a baseline measured in the same run on the same bytes (cpu: memcpy-like bulk
 * copies between two buffers allocated like kvio's pools, the faster of one thread and one slice
 * per io thread; device backends: one contiguous kvio transfer, layer_first to layer_first over
 * all tokens). Prints a Markdown table; writes CSV, JSON and an SVG plot (GB/s against row size,
 * one line per backend and layout, baselines dashed).
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.Kvio;
import io.kvio.KvioExecutor;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import io.kvio.oracle.Indices;
import io.kvio.oracle.Oracle;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
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

    @Spec CommandSpec spec;

    @Option(
            names = "--backend",
            paramLabel = "NAME[,NAME...]",
            split = ",",
            converter = Converters.Backend.class,
            description = "io backends: cpu, kernel, direct, kernel_ascend [all available]")
    List<IoBackend> backends;

    static final class Mode {
        @Option(
                names = "--quick",
                description =
                        "rows 64 B to 64 KiB in steps of 4x, 64 and 256 tokens, 5 runs"
                                + " [default]")
        boolean quick;

        @Option(
                names = "--full",
                description = "rows 64 B to 64 KiB in steps of 2x, 16 to 1024 tokens, 7 runs")
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
        List<Long> rowList =
                rows != null
                        ? rows
                        : full
                                ? List.of(
                                        64L, 128L, 256L, 512L, 1024L, 2048L, 4096L, 8192L, 16384L,
                                        32768L, 65536L)
                                : List.of(64L, 256L, 1024L, 4096L, 16384L, 65536L);
        List<Long> tokenList =
                tokens != null
                        ? tokens
                        : full ? List.of(16L, 64L, 256L, 1024L) : List.of(64L, 256L);
        for (long r : rowList) {
            Converters.positive(spec, "--rows", r);
        }
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
        Converters.positive(spec, "--layers", layers);
        Converters.positive(spec, "--max-bytes", maxMiB);
        int reps = repeats > 0 ? repeats : full ? 7 : 5;
        List<KvLayout> layoutList = layouts != null ? layouts : Arrays.asList(KvLayout.values());
        List<IoBackend> selected = backends != null ? backends : Arrays.asList(IoBackend.values());

        BenchResult result =
                new BenchResult(Kvio.version(), Loader.getPlatform(), full ? "full" : "quick");
        result.layers = layers;
        result.pageSize = PAGE_SIZE;
        result.repeats = reps;
        Progress progress = new Progress(err, quiet);
        long totalPoints = (long) rowList.size() * tokenList.size() * layoutList.size();
        try {
            for (IoBackend b : selected) {
                String cause = b.unavailabilityCause();
                result.backends.add(new MatrixReport.Backend(b.userName(), cause));
                if (cause != null) {
                    continue;
                }
                try (KvioExecutor executor = KvioExecutor.create(b, threads)) {
                    result.threads = executor.threads();
                    result.baselines.put(b.userName(), baselineName(b, executor.threads()));
                    long done = 0;
                    for (long row : rowList) {
                        for (long count : tokenList) {
                            long moved = count * layers * 2 * row;
                            if (moved > maxMiB << 20) {
                                done += layoutList.size();
                                continue;
                            }
                            done =
                                    runPoint(
                                            b,
                                            executor,
                                            row,
                                            count,
                                            layoutList,
                                            reps,
                                            result,
                                            progress,
                                            done,
                                            totalPoints);
                        }
                    }
                }
            }
        } finally {
            progress.clear();
        }
        result.printMarkdown(out);
        if (csv != null) {
            result.writeCsv(csv);
            err.println("kvio: wrote " + csv);
        }
        if (json != null) {
            result.writeJson(json);
            err.println("kvio: wrote " + json);
        }
        if (svg != null) {
            result.writeSvg(svg);
            err.println("kvio: wrote " + svg);
        }
        return Main.EXIT_OK;
    }

    static String baselineName(IoBackend b, int threads) {
        return b == IoBackend.CPU
                ? "memcpy (bulk copies between two buffers allocated like kvio's pools"
                        + (threads == 1
                                ? ", 1 thread)"
                                : ": the faster of 1 thread and " + threads + " threads)")
                : "one contiguous kvio transfer (layer_first to layer_first, all tokens)";
    }

    /** (heads, head bytes) of a row: heads of at least 64 bytes, at most 8 heads. */
    static long[] heads(long row) {
        long heads = Math.max(1, Math.min(8, row / 64));
        while (row % heads != 0) {
            heads--;
        }
        return new long[] {heads, row / heads};
    }

    private long runPoint(
            IoBackend backend,
            KvioExecutor executor,
            long row,
            long count,
            List<KvLayout> layoutList,
            int reps,
            BenchResult result,
            Progress progress,
            long done,
            long total) {
        long[] hg = heads(row);
        long pages = count / PAGE_SIZE;
        PoolSpec deviceSpec =
                PoolSpec.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(layers)
                        .pages(2 * pages)
                        .pageSize(PAGE_SIZE)
                        .heads(hg[0])
                        .headBytes(hg[1])
                        .build();
        Random rnd = new Random(seed ^ row * 31 ^ count);
        long[] devSlots = Indices.slots(rnd, 2 * pages, PAGE_SIZE, (int) pages, 0);
        long[] hostSlots = Indices.slots(rnd, pages, PAGE_SIZE, (int) pages, 0);
        long bytes = count * layers * 2 * row;
        try (DeviceKvPool device = DeviceKvPool.allocate(deviceSpec, backend);
                TokenIndices d = TokenIndices.of(devSlots);
                TokenIndices h = TokenIndices.of(hostSlots)) {
            if (backend == IoBackend.CPU) {
                fill(device.buffer());
            }
            for (Direction dir : Direction.values()) {
                double[] base = baseline(backend, executor, deviceSpec, count, dir, reps);
                for (KvLayout layout : layoutList) {
                    progress.update(
                            String.format(
                                    Locale.ROOT,
                                    "bench: %s %s %s row %d B, %d tokens",
                                    backend.userName(),
                                    layout.userName(),
                                    dir.userName,
                                    row,
                                    count),
                            done + 1,
                            total);
                    try (HostKvPool host =
                            HostKvPool.builder()
                                    .forDevice(device)
                                    .layout(layout)
                                    .pages(pages)
                                    .executor(executor)
                                    .build()) {
                        fill(host.buffer());
                        double[] seconds = time(reps, () -> run(dir, host, device, h, d));
                        result.points.add(
                                new BenchResult.Point(
                                        backend.userName(),
                                        layout.userName(),
                                        dir,
                                        row,
                                        hg[0],
                                        hg[1],
                                        count,
                                        layers,
                                        bytes,
                                        seconds[0],
                                        seconds[1],
                                        base[0],
                                        base[1]));
                    }
                    if (dir == Direction.LOAD) {
                        done++;
                    }
                }
            }
        }
        return done;
    }

    private void run(
            Direction dir, HostKvPool host, DeviceKvPool device, TokenIndices h, TokenIndices d) {
        if (dir == Direction.BACKUP) {
            try (Transfer t = host.backup(device).deviceIndices(d).hostIndices(h).submit()) {
                t.await();
            }
            return;
        }
        Transfer[] ts = new Transfer[(int) layers];
        for (int l = 0; l < layers; l++) {
            ts[l] = host.load(device, l).hostIndices(h).deviceIndices(d).submit();
        }
        for (Transfer t : ts) {
            t.await();
            t.close();
        }
    }

    private static final byte[] CHUNK = Oracle.pattern(1 << 20, 0x6b76696fL);

    /**
     * Writes data into every page of a buffer before timing: untouched memory would read as the
     * kernel's shared zero page, which is faster than real memory.
     */
    static void fill(ByteBuffer buffer) {
        ByteBuffer b = buffer.duplicate();
        b.clear();
        while (b.remaining() > 0) {
            b.put(CHUNK, 0, Math.min(CHUNK.length, b.remaining()));
        }
    }

    /** {median, best} seconds of reps timed runs after one warm-up run. */
    private static double[] time(int reps, Runnable r) {
        r.run();
        double[] s = new double[reps];
        for (int i = 0; i < reps; i++) {
            long t0 = System.nanoTime();
            r.run();
            s[i] = (System.nanoTime() - t0) / 1e9;
        }
        Arrays.sort(s);
        return new double[] {s[reps / 2], s[0]};
    }

    private static void runAll(ExecutorService pool, List<Callable<Void>> tasks) {
        try {
            for (Future<Void> f : pool.invokeAll(tasks)) {
                f.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    private final Map<String, double[]> baselineCache = new HashMap<>();

    /** {median, best} seconds of the baseline copy of the same bytes. */
    private double[] baseline(
            IoBackend backend,
            KvioExecutor executor,
            PoolSpec deviceSpec,
            long count,
            Direction dir,
            int reps) {
        long bytes = count * layers * 2 * deviceSpec.rowBytes();
        String key =
                backend.userName()
                        + " "
                        + (backend == IoBackend.CPU ? "" : dir.userName + " ")
                        + bytes;
        double[] cached = baselineCache.get(key);
        if (cached != null) {
            return cached;
        }
        double[] result;
        if (backend == IoBackend.CPU) {
            // The same bytes between two buffers kvio allocates the way it allocates pools (2 MiB
            // aligned, transparent huge pages), copied on the calling thread and split over as
            // many threads as kvio's executor has (one slice each); the faster of the two is the
            // baseline (one thread wins on small copies, where handing work to threads costs more
            // than it saves).
            PoolSpec flat =
                    PoolSpec.builder()
                            .kind(PoolKind.MLA)
                            .layout(KvLayout.LAYER_FIRST)
                            .layers(1)
                            .pages(1)
                            .pageSize(1)
                            .heads(1)
                            .headBytes(bytes)
                            .build();
            try (DeviceKvPool srcPool = DeviceKvPool.allocate(flat, IoBackend.CPU);
                    DeviceKvPool dstPool = DeviceKvPool.allocate(flat, IoBackend.CPU)) {
                ByteBuffer src = srcPool.buffer();
                ByteBuffer dst = dstPool.buffer();
                fill(src);
                fill(dst);
                result =
                        time(
                                reps,
                                () -> {
                                    src.clear();
                                    dst.clear();
                                    dst.put(src);
                                });
                int n = executor.threads();
                if (n > 1) {
                    List<Callable<Void>> slices = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        int from = (int) (bytes * i / n);
                        int to = (int) (bytes * (i + 1) / n);
                        ByteBuffer in = src.slice(from, to - from);
                        ByteBuffer out = dst.slice(from, to - from);
                        slices.add(
                                () -> {
                                    in.clear();
                                    out.clear();
                                    out.put(in);
                                    return null;
                                });
                    }
                    ExecutorService pool = Executors.newFixedThreadPool(n);
                    try {
                        double[] split = time(reps, () -> runAll(pool, slices));
                        if (split[1] < result[1]) {
                            result = split;
                        }
                    } finally {
                        pool.shutdownNow();
                    }
                }
            }
        } else {
            // both pools hold exactly `count` tokens, so all tokens x all layers is one contiguous
            // run per component
            PoolSpec exact = deviceSpec.toBuilder().pages(count / PAGE_SIZE).build();
            long[] all = new long[(int) count];
            for (int i = 0; i < all.length; i++) {
                all[i] = i;
            }
            try (DeviceKvPool dev = DeviceKvPool.allocate(exact, backend);
                    HostKvPool host =
                            HostKvPool.builder()
                                    .forDevice(dev)
                                    .layout(KvLayout.LAYER_FIRST)
                                    .executor(executor)
                                    .build();
                    TokenIndices a = TokenIndices.of(all)) {
                boolean backup = dir == Direction.BACKUP;
                result =
                        time(
                                reps,
                                () -> {
                                    try (Transfer t =
                                            Kvio.transfer(
                                                    executor,
                                                    backup ? dev : host,
                                                    backup ? host : dev,
                                                    a,
                                                    a,
                                                    0,
                                                    0,
                                                    layers)) {
                                        t.await();
                                    }
                                });
            }
        }
        baselineCache.put(key, result);
        return result;
    }
}
