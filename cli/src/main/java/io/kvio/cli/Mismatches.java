/*
 * The mismatches `roundtrip` found in one layout: how many, and the first few messages.
 */
package io.kvio.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

final class Mismatches {
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
