/*
 * One public enum's names (kinds, layouts, io backends, granularities): lookup by native value
 * and parsing of the strings users type. Exact matches resolve in Java; anything else goes to
 * native kvio_parse_name, whose error lists the valid values and the nearest match. Each enum
 * keeps one of these; its constants each carry a NativeName.
 */
package io.kvio;

import java.util.Objects;
import java.util.function.Function;

final class Names<E extends Enum<E>> {
    private final int table;
    private final String argument;
    private final E[] values;
    private final Function<E, NativeName> name;

    /**
     * {@code table}: the native name table (KVIO_NAME_*); {@code argument}: the caller's parameter
     * named in the NullPointerException; {@code name}: each constant's NativeName.
     */
    Names(int table, String argument, E[] values, Function<E, NativeName> name) {
        this.table = table;
        this.argument = argument;
        this.values = values;
        this.name = name;
    }

    E parse(String text) {
        Objects.requireNonNull(text, argument);
        int nul = text.indexOf('\0');
        if (nul >= 0) {
            // The native parser reads a C string, which would end at the NUL and accept the rest.
            throw new KvioInvalidArgumentException(
                    argument
                            + " '"
                            + text.replace("\0", "\\0")
                            + "' holds a NUL character at index "
                            + nul
                            + "; no name does");
        }
        for (E e : values) {
            if (name.apply(e).userName.equals(text)) {
                return e;
            }
        }
        int value = NativeBridge.parseName(table, text);
        E e = ofNative(value);
        if (e == null) {
            throw new KvioException(
                    KvioException.Status.INTERNAL,
                    "the native library parsed '" + text + "' to " + value + ", unknown to Java");
        }
        return e;
    }

    /** The constant whose native value is {@code value}, or null if there is none. */
    E ofNative(int value) {
        for (E e : values) {
            if (name.apply(e).value == value) {
                return e;
            }
        }
        return null;
    }
}
