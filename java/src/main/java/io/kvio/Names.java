/*
 * Parsing of the strings users type for kinds, layouts, io backends and granularities. Exact
 * matches resolve in Java; anything else goes to native kvio_parse_name, whose error lists the
 * valid values and the nearest match.
 */
package io.kvio;

import java.util.Objects;

final class Names {
    private Names() {}

    /**
     * values' toString() must be their user names; {@code argument} names the caller's parameter in
     * the NullPointerException.
     */
    static <E extends Enum<E>> int parse(int table, String text, E[] values, String argument) {
        Objects.requireNonNull(text, argument);
        for (E e : values) {
            if (e.toString().equals(text)) {
                return e.ordinal();
            }
        }
        return Dispatcher.parseName(table, text);
    }
}
