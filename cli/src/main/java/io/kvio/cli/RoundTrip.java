/*
 * One `roundtrip` run over all requested host layouts (RoundTripCommand): allocates the
 * layer_first device pool on the chosen io backend (auto by default: device memory on a GPU, host
 * memory without one) and fills it (RoundTripVerifier, through DeviceMirror), then for each layout
 * backs up the planned tokens (RoundTripPlan) into a fresh host pool (pinned on a GPU) in one
 * call, verifies the host pool, clears the destination pages, reloads them layer by layer (one
 * call per layer, as a serving engine does) and verifies the device pool. Each direction runs once
 * untimed first (a warm-up: the first transfer of a run pays for thread, stream and page set-up,
 * and the ceiling is timed warm too); then its destination is reset to the canary, so that the
 * verification after the timed run sees only what the timed run wrote. On a GPU it then times one
 * contiguous copy of the same bytes each way between that host pool and the device pool (the
 * ceiling). RoundTripReport prints the outcome.
 */
package io.kvio.cli;

import io.kvio.DeviceKvPool;
import io.kvio.HostKvPool;
import io.kvio.IoBackend;
import io.kvio.KvLayout;
import io.kvio.KvioExecutor;
import io.kvio.PoolSpec;
import io.kvio.TokenIndices;
import io.kvio.Transfer;
import io.kvio.cli.RoundTripReport.Ceiling;
import io.kvio.cli.RoundTripReport.LayoutResult;
import io.kvio.cli.RoundTripReport.Timed;
import io.kvio.oracle.Geometry;
import io.kvio.oracle.Shape;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

final class RoundTrip {
    private final RoundTripOptions o;
    private final RoundTripReport report;
    private final Progress progress;
    private final RoundTripPlan plan;
    private final RoundTripVerifier verifier;

    /** The pools and indices every layout's transfers share. */
    private record Device(
            KvioExecutor executor,
            DeviceKvPool pool,
            DeviceMirror mirror,
            TokenIndices srcIdx,
            TokenIndices hostIdx,
            TokenIndices dstIdx) {}

    /** The transfers of one layout, in the order they run. */
    enum Step {
        BACKUP_WARM_UP,
        BACKUP,
        LOAD_WARM_UP,
        LOAD
    }

    /**
     * A test seam: told of each step of each layout before it runs; false leaves the step out (it
     * then reports the bytes it should have moved, so that only the verification can notice).
     */
    @FunctionalInterface
    interface Steps {
        Steps ALL = (layout, step) -> true;

        boolean run(KvLayout layout, Step step);

        /**
         * Told after the timed BACKUP and LOAD of each layout, just before their verification, with
         * the host pool's and the device pool's bytes (on a GPU the device's host mirror, just
         * pulled): a test writes stray bytes here that the verification must find.
         */
        default void verifying(KvLayout layout, Step step, PoolRegion host, PoolRegion device) {}
    }

    private final Steps steps;

    RoundTrip(RoundTripOptions o, PrintWriter out, PrintWriter err) {
        this(o, out, err, Steps.ALL);
    }

    RoundTrip(RoundTripOptions o, PrintWriter out, PrintWriter err, Steps steps) {
        this.steps = steps;
        this.o = o;
        this.report = new RoundTripReport(out);
        this.progress = new Progress(err);
        this.plan = new RoundTripPlan(o.tokens, o.pageSize, o.seed);
        this.verifier = new RoundTripVerifier(o, plan, progress);
    }

    int run() {
        PoolSpec deviceSpec =
                PoolSpec.builder()
                        .kind(o.kind)
                        .layout(KvLayout.LAYER_FIRST)
                        .layers(o.layers)
                        .pages(plan.devicePages)
                        .pageSize(o.pageSize)
                        .heads(o.heads)
                        .headBytes(o.headBytes())
                        .build();
        List<String> failed = new ArrayList<>();
        try (KvioExecutor executor =
                        KvioExecutor.create(
                                o.backend, Converters.executorThreads(o.backend, o.threads));
                DeviceKvPool pool = DeviceKvPool.allocate(deviceSpec, o.backend);
                DeviceMirror mirror = new DeviceMirror(pool);
                TokenIndices srcIdx = TokenIndices.of(plan.devSrc);
                TokenIndices hostIdx = TokenIndices.of(plan.host);
                TokenIndices dstIdx = TokenIndices.of(plan.devDst)) {
            report.header(o, plan, executor.threads());
            if (o.backend == IoBackend.AUTO && o.backend.isCuda()) { // its GPU crossovers
                report.autoCalibration(executor.autoCalibration());
            }
            PoolRegion region = mirror.region;
            if (region.bytes != verifier.devGeom.totalBytes()) {
                report.deviceSizeDiffers(region.bytes, verifier.devGeom);
                return Main.EXIT_FAILED;
            }
            verifier.fillDevice(region);
            mirror.push();
            Device device = new Device(executor, pool, mirror, srcIdx, hostIdx, dstIdx);
            for (KvLayout layout : o.layouts) {
                if (!runLayout(layout, device)) {
                    failed.add(layout.userName());
                }
            }
        } finally {
            progress.clear();
        }
        return report.verdict(failed, o.layouts.size());
    }

