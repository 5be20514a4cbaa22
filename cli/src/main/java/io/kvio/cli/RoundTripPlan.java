/*
 * The workload of a `roundtrip`: which device tokens are backed up into which host slots, and
 * into which other device tokens they are reloaded. Whole pages in a seeded random order on both
 * sides, plus a token-granular tail of scattered slots in two source and two destination pages;
 * the destination pages are the ones cleared before the load.
 */
package io.kvio.cli;

import io.kvio.oracle.Indices;
import java.util.SplittableRandom;

final class RoundTripPlan {
    // transfer i moves device token devSrc[i] -> host token host[i] -> device token devDst[i]
    final long[] devSrc;
    final long[] host;
    final long[] devDst;
    final long hostPages;
    final long devicePages;
    final long fullPages;
    final long tail;
    final long[] clearedPages; // device pages canary-filled before the load

    RoundTripPlan(long tokens, long pageSize, long seed) {
        long ps = pageSize;
        long full = tokens / ps;
        long t = tokens % ps;
        if (t == 0 && full > 1) {
            // keep a token-granular tail: the last page's worth as scattered slots
            full -= 1;
            t = ps;
        }
        fullPages = full;
        tail = t;
        hostPages = full + (t > 0 ? 1 : 0);
        // device pages: source pages, destination pages, and 2 + 2 pages for the scattered tails
        devicePages = 2 * full + 4;
        SplittableRandom random = new SplittableRandom(seed);
        long[] order = Indices.permutation(random, devicePages);
        long[] hostOrder = Indices.permutation(random, full);
        int n = (int) tokens;
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
    }
}
