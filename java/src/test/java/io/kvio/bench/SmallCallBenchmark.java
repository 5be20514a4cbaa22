/*
 * JMH benchmark of the cost of one small Java call: a one-page, one-layer load(device, layer) on the
 * CPU backend (Java validation + JNI + native validation + planning + the copy + await), next
 * to a trivial JNI call and a Java memcpy of the same bytes measured in the same run. The tiny
 * case (16-token page, 64-byte rows: 2 KiB moved) is dominated by overhead; the realistic case
 * (64-token page, 8 heads x 256 bytes: 256 KiB moved) by the copy; "batch1024" (64 pages of 16
 * tokens, 64-byte rows) has 1024 indices per list. The same load is measured with the index lists
 * as TokenIndices made once, as long[] and int[] arrays (copied per call into per-thread native
 * scratch), and as TokenIndices made and closed per call: the differences are the cost of the
 * one-call array forms and of building a native list per step. The same copy is also measured
 * through the general Kvio.transfer. Run with -prof gc for the bytes each call allocates.
 *
 * Run: scripts/bench-java.sh (builds the classpath and runs this class's main; JMH options
 * such as -p shape=batch1024 or a benchmark name pattern are passed on).
 */
package io.kvio.bench;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.Kvio;
import io.kvio.NativeCallProbe;
import io.kvio.PoolKind;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class SmallCallBenchmark {

    /** "tiny": 16-token page of 64-byte rows; "page64": 64-token page of 8 x 256-byte heads. */
    @Param({"tiny", "page64", "batch1024"})
    public String shape;

    private DeviceKvPool device;
    private HostKvPool host;
    private TokenIndices hostSlots;
    private TokenIndices deviceSlots;
    private long[] hostArray;
    private long[] deviceArray;
    private int[] hostInts;
    private int[] deviceInts;
    private ByteBuffer copySource;
    private ByteBuffer copyTarget;
    private int layer;

    @Setup(Level.Trial)
    public void setUp() {
        boolean tiny = !shape.equals("page64");
        long pageSize = tiny ? 16 : 64;
        long heads = tiny ? 1 : 8;
        long headBytes = tiny ? 64 : 256;
        PoolSpec spec =
                PoolSpec.builder()
                        .kind(PoolKind.MHA)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(32)
                        .pages(64)
                        .pageSize(pageSize)
                        .heads(heads)
                        .headBytes(headBytes)
                        .build();
        device = DeviceKvPool.allocate(spec, IoBackend.CPU);
        host =
                HostKvPool.builder()
                        .forDevice(device)
                        .layout(KvLayout.PAGE_FIRST_DIRECT)
                        .ioBackend(IoBackend.CPU)
                        .pages(64)
                        .build();
        int pages = shape.equals("batch1024") ? 64 : 1;
        hostArray = new long[(int) (pages * pageSize)];
        deviceArray = new long[hostArray.length];
        hostInts = new int[hostArray.length];
        deviceInts = new int[hostArray.length];
        for (int i = 0; i < hostArray.length; i++) {
            hostArray[i] = pages == 1 ? 5 * pageSize + i : i;
            deviceArray[i] = pages == 1 ? 9 * pageSize + i : hostArray.length - 1 - i;
            hostInts[i] = (int) hostArray[i];
            deviceInts[i] = (int) deviceArray[i];
        }
        hostSlots = TokenIndices.of(hostArray);
        deviceSlots = TokenIndices.of(deviceArray);
        int bytes = (int) (2 * pages * pageSize * heads * headBytes);
        copySource = ByteBuffer.allocateDirect(bytes);
        copyTarget = ByteBuffer.allocateDirect(bytes);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        hostSlots.close();
        deviceSlots.close();
        host.close();
        device.close();
    }

    /** The load of the next layer (0 to 31, round robin), its index lists still to name. */
    private HostKvPool.TransferRequest nextLoad() {
        layer = (layer + 1) & 31;
        return host.load(device, layer);
    }

    private static long awaited(Transfer t) {
        t.await();
        return t.bytes();
    }

    /** One page, one layer, host to device, awaited: the per-layer load call of a serving loop. */
    @Benchmark
    public long loadOnePageOneLayer() {
        return awaited(nextLoad().hostIndices(hostSlots).deviceIndices(deviceSlots).submit());
    }

    /** The same one-page, one-layer copy through the general Kvio.transfer. */
    @Benchmark
    public long transferOnePageOneLayer() {
        layer = (layer + 1) & 31;
        return awaited(
                Kvio.transfer(
                        host.executor(), host, device, hostSlots, deviceSlots, layer, layer, 1));
    }

    /** The same load with long[] index arrays, copied for this call. */
    @Benchmark
    public long loadWithLongArrays() {
        return awaited(nextLoad().hostIndices(hostArray).deviceIndices(deviceArray).submit());
    }

    /** The same load with int[] index arrays, widened and copied for this call. */
    @Benchmark
    public long loadWithIntArrays() {
        return awaited(nextLoad().hostIndices(hostInts).deviceIndices(deviceInts).submit());
    }

    /** The same load with TokenIndices made from the arrays and closed on every call. */
    @Benchmark
    public long loadWithNewTokenIndices() {
        try (TokenIndices h = TokenIndices.of(hostArray);
                TokenIndices d = TokenIndices.of(deviceArray)) {
            return awaited(nextLoad().hostIndices(h).deviceIndices(d).submit());
        }
    }

    /** Baseline: the same bytes copied by one Java bulk put between direct buffers. */
    @Benchmark
    public ByteBuffer javaCopySameBytes() {
        copyTarget.clear();
        copySource.clear();
        return copyTarget.put(copySource);
    }

    /** Baseline: one trivial JNI round trip through the bridge. */
    @Benchmark
    public int trivialNativeCall() {
        return NativeCallProbe.backendAvailable(IoBackend.CPU);
    }

    public static void main(String[] args) throws Exception {
        CommandLineOptions cli = new CommandLineOptions(args);
        OptionsBuilder builder = new OptionsBuilder();
        builder.parent(cli);
        if (cli.getIncludes().isEmpty()) {
            builder.include(SmallCallBenchmark.class.getSimpleName());
        }
        Options options = builder.build();
        new Runner(options).run();
        System.out.println(
                "kvio "
                        + Kvio.version()
                        + ", "
                        + Runtime.getRuntime().availableProcessors()
                        + " cores, "
                        + System.getProperty("java.vm.name")
                        + " "
                        + System.getProperty("java.version"));
    }
}