    private boolean runLayout(KvLayout layout, Device device) {
        String name = layout.userName();
        try (HostKvPool hostPool =
                HostKvPool.builder()
                        .forDevice(device.pool)
                        .layout(layout)
                        .pages(plan.hostPages)
                        .executor(device.executor)
                        .build()) {
            long expected = o.tokens * o.layers * o.kind.components() * o.rowBytes();
            // the host canary; it also touches the fresh host memory first, so the timing measures
            // copies, not page faults
            PoolRegion hostRegion = new PoolRegion(hostPool, 0);
            verifier.resetHost(hostRegion);
            progress.update(name + ": backup (warm-up)", 0, 1);
            backup(layout, Step.BACKUP_WARM_UP, hostPool, device, expected);
            // the canary back, so that the verification sees only what the timed backup wrote
            verifier.resetHost(hostRegion);
            progress.update(name + ": backup", 0, 1);
            Timed backup = backup(layout, Step.BACKUP, hostPool, device, expected);
            Mismatches mismatches = new Mismatches(name);
            steps.verifying(layout, Step.BACKUP, hostRegion, device.mirror.region);
            verifyHostPool(name, hostRegion, mismatches);

            verifier.clearDestination(device.mirror.region);
            device.mirror.push();
            progress.update(name + ": load (warm-up)", 0, 1);
            load(layout, Step.LOAD_WARM_UP, hostPool, device, expected);
            // the canary back in the destination pages (on a GPU the mirror still holds it)
            verifier.clearDestination(device.mirror.region);
            device.mirror.push();
            progress.update(name + ": load", 0, 1);
            Timed load = load(layout, Step.LOAD, hostPool, device, expected);
            device.mirror.pull();
            steps.verifying(layout, Step.LOAD, hostRegion, device.mirror.region);
            verifier.verifyDevice(device.mirror.region, name, mismatches);
            progress.clear();
            Ceiling ceiling =
                    device.mirror.onDevice() ? ceiling(hostRegion, device, expected) : null;
            LayoutResult result =
                    new LayoutResult(layout, backup, load, expected, mismatches, ceiling);
            report.layout(result);
            return result.ok();
        }
    }

    /**
     * One contiguous copy of the same bytes (at most 1 GiB) each way between the host pool and the
     * device pool, timed after one untimed copy each way; then the device pool gets its content
     * back from the mirror (the next layout backs up from it).
     */
    private static Ceiling ceiling(PoolRegion hostRegion, Device device, long expected) {
        long bytes = Math.min(Math.min(expected, 1L << 30), hostRegion.bytes);
        bytes = Math.min(bytes, device.mirror.region.bytes);
        hostRegion.timeCopy(device.pool, bytes, false);
        Timed toHost = new Timed(bytes, hostRegion.timeCopy(device.pool, bytes, false));
        hostRegion.timeCopy(device.pool, bytes, true);
        Timed toDevice = new Timed(bytes, hostRegion.timeCopy(device.pool, bytes, true));
        device.mirror.push();
        return new Ceiling(toHost, toDevice);
    }

    /** The backup: all layers of the planned tokens in one call. */
    private Timed backup(
            KvLayout layout, Step step, HostKvPool hostPool, Device device, long expected) {
        if (!steps.run(layout, step)) {
            return new Timed(expected, 1);
        }
        long t0 = System.nanoTime();
        try (Transfer backup =
                hostPool.backup(device.pool)
                        .deviceIndices(device.srcIdx)
                        .hostIndices(device.hostIdx)
                        .submit()) {
            backup.await();
            return new Timed(backup.bytes(), System.nanoTime() - t0, backup.backend());
        }
    }

    /** The load: one call per layer, all submitted before the first is awaited. */
    private Timed load(
            KvLayout layout, Step step, HostKvPool hostPool, Device device, long expected) {
        if (!steps.run(layout, step)) {
            return new Timed(expected, 1);
        }
        long t1 = System.nanoTime();
        Transfer[] loads = new Transfer[(int) o.layers];
        // every load submitted is awaited and closed, also when one fails
        long loadBytes =
                MatrixRunner.eachLayer(
                        loads.length,
                        l ->
                                loads[l] =
                                        hostPool.load(device.pool, l)
                                                .hostIndices(device.hostIdx)
                                                .deviceIndices(device.dstIdx)
                                                .submit());
        return new Timed(loadBytes, System.nanoTime() - t1, loads[0].backend());
    }

    /** The host pool's size against its shape, then its content. */
    private void verifyHostPool(String name, PoolRegion hostRegion, Mismatches mismatches) {
        Geometry hostGeom = verifier.geometry(Shape.of(name), plan.hostPages);
        if (hostRegion.bytes != hostGeom.totalBytes()) {
            mismatches.add(
                    String.format(
                            Locale.ROOT,
                            "host pool is %d B, its shape %s gives %d B",
                            hostRegion.bytes,
                            hostGeom.shape.dims(),
                            hostGeom.totalBytes()));
        } else {
            verifier.verifyHost(hostGeom, hostRegion, mismatches);
        }
    }
}
