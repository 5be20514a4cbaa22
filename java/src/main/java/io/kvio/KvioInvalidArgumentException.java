/*
 * A malformed request: lengths, sizes, names or geometry that cannot be right (status INVALID_ARGUMENT).
 */
package io.kvio;

public class KvioInvalidArgumentException extends KvioException {
    private static final long serialVersionUID = 1L;

    public KvioInvalidArgumentException(String message) {
        super(Status.INVALID_ARGUMENT, message);
    }
}
