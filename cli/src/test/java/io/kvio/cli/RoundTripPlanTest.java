/*
 * How RoundTripPlan lays out a roundtrip's tokens (whole pages, then a tail of single slots), and
 * that the header's description of it (RoundTripReport.tokensLabel) says what the plan does.
 */
package io.kvio.cli;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

public class RoundTripPlanTest {
    @DataProvider(name = "plans")
    public static Object[][] plans() {
        return new Object[][] {
            // tokens, page size, whole pages, tail, the header's words; a whole number of 2 pages
            // or more keeps its last page's worth for the tail, one page stays whole
            {8192L, 64L, 127L, 64L, "8192 tokens (127 whole pages, then 64 tokens slot by slot)"},
            {64L, 64L, 1L, 0L, "64 tokens (1 whole page)"},
            {128L, 64L, 1L, 64L, "128 tokens (1 whole page, then 64 tokens slot by slot)"},
            {100L, 8L, 12L, 4L, "100 tokens (12 whole pages, then 4 tokens slot by slot)"},
            {65L, 64L, 1L, 1L, "65 tokens (1 whole page, then 1 token slot by slot)"},
            {5L, 64L, 0L, 5L, "5 tokens (slot by slot)"},
            {1L, 1L, 1L, 0L, "1 token (1 whole page)"},
        };
    }

    @Test(dataProvider = "plans")
    public void headerSaysHowThePlanMovesTheTokens(
            long tokens, long pageSize, long wholePages, long tail, String label) {
        RoundTripPlan plan = new RoundTripPlan(tokens, pageSize, 7);
        assertEquals(plan.fullPages, wholePages, "whole pages");
        assertEquals(plan.tail, tail, "tail");
        assertEquals(plan.fullPages * pageSize + plan.tail, tokens, "every token once");
        assertEquals(plan.devSrc.length, tokens);
        // the first fullPages x pageSize transfers are whole pages on both device sides and on
        // the host: each run of pageSize starts at a page's first slot and goes up one by one
        for (int p = 0; p < wholePages; p++) {
            for (long[] side : new long[][] {plan.devSrc, plan.host, plan.devDst}) {
                long first = side[(int) (p * pageSize)];
                assertEquals(first % pageSize, 0, "page run " + p + " starts a page");
                for (int s = 1; s < pageSize; s++) {
                    assertEquals(side[(int) (p * pageSize + s)], first + s, "page run " + p);
                }
            }
        }
        // the tail is single slots: on each device side, within the two pages kept for it, in
        // an order that does not run through a page (with more than a few of them)
        int start = (int) (wholePages * pageSize);
        for (long[] side : new long[][] {plan.devSrc, plan.devDst}) {
            Set<Long> pages = new HashSet<>();
            int ascending = 0;
            for (int i = start; i < tokens; i++) {
                pages.add(side[i] / pageSize);
                if (i > start && side[i] == side[i - 1] + 1) {
                    ascending++;
                }
            }
            assertTrue(pages.size() <= 2, "the tail lies in two pages: " + pages);
            if (tail >= 16) {
                assertTrue(ascending < tail / 2, "tail slots in a scattered order: " + ascending);
            }
        }
        assertEquals(RoundTripReport.tokensLabel(tokens, plan.fullPages, plan.tail), label);
    }
}
