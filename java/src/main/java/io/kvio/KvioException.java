/*
 * The root of kvio's exceptions: every failure of a native call or of the Java-side validation
 * is a KvioException carrying a Status (the native kvio_status) and a message that names the
 * argument, the bad value and what is valid instead. Subclasses exist for the statuses callers
 * handle differently; TIMEOUT and INTERNAL are plain KvioExceptions. A null argument is the one
 * exception to this, as in the JDK: a NullPointerException whose message names the argument.
 */
package io.kvio;

public class KvioException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * The native status codes (kvio.h, kvio_status), without OK. {@link #code()} is the native
     * value.
     */
    public enum Status {
        INVALID_ARGUMENT(1),
        OUT_OF_RANGE(2),
        UNSUPPORTED(3),
        UNAVAILABLE(4),
        CLOSED(5),
        OUT_OF_MEMORY(6),
        BACKEND_ERROR(7),
        TIMEOUT(8),
        INTERNAL(9);

        private final int code;

        Status(int code) {
            this.code = code;
        }

        /** The native kvio_status value. */
        public int code() {
            return code;
        }

        /** The status with native value {@code code}; INTERNAL for a value kvio does not define. */
        public static Status of(int code) {
            for (Status s : values()) {
                if (s.code == code) {
                    return s;
                }
            }
            return INTERNAL;
        }
    }

    private final Status status;

    public KvioException(Status status, String message) {
        super(message);
        this.status = status;
    }

    public KvioException(Status status, String message, Throwable cause) {
        super(message, cause);
        this.status = status;
    }

    public Status status() {
        return status;
    }

    /**
     * {@code e} with its message reworded to {@code message} (the caller's names for native ones):
     * {@code e} itself when the message is unchanged, else an exception of the same type caused by
     * {@code e}.
     */
    static KvioException reworded(KvioException e, String message) {
        if (message == null || message.equals(e.getMessage())) {
            return e;
        }
        KvioException out = of(e.status(), message);
        out.initCause(e);
        return out;
    }

    /**
     * {@code e} with native names in its message replaced by the caller's: {@code pairs} holds
     * pairs, native name then the caller's, applied in order (list a name before any name that ends
     * it: host_num_layers before num_layers); as {@link #reworded}.
     */
    static KvioException renamed(KvioException e, String... pairs) {
        String m = e.getMessage();
        if (m == null) {
            return e;
        }
        String r = m;
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            r = r.replace(pairs[i], pairs[i + 1]);
        }
        return reworded(e, r);
    }

    /** The exception type for {@code status}, carrying {@code message}. */
    static KvioException of(Status status, String message) {
        switch (status) {
            case INVALID_ARGUMENT:
                return new KvioInvalidArgumentException(message);
            case OUT_OF_RANGE:
                return new KvioOutOfRangeException(message);
            case UNSUPPORTED:
                return new KvioUnsupportedException(message);
            case UNAVAILABLE:
                return new KvioUnavailableException(message);
            case CLOSED:
                return new KvioClosedException(message);
            case OUT_OF_MEMORY:
                return new KvioOutOfMemoryException(message);
            case BACKEND_ERROR:
                return new KvioBackendException(message);
            default:
                return new KvioException(status, message);
        }
    }
}
