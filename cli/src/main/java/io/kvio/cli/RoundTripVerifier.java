/*
 * The verification of a `roundtrip`: fills the layer_first device pool with seeded pattern rows
 * (io.kvio.oracle.RowPattern), and checks every byte of both pools against them at the positions
 * the oracle's geometry gives. The host pool after the backup: each backed-up row where the oracle
 * puts it, and every other slot (the rest of a last page that is not full) still the host canary
 * the host pool was reset to. The device pool after the load: each reloaded row, the slots of the
 * cleared destination pages that are not load targets still the device canary they were cleared
 * to, and every other page (the backup's sources among them) still the pattern it was filled with.
 * The canaries are seeded pseudo-random bytes (io.kvio.oracle.Oracle.canary), one per pool, laid
 * out by position in the pool region: not zeros, so a load that copies host bytes no token was
 * backed up into (the host canary) onto device slots that are not load targets is seen.
 */
package io.kvio.cli;

import io.kvio.oracle.Geometry;
import io.kvio.oracle.Oracle;
import io.kvio.oracle.RowPattern;
import io.kvio.oracle.Shape;
import java.util.BitSet;
import java.util.Locale;

final class RoundTripVerifier {
    private final RoundTripOptions o;
    private final RoundTripPlan plan;
    private final Progress progress;
    private final RowPattern pattern;
    private final int components;
    private final long row;
    private final long hb;
    final Geometry devGeom; // the device pool: layer_first

    /**
     * The canaries' period (a power of two): byte p of a pool region reset to a canary holds
     * canary[p mod CANARY_PERIOD], so that pools of any size are filled and checked without a
     * snapshot, as fast as a fill with zeros.
     */
    static final int CANARY_PERIOD = 1 << 20;

    private final byte[] hostCanary;
    private final byte[] deviceCanary;

    /** Bytes [rowStart, rowStart + len) of the pattern row (component, layer, srcToken). */
    private record Expected(int component, long layer, long srcToken, long rowStart, long len) {
        /** The 8 bytes of word w of this span. */
        Expected word(long w) {
            return new Expected(component, layer, srcToken, rowStart + 8 * w, 8);
        }
    }

    /** Where compared bytes are, for the message: "host" or "device", and the token there. */
    private record Place(String pool, long token) {}

    RoundTripVerifier(RoundTripOptions o, RoundTripPlan plan, Progress progress) {
        this.o = o;
        this.plan = plan;
        this.progress = progress;
        this.components = o.kind.components();
        this.row = o.rowBytes();
        this.hb = o.headBytes();
        this.devGeom = geometry(Shape.LAYER_FIRST, plan.devicePages);
        // rows are named by their device coordinates, wherever they land
        this.pattern = new RowPattern(o.seed, components, o.layers, devGeom.tokens(), row);
        this.hostCanary = Oracle.canary(CANARY_PERIOD, 2 * o.seed);
        this.deviceCanary = Oracle.canary(CANARY_PERIOD, 2 * o.seed + 1);
    }

    /** The oracle's geometry of a pool of this run's rows in the given shape. */
    Geometry geometry(Shape shape, long pages) {
        return new Geometry(components, shape, o.layers, pages, o.pageSize, o.heads, hb);
    }

