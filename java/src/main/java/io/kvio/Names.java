/*
 * Parsing of the strings users type for kinds, layouts, io backends and granularities. Exact
 * matches resolve in Java; anything else goes to native kvio_parse_name, whose error lists the
 * valid values and the nearest match.
 */
package io.kvio;

import java.util.Objects;
import java.util.function.IntFunction;

final class Names {
    private Names() {}

    /**
     * values' toString() must be their user names; ofNative maps a native value of name table
     * {@code table} to its constant; {@code argument} names the caller's parameter in the
     * NullPointerException.
     */
    static <E extends Enum<E>> E parse(
            int table, String text, E[] values, IntFunction<E> ofNative, String argument) {
        Objects.requireNonNull(text, argument);
        for (E e : values) {
            if (e.toString().equals(text)) {
                return e;
            }
        }
        int value = NativeBridge.parseName(table, text);
        E e = ofNative.apply(value);
        if (e == null) {
            throw new KvioException(
                    KvioException.Status.INTERNAL,
                    "the native library parsed '" + text + "' to " + value + ", unknown to Java");
        }
        return e;
    }
}
