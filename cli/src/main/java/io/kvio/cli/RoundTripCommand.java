/*
 * `kvio-cli roundtrip` (also what runs with no command): for each host layout it backs up a random
 * set of whole device pages plus a token-granular tail into a host pool, clears a second device
 * region, reloads it layer by layer into different device pages, and checks every moved byte
 * against a deterministic pattern, with expected positions from the oracle (io.kvio.oracle: the
 * documented layout shapes, not kvio). Prints bytes moved, backup/load GB/s and verify OK/FAIL per
 * layout. Exit codes: 0 all verified, 1 a mismatch, 2 bad arguments, 3 kvio error.
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvPool;
import io.kvio.Kvio;
import io.kvio.KvioException;
import io.kvio.KvioExecutor;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Indices;
import io.kvio.oracle.RowPattern;
import io.kvio.oracle.Shape;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
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
            "Backs up KV pages from a layer_first device pool (cpu io backend) into a host pool of"
                    + " each layout, reloads them layer by layer into other device pages, and"
                    + " verifies every moved byte. This is what runs when no command is given.",
            ""
        },
        footer = {
            "",
            "Exit status: 0 all layouts verified, 1 a mismatch, 2 bad arguments, 3 kvio error."
        })
public final class RoundTripCommand implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(
            names = "--tokens",
            paramLabel = "N",
            description =
                    "tokens moved per layout: whole pages plus a token-granular tail [${DEFAULT-VALUE}]")
    long tokens = 8192;

    @Option(names = "--layers", paramLabel = "N", description = "model layers [${DEFAULT-VALUE}]")
    long layers = 32;

    @Option(names = "--heads", paramLabel = "N", description = "KV heads per token [8; mla: 1]")
    long heads = -1;

    @Option(
            names = "--head-dim",
            paramLabel = "N",
            description = "elements per head [128; mla: 576]")
    long headDim = -1;

    @Option(
            names = "--dtype-bytes",
            paramLabel = "N",
            description = "bytes per element (bf16: 2) [${DEFAULT-VALUE}]")
    long dtypeBytes = 2;

    @Option(
            names = "--page-size",
            paramLabel = "N",
            description = "tokens per page [${DEFAULT-VALUE}]")
    long pageSize = 64;

    @Option(names = "--threads", paramLabel = "N", description = "io threads [one per core]")
    int threads = 0;

    @Option(
            names = "--layouts",
            paramLabel = "LAYOUT[,LAYOUT...]",
            split = ",",
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
            names = "--seed",
            paramLabel = "N",
            description = "seed of the page choice and data pattern [${DEFAULT-VALUE}]")
    long seed = 42;

    @Override
    public Integer call() {
        Options o = new Options();
        o.tokens = Converters.positive(spec, "--tokens", tokens);
        o.layers = Converters.positive(spec, "--layers", layers);
        o.dtypeBytes = Converters.positive(spec, "--dtype-bytes", dtypeBytes);
        o.pageSize = Converters.positive(spec, "--page-size", pageSize);
        o.threads = (int) Math.min(Converters.nonNegative(spec, "--threads", threads), 4096);
        o.seed = seed;
        o.kind = kind;
        o.heads =
                heads < 0
                        ? (kind == PoolKind.MHA ? 8 : 1)
                        : Converters.positive(spec, "--heads", heads);
        o.headDim =
                headDim < 0
                        ? (kind == PoolKind.MHA ? 128 : 576)
                        : Converters.positive(spec, "--head-dim", headDim);
        o.layouts = new ArrayList<>();
        if (layouts == null) {
            for (KvLayout l : KvLayout.values()) {
                if (l.fits(kind)) {
                    o.layouts.add(l);
                }
            }
        } else {
            for (KvLayout l : layouts) {
                if (!o.layouts.contains(l)) {
                    o.layouts.add(l);
                }
            }
        }
        if (o.tokens > (1L << 28)) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--tokens " + o.tokens + " is too many for one run; use at most " + (1L << 28));
        }
        PrintWriter out = Main.out(spec);
        PrintWriter err = Main.err(spec);
        try {
            o.checkSupport();
        } catch (KvioException e) {
            err.println("kvio: " + e.getMessage());
            return Main.EXIT_USAGE;
        }
        return new Benchmark(o, out, err).run();
    }

    /** Parsed command line. */
    static final class Options {
        long tokens = 8192;
        long layers = 32;
        long heads = -1;
        long headDim = -1;
        long dtypeBytes = 2;
        long pageSize = 64;
        int threads = 0;
        long seed = 42;
        PoolKind kind = PoolKind.MHA;
        List<KvLayout> layouts;

        long headBytes() {
            return headDim * dtypeBytes;
        }

        /** Fails with the native reason (and what to use instead) before anything is allocated. */
        void checkSupport() {
            for (KvLayout layout : layouts) {
                for (io.kvio.Granularity g : io.kvio.Granularity.values()) {
                    Kvio.checkSupport(
                            kind,
                            layout,
                            IoBackend.CPU,
                            g,
                            heads,
                            headBytes(),
                            pageSize,
                            layers,
                            layers,
                            0);
                }
            }
        }
    }

    /** A pool region seen as ByteBuffers of at most 1 GiB, little-endian. */
    static final class Region {
        private static final int SHIFT = 30;
        private static final long CHUNK = 1L << SHIFT;
        private static final long MASK = CHUNK - 1;
        private final ByteBuffer[] chunks;
        final long bytes;

        Region(KvPool pool, int region) {
            bytes = pool.regionBytes(region);
            int n = (int) ((bytes + CHUNK - 1) >>> SHIFT);
            chunks = new ByteBuffer[n];
            for (int i = 0; i < n; i++) {
                long off = (long) i << SHIFT;
                chunks[i] =
                        pool.slice(region, off, (int) Math.min(CHUNK, bytes - off))
                                .order(ByteOrder.LITTLE_ENDIAN);
            }
        }

        long getLong(long pos) {
            ByteBuffer c = chunks[(int) (pos >>> SHIFT)];
            int off = (int) (pos & MASK);
            if (off + 8 <= c.capacity()) {
                return c.getLong(off);
            }
            long v = 0;
            for (int b = 0; b < 8; b++) {
                v |= (getByte(pos + b) & 0xffL) << (8 * b);
            }
            return v;
        }

        void putLong(long pos, long value) {
            ByteBuffer c = chunks[(int) (pos >>> SHIFT)];
            int off = (int) (pos & MASK);
            if (off + 8 <= c.capacity()) {
                c.putLong(off, value);
                return;
            }
            for (int b = 0; b < 8; b++) {
                putByte(pos + b, (byte) (value >>> (8 * b)));
            }
        }

        byte getByte(long pos) {
            return chunks[(int) (pos >>> SHIFT)].get((int) (pos & MASK));
        }

        void putByte(long pos, byte value) {
            chunks[(int) (pos >>> SHIFT)].put((int) (pos & MASK), value);
        }

        void zero(long pos, long length, byte[] zeros) {
            while (length > 0) {
                ByteBuffer c = chunks[(int) (pos >>> SHIFT)];
                int off = (int) (pos & MASK);
                int n = (int) Math.min(Math.min(length, c.capacity() - off), zeros.length);
                c.put(off, zeros, 0, n);
                pos += n;
                length -= n;
            }
        }
    }

    /** One run over all requested layouts. */
    static final class Benchmark {
        private final Options o;
        private final PrintWriter out;
        private final Progress progress;
        private final long row;
        private final long hb;
        private final int components;
        // token plan: transfer i moves device token devSrc[i] -> host token host[i] -> device token
        // devDst[i]
        private final long[] devSrc;
        private final long[] host;
        private final long[] devDst;
        private final long hostPages;
        private final long devicePages;
        private final long fullPages;
        private final long tail;
        private final long[] clearedPages; // device pages zeroed before the load
        private final RowPattern pattern;
        private final Geometry devGeom; // the device pool: layer_first

        Benchmark(Options o, PrintWriter out, PrintWriter err) {
            this.o = o;
            this.out = out;
            this.progress = new Progress(err);
            this.row = o.heads * o.headBytes();
            this.hb = o.headBytes();
            this.components = o.kind.components();
            this.pattern = new RowPattern(o.seed);
            long ps = o.pageSize;
            long full = o.tokens / ps;
            long t = o.tokens % ps;
            if (t == 0
                    && full > 1) { // keep a token-granular tail: the last page's worth as scattered
                // slots
                full -= 1;
                t = ps;
            }
            fullPages = full;
            tail = t;
            hostPages = full + (t > 0 ? 1 : 0);
            // device pages: source pages, destination pages, and 2 + 2 pages for the scattered
            // tails
            devicePages = 2 * full + 4;
            SplittableRandom random = new SplittableRandom(o.seed);
            long[] order = Indices.permutation(random, devicePages);
            long[] hostOrder = Indices.permutation(random, full);
            int n = (int) o.tokens;
            devSrc = new long[n];
            host = new long[n];
            devDst = new long[n];
            int i = 0;
            for (int j = 0; j < full; j++) {
                long src = order[j];
                long dst = order[(int) full + j];
                for (long s = 0; s < ps; s++, i++) {
                    devSrc[i] = src * ps + s;
                    host[i] = hostOrder[j] * ps + s;
                    devDst[i] = dst * ps + s;
                }
            }
            long[] srcTailPages = {order[(int) (2 * full)], order[(int) (2 * full + 1)]};
            long[] dstTailPages = {order[(int) (2 * full + 2)], order[(int) (2 * full + 3)]};
            long[] srcTail = Indices.scatteredSlots(random, srcTailPages, ps, t);
            long[] dstTail = Indices.scatteredSlots(random, dstTailPages, ps, t);
            for (int k = 0; k < t; k++, i++) {
                devSrc[i] = srcTail[k];
                host[i] = full * ps + k;
                devDst[i] = dstTail[k];
            }
            clearedPages = new long[(int) full + 2];
            System.arraycopy(order, (int) full, clearedPages, 0, (int) full);
            clearedPages[(int) full] = dstTailPages[0];
            clearedPages[(int) full + 1] = dstTailPages[1];
            devGeom = geometry(Shape.LAYER_FIRST, devicePages);
        }

        /** The oracle's geometry of a pool of this run's rows in the given shape. */
        private Geometry geometry(Shape shape, long pages) {
            return new Geometry(components, shape, o.layers, pages, o.pageSize, o.heads, hb);
        }

        int run() {
            PoolSpec deviceSpec =
                    PoolSpec.builder()
                            .kind(o.kind)
                            .layout(KvLayout.LAYER_FIRST)
                            .layers(o.layers)
                            .pages(devicePages)
                            .pageSize(o.pageSize)
                            .heads(o.heads)
                            .headBytes(hb)
                            .build();
            List<String> failed = new ArrayList<>();
            try (KvioExecutor executor = KvioExecutor.create(IoBackend.CPU, o.threads);
                    DeviceKvPool device = DeviceKvPool.allocate(deviceSpec, IoBackend.CPU);
                    TokenIndices srcIdx = TokenIndices.of(devSrc);
                    TokenIndices hostIdx = TokenIndices.of(host);
                    TokenIndices dstIdx = TokenIndices.of(devDst)) {
                out.printf(
                        Locale.ROOT,
                        "kvio %s: %s, %d layers, %d heads x %d dims x %d bytes (row %d B), page %d, "
                                + "%d tokens (%d pages + %d-token tail), io backend cpu, %d threads%n",
                        Kvio.version(),
                        o.kind.userName(),
                        o.layers,
                        o.heads,
                        o.headDim,
                        o.dtypeBytes,
                        row,
                        o.pageSize,
                        o.tokens,
                        fullPages,
                        tail,
                        executor.threads());
                Region dev = new Region(device, 0);
                if (dev.bytes != devGeom.totalBytes()) {
                    out.printf(
                            Locale.ROOT,
                            "device pool is %d B, its shape %s gives %d B%n",
                            dev.bytes,
                            Shape.LAYER_FIRST.dims(),
                            devGeom.totalBytes());
                    return Main.EXIT_FAILED;
                }
                fillDevice(dev);
                for (KvLayout layout : o.layouts) {
                    if (!runLayout(layout, executor, device, dev, srcIdx, hostIdx, dstIdx)) {
                        failed.add(layout.userName());
                    }
                }
            } finally {
                progress.clear();
            }
            if (failed.isEmpty()) {
                out.println("all " + o.layouts.size() + " layouts verified OK");
                return Main.EXIT_OK;
            }
            out.println("verify FAILED for: " + String.join(", ", failed));
            return Main.EXIT_FAILED;
        }

        private void fillDevice(Region dev) {
            long tokens = devGeom.tokens();
            long words = row >>> 3;
            long done = 0;
            long total = components * o.layers;
            for (int c = 0; c < components; c++) {
                for (long l = 0; l < o.layers; l++) {
                    progress.update("filling device pool", ++done, total);
                    for (long t = 0; t < tokens; t++) {
                        long base = devGeom.offset(c, l, t, 0);
                        for (long w = 0; w < words; w++) {
                            dev.putLong(base + 8 * w, pattern.word(c, l, t, w));
                        }
                        for (long b = words * 8; b < row; b++) {
                            dev.putByte(base + b, pattern.byteAt(c, l, t, b));
                        }
                    }
                }
            }
        }

        private boolean runLayout(
                KvLayout layout,
                KvioExecutor executor,
                DeviceKvPool device,
                Region dev,
                TokenIndices srcIdx,
                TokenIndices hostIdx,
                TokenIndices dstIdx) {
            String name = layout.userName();
            try (HostKvPool hostPool =
                    HostKvPool.builder()
                            .forDevice(device)
                            .layout(layout)
                            .pages(hostPages)
                            .executor(executor)
                            .build()) {
                // touch the fresh host memory first, so the timing measures copies, not page faults
                Region hostRegion = new Region(hostPool, 0);
                hostRegion.zero(0, hostRegion.bytes, new byte[1 << 20]);
                progress.update(name + ": backup", 0, 1);
                long t0 = System.nanoTime();
                Transfer backup =
                        hostPool.backup(device).deviceIndices(srcIdx).hostIndices(hostIdx).submit();
                backup.await();
                long backupNs = System.nanoTime() - t0;
                long moved = backup.bytes();

                Mismatches mismatches = new Mismatches(name);
                Geometry hostGeom = geometry(Shape.of(name), hostPages);
                if (hostRegion.bytes != hostGeom.totalBytes()) {
                    mismatches.add(
                            String.format(
                                    Locale.ROOT,
                                    "host pool is %d B, its shape %s gives %d B",
                                    hostRegion.bytes,
                                    hostGeom.shape.dims(),
                                    hostGeom.totalBytes()));
                } else {
                    verifyHost(hostGeom, hostRegion, mismatches);
                }

                clearDestination(dev);
                progress.update(name + ": load", 0, 1);
                long t1 = System.nanoTime();
                Transfer[] loads = new Transfer[(int) o.layers];
                for (long l = 0; l < o.layers; l++) {
                    loads[(int) l] =
                            hostPool.load(device, l)
                                    .hostIndices(hostIdx)
                                    .deviceIndices(dstIdx)
                                    .submit();
                }
                long loadBytes = 0;
                for (Transfer t : loads) {
                    t.await();
                    loadBytes += t.bytes();
                }
                long loadNs = System.nanoTime() - t1;
                verifyDevice(dev, name, mismatches);
                progress.clear();
                boolean ok =
                        mismatches.count == 0
                                && loadBytes == moved
                                && moved == o.tokens * o.layers * components * row;
                out.printf(
                        Locale.ROOT,
                        "%-18s %-18s moved %,d B per direction  backup %7.2f GB/s  load %7.2f GB/s"
                                + "  verify %s%n",
                        name,
                        layout.shape(),
                        moved,
                        gbps(moved, backupNs),
                        gbps(loadBytes, loadNs),
                        ok ? "OK" : "FAIL");
                if (!ok) {
                    if (loadBytes != moved || moved != o.tokens * o.layers * components * row) {
                        out.printf(
                                Locale.ROOT,
                                "  %s: byte counts differ: backup %d, load %d, expected %d%n",
                                name,
                                moved,
                                loadBytes,
                                o.tokens * o.layers * components * row);
                    }
                    mismatches.print(out);
                }
                return ok;
            }
        }

        private static double gbps(long bytes, long ns) {
            return ns <= 0 ? 0 : bytes / (double) ns;
        }

        private void verifyHost(Geometry hostGeom, Region h, Mismatches mismatches) {
            long total = components * o.layers;
            long done = 0;
            for (int c = 0; c < components; c++) {
                for (long l = 0; l < o.layers; l++) {
                    progress.update(
                            hostGeom.shape.userName() + ": verifying host pool", ++done, total);
                    for (int i = 0; i < host.length; i++) {
                        for (long head = 0; head < o.heads; head++) {
                            long pos = hostGeom.offset(c, l, host[i], head);
                            compare(
                                    h,
                                    pos,
                                    c,
                                    l,
                                    devSrc[i],
                                    head * hb,
                                    hb,
                                    mismatches,
                                    "host",
                                    host[i]);
                        }
                    }
                }
            }
        }

        private void clearDestination(Region dev) {
            long pageBytes = o.pageSize * row;
            byte[] zeros = new byte[(int) Math.min(pageBytes, 1 << 20)];
            for (int c = 0; c < components; c++) {
                for (long l = 0; l < o.layers; l++) {
                    for (long page : clearedPages) {
                        dev.zero(devGeom.offset(c, l, page * o.pageSize, 0), pageBytes, zeros);
                    }
                }
            }
        }

        private void verifyDevice(Region dev, String name, Mismatches mismatches) {
            long total = components * o.layers;
            long done = 0;
            // slots of the cleared pages that the load must not touch
            java.util.BitSet written = new java.util.BitSet();
            long ps = o.pageSize;
            java.util.Map<Long, Integer> pageIndex = new java.util.HashMap<>();
            for (int k = 0; k < clearedPages.length; k++) {
                pageIndex.put(clearedPages[k], k);
            }
            for (long t : devDst) {
                written.set((int) (pageIndex.get(t / ps) * ps + t % ps));
            }
            for (int c = 0; c < components; c++) {
                for (long l = 0; l < o.layers; l++) {
                    progress.update(name + ": verifying device pool", ++done, total);
                    for (int i = 0; i < devDst.length; i++) {
                        compare(
                                dev,
                                devGeom.offset(c, l, devDst[i], 0),
                                c,
                                l,
                                devSrc[i],
                                0,
                                row,
                                mismatches,
                                "device",
                                devDst[i]);
                    }
                    for (int k = 0; k < clearedPages.length; k++) {
                        for (long s = 0; s < ps; s++) {
                            if (!written.get((int) (k * ps + s))) {
                                long token = clearedPages[k] * ps + s;
                                long base = devGeom.offset(c, l, token, 0);
                                for (long b = 0; b < row; b++) {
                                    if (dev.getByte(base + b) != 0) {
                                        mismatches.add(
                                                String.format(
                                                        Locale.ROOT,
                                                        "device token %d (not a load target) component %d layer %d byte %d "
                                                                + "was written: 0x%02x, expected 0x00 (canary)",
                                                        token,
                                                        c,
                                                        l,
                                                        b,
                                                        dev.getByte(base + b) & 0xff));
                                        break;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }

        /**
         * Compares len bytes at pos with bytes [rowStart, rowStart + len) of the pattern row (c, l,
         * srcToken).
         */
        private void compare(
                Region r,
                long pos,
                int c,
                long l,
                long srcToken,
                long rowStart,
                long len,
                Mismatches mismatches,
                String where,
                long token) {
            if ((rowStart & 7) == 0 && (len & 7) == 0) {
                long w0 = rowStart >>> 3;
                for (long w = 0; w < len >>> 3; w++) {
                    if (r.getLong(pos + 8 * w) != pattern.word(c, l, srcToken, w0 + w)) {
                        compareBytes(
                                r,
                                pos + 8 * w,
                                c,
                                l,
                                srcToken,
                                rowStart + 8 * w,
                                8,
                                mismatches,
                                where,
                                token);
                        return;
                    }
                }
                return;
            }
            compareBytes(r, pos, c, l, srcToken, rowStart, len, mismatches, where, token);
        }

        private void compareBytes(
                Region r,
                long pos,
                int c,
                long l,
                long srcToken,
                long rowStart,
                long len,
                Mismatches mismatches,
                String where,
                long token) {
            for (long b = 0; b < len; b++) {
                byte expected = pattern.byteAt(c, l, srcToken, rowStart + b);
                byte actual = r.getByte(pos + b);
                if (expected != actual) {
                    mismatches.add(
                            String.format(
                                    Locale.ROOT,
                                    "%s token %d component %d layer %d row byte %d (at offset %d): expected 0x%02x "
                                            + "(device token %d), got 0x%02x",
                                    where,
                                    token,
                                    c,
                                    l,
                                    rowStart + b,
                                    pos + b,
                                    expected & 0xff,
                                    srcToken,
                                    actual & 0xff));
                    return;
                }
            }
        }
    }

    /** Collected mismatches of one layout (first few kept). */
    static final class Mismatches {
        private static final int KEEP = 8;
        private final String layout;
        private final List<String> first = new ArrayList<>();
        long count;

        Mismatches(String layout) {
            this.layout = layout;
        }

        void add(String message) {
            count++;
            if (first.size() < KEEP) {
                first.add(message);
            }
        }

        void print(PrintWriter out) {
            out.printf(Locale.ROOT, "  %s: %d mismatching rows or heads; first:%n", layout, count);
            for (String m : first) {
                out.println("    " + m);
            }
        }
    }
}