    /** Writes the pattern rows into every token of the device pool. */
    void fillDevice(PoolRegion dev) {
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

    /** Resets the whole host pool to the host canary (before each backup). */
    void resetHost(PoolRegion h) {
        h.fillPeriodic(0, h.bytes, hostCanary);
    }

    /**
     * Checks the whole host pool (shape hostGeom, which the caller checked covers its bytes): each
     * head of each backed-up row, and every slot that is not a backup target still the host canary.
     */
    void verifyHost(Geometry hostGeom, PoolRegion h, Mismatches mismatches) {
        long total = components * o.layers;
        long done = 0;
        BitSet targets = new BitSet();
        for (long t : plan.host) {
            targets.set(Math.toIntExact(t));
        }
        long hostTokens = hostGeom.tokens();
        for (int c = 0; c < components; c++) {
            for (long l = 0; l < o.layers; l++) {
                progress.update(hostGeom.shape.userName() + ": verifying host pool", ++done, total);
                for (int i = 0; i < plan.host.length; i++) {
                    Place at = new Place("host", plan.host[i]);
                    for (long head = 0; head < o.heads; head++) {
                        long pos = hostGeom.offset(c, l, plan.host[i], head);
                        Expected e = new Expected(c, l, plan.devSrc[i], head * hb, hb);
                        compare(h, pos, e, at, mismatches);
                    }
                }
                for (long t = targets.nextClearBit(0);
                        t < hostTokens;
                        t = targets.nextClearBit((int) t + 1)) {
                    for (long head = 0; head < o.heads; head++) {
                        String where =
                                String.format(
                                        Locale.ROOT,
                                        "host token %d (not a backup target) component %d layer %d"
                                                + " head %d",
                                        t,
                                        c,
                                        l,
                                        head);
                        checkCanary(
                                h,
                                hostGeom.offset(c, l, t, head),
                                hb,
                                hostCanary,
                                where,
                                mismatches);
                    }
                }
            }
        }
    }

    /** Fills the device pages the load writes into with the device canary. */
    void clearDestination(PoolRegion dev) {
        long pageBytes = o.pageSize * row;
        for (int c = 0; c < components; c++) {
            for (long l = 0; l < o.layers; l++) {
                for (long page : plan.clearedPages) {
                    dev.fillPeriodic(
                            devGeom.offset(c, l, page * o.pageSize, 0), pageBytes, deviceCanary);
                }
            }
        }
    }

    /**
     * Checks the whole device pool: each reloaded row, the canary around them in the cleared pages,
     * and every other page still holding the pattern fillDevice wrote (the backup's source pages
     * among them: neither transfer may change them).
     */
    void verifyDevice(PoolRegion dev, String name, Mismatches mismatches) {
        long total = components * o.layers;
        long done = 0;
        BitSet written = loadTargets();
        BitSet cleared = new BitSet();
        for (long page : plan.clearedPages) {
            cleared.set(Math.toIntExact(page));
        }
        long ps = o.pageSize;
        for (int c = 0; c < components; c++) {
            for (long l = 0; l < o.layers; l++) {
                progress.update(name + ": verifying device pool", ++done, total);
                for (int i = 0; i < plan.devDst.length; i++) {
                    long pos = devGeom.offset(c, l, plan.devDst[i], 0);
                    Expected e = new Expected(c, l, plan.devSrc[i], 0, row);
                    compare(dev, pos, e, new Place("device", plan.devDst[i]), mismatches);
                }
                verifyCanary(dev, c, l, written, mismatches);
                for (long page = cleared.nextClearBit(0);
                        page < plan.devicePages;
                        page = cleared.nextClearBit((int) page + 1)) {
                    for (long t = page * ps; t < (page + 1) * ps; t++) {
                        Expected e = new Expected(c, l, t, 0, row);
                        Place at = new Place("device (not a load target: unchanged)", t);
                        compare(dev, devGeom.offset(c, l, t, 0), e, at, mismatches);
                    }
                }
            }
        }
    }

    /**
     * The device tokens the load writes, one bit per token of the device pool (a primitive bit set,
     * not a per-page map: at page size 1 a run has as many pages as tokens, and the Java heap it
     * takes is counted by RoundTripCommand.heapBytes before the run).
     */
    private BitSet loadTargets() {
        BitSet written = new BitSet(Math.toIntExact(devGeom.tokens()));
        for (long t : plan.devDst) {
            written.set(Math.toIntExact(t));
        }
        return written;
    }

    /** Slots of the cleared pages that the load must not touch must still be the device canary. */
    private void verifyCanary(
            PoolRegion dev, int c, long l, BitSet written, Mismatches mismatches) {
        long ps = o.pageSize;
        for (int k = 0; k < plan.clearedPages.length; k++) {
            for (long s = 0; s < ps; s++) {
                long token = plan.clearedPages[k] * ps + s;
                if (!written.get(Math.toIntExact(token))) {
                    String where =
                            String.format(
                                    Locale.ROOT,
                                    "device token %d (not a load target) component %d layer %d",
                                    token,
                                    c,
                                    l);
                    checkCanary(
                            dev,
                            devGeom.offset(c, l, token, 0),
                            row,
                            deviceCanary,
                            where,
                            mismatches);
                }
            }
        }
    }

    /**
     * The len bytes at pos must still be the canary (byte p is canary[p mod CANARY_PERIOD]); else
     * the first other one is recorded.
     */
    private static void checkCanary(
            PoolRegion r, long pos, long len, byte[] canary, String where, Mismatches mismatches) {
        int mask = canary.length - 1;
        for (long b = 0; b < len; b++) {
            byte actual = r.getByte(pos + b);
            byte expected = canary[(int) ((pos + b) & mask)];
            if (actual != expected) {
                mismatches.add(
                        String.format(
                                Locale.ROOT,
                                "%s byte %d (at offset %d) was written: 0x%02x, expected 0x%02x"
                                        + " (canary)",
                                where,
                                b,
                                pos + b,
                                actual & 0xff,
                                expected & 0xff));
                return;
            }
        }
    }

    /** Compares the bytes at pos with the expected span: a word at a time where it is aligned. */
    private void compare(PoolRegion r, long pos, Expected e, Place at, Mismatches mismatches) {
        if ((e.rowStart & 7) == 0 && (e.len & 7) == 0) {
            long w0 = e.rowStart >>> 3;
            for (long w = 0; w < e.len >>> 3; w++) {
                if (r.getLong(pos + 8 * w)
                        != pattern.word(e.component, e.layer, e.srcToken, w0 + w)) {
                    compareBytes(r, pos + 8 * w, e.word(w), at, mismatches);
                    return;
                }
            }
            return;
        }
        compareBytes(r, pos, e, at, mismatches);
    }

    /** Compares byte by byte; records the first differing byte. */
    private void compareBytes(PoolRegion r, long pos, Expected e, Place at, Mismatches mismatches) {
        for (long b = 0; b < e.len; b++) {
            byte expected = pattern.byteAt(e.component, e.layer, e.srcToken, e.rowStart + b);
            byte actual = r.getByte(pos + b);
            if (expected != actual) {
                mismatches.add(
                        String.format(
                                Locale.ROOT,
                                "%s token %d component %d layer %d row byte %d (at offset %d): expected 0x%02x "
                                        + "(device token %d), got 0x%02x",
                                at.pool,
                                at.token,
                                e.component,
                                e.layer,
                                e.rowStart + b,
                                pos + b,
                                expected & 0xff,
                                e.srcToken,
                                actual & 0xff));
                return;
            }
        }
    }
}
