/*
 * The pool layouts, by the shape of one component as documented in kvio.h and
 * reference/hicache-semantics.md §2 (L layers, P pages of ps token slots, H heads, D = head bytes).
 * Written down here, not taken from kvio: callers map kvio's KvLayout by its user name.
 */
package io.kvio.oracle;

public enum Shape {
    /** [L, P*ps, H, D]. */
    LAYER_FIRST("layer_first", "[L, P*ps, H, D]"),
    /** [P*ps, L, H, D]. */
    PAGE_FIRST("page_first", "[P*ps, L, H, D]"),
    /** [P, L, ps, H, D]. */
    PAGE_FIRST_DIRECT("page_first_direct", "[P, L, ps, H, D]"),
    /** [P, H, ps, L, D]. */
    PAGE_HEAD("page_head", "[P, H, ps, L, D]");

    private final String userName;
    private final String dims;

    Shape(String userName, String dims) {
        this.userName = userName;
        this.dims = dims;
    }

    /** The layout's name on the command line and in kvio's API, e.g. "page_first_direct". */
    public String userName() {
        return userName;
    }

    /** The dimensions of one component, outermost first, e.g. "[P, L, ps, H, D]". */
    public String dims() {
        return dims;
    }

    /** The shape whose user name is {@code userName}. */
    public static Shape of(String userName) {
        for (Shape s : values()) {
            if (s.userName.equals(userName)) {
                return s;
            }
        }
        throw new IllegalArgumentException("oracle: no layout named " + userName);
    }
}
