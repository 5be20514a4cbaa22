/*
 * The geometry of a KV pool: kind, layout, layers, pages, page size, heads and bytes per head.
 * Immutable; build() validates it natively (sizes, overflow, layout fits the kind), so an
 * instance always describes a pool kvio can allocate or wrap.
 */
package io.kvio;

import java.util.Objects;

public final class PoolSpec {
    private final PoolKind kind;
    private final KvLayout layout;
    private final long numLayers;
    private final long numPages;
    private final long pageSize;
    private final long headNum;
    private final long headBytes;
    private final long componentBytes;

    private PoolSpec(Builder b) {
        this.kind = Objects.requireNonNull(b.kind, "kind");
        this.layout = Objects.requireNonNull(b.layout, "layout");
        this.numLayers = b.layers;
        this.numPages = b.pages;
        this.pageSize = b.pageSize;
        this.headNum = b.heads;
        this.headBytes = b.headBytes;
        try {
            this.componentBytes = NativeBridge.componentBytes(this);
        } catch (KvioException e) {
            throw builderNames(e, "");
        }
    }

    /** The native spec fields and PoolSpec.Builder's methods that set them. */
    private static final String[][] FIELDS = {
        {"num_layers", "layers"},
        {"num_pages", "pages"},
        {"page_size", "pageSize"},
        {"head_num", "heads"},
        {"head_bytes", "headBytes"}
    };

    /**
     * The native spec message with the builder's method names in place of the C struct's fields,
     * and for a missing value the call that sets it ({@code alternative} is appended to it).
     */
    static KvioException builderNames(KvioException e, String alternative) {
        return builderNames(e, alternative, FIELDS);
    }

    /**
     * As {@link #builderNames(KvioException, String)} with another builder's table: each row is
     * {native field, the builder's name for it, the call that sets it}; rows are applied in order
     * (list a field before any field whose name is a suffix of it, e.g. host_num_layers before
     * num_layers).
     */
    static KvioException builderNames(KvioException e, String alternative, String[][] fields) {
        String m = e.getMessage();
        if (m == null) {
            return e;
        }
        String r = m;
        for (String[] f : fields) {
            if (r.startsWith(f[0] + " must be at least 1")) {
                r = r + ": call " + (f.length > 2 ? f[2] : f[1] + "(n)") + alternative;
            }
            r = r.replace(f[0], f[1]);
        }
        return KvioException.reworded(e, r);
    }

    /**
     * A builder with kind {@link PoolKind#MHA} and layout {@link KvLayout#LAYER_FIRST}; an MLA pool
     * calls {@code kind(PoolKind.MLA)} (see {@link Builder}).
     */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder preset with this spec's values. */
    public Builder toBuilder() {
        return new Builder()
                .kind(kind)
                .layout(layout)
                .layers(numLayers)
                .pages(numPages)
                .pageSize(pageSize)
                .heads(headNum)
                .headBytes(headBytes);
    }

    public PoolKind kind() {
        return kind;
    }

    public KvLayout layout() {
        return layout;
    }

    public long numLayers() {
        return numLayers;
    }

    public long numPages() {
        return numPages;
    }

    public long pageSize() {
        return pageSize;
    }

    public long headNum() {
        return headNum;
    }

    public long headBytes() {
        return headBytes;
    }

    /** Token slots: numPages * pageSize. */
    public long tokens() {
        return numPages * pageSize;
    }

    /** Bytes of one (component, layer, token) row: headNum * headBytes. */
    public long rowBytes() {
        return headNum * headBytes;
    }

    /** Bytes one component occupies (kvio_pool_component_bytes). */
    public long componentBytes() {
        return componentBytes;
    }

    /** Bytes of all components: componentBytes * kind.components(). */
    public long totalBytes() {
        return componentBytes * kind.components();
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof PoolSpec)) {
            return false;
        }
        PoolSpec s = (PoolSpec) o;
        return kind == s.kind
                && layout == s.layout
                && numLayers == s.numLayers
                && numPages == s.numPages
                && pageSize == s.pageSize
                && headNum == s.headNum
                && headBytes == s.headBytes;
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, layout, numLayers, numPages, pageSize, headNum, headBytes);
    }

    @Override
    public String toString() {
        return "PoolSpec{kind="
                + kind.userName()
                + ", layout="
                + layout.userName()
                + " "
                + layout.shape()
                + ", layers="
                + numLayers
                + ", pages="
                + numPages
                + ", pageSize="
                + pageSize
                + ", heads="
                + headNum
                + ", headBytes="
                + headBytes
                + "}";
    }

    /**
     * Defaults: kind {@link PoolKind#MHA} (K and V per token) and layout {@link
     * KvLayout#LAYER_FIRST}; the sizes must be set (each at least 1). An MLA model's pool (one
     * latent component per token) must call {@code kind(PoolKind.MLA)}: left at MHA, the spec
     * describes twice the bytes per token. The fields are package-private for HostKvPool.Builder,
     * which keeps its geometry in one of these.
     */
    public static final class Builder {
        PoolKind kind = PoolKind.MHA;
        KvLayout layout = KvLayout.LAYER_FIRST;
        long layers;
        long pages;
        long pageSize;
        long heads;
        long headBytes;

        private Builder() {}

        /** The pool kind; {@link PoolKind#MHA} unless set (MLA models: {@link PoolKind#MLA}). */
        public Builder kind(PoolKind kind) {
            this.kind = Objects.requireNonNull(kind, "kind");
            return this;
        }

        /** The memory layout; {@link KvLayout#LAYER_FIRST} unless set. */
        public Builder layout(KvLayout layout) {
            this.layout = Objects.requireNonNull(layout, "layout");
            return this;
        }

        public Builder layers(long layers) {
            this.layers = layers;
            return this;
        }

        public Builder pages(long pages) {
            this.pages = pages;
            return this;
        }

        public Builder pageSize(long pageSize) {
            this.pageSize = pageSize;
            return this;
        }

        public Builder heads(long heads) {
            this.heads = heads;
            return this;
        }

        public Builder headBytes(long headBytes) {
            this.headBytes = headBytes;
            return this;
        }

        /**
         * Validates natively: KvioInvalidArgumentException / KvioUnsupportedException with the
         * reason.
         */
        public PoolSpec build() {
            return new PoolSpec(this);
        }
    }
}
