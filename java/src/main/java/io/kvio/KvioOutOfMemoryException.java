/*
 * kvio could not allocate host or device memory (status OUT_OF_MEMORY).
 */
package io.kvio;

public class KvioOutOfMemoryException extends KvioException {
    private static final long serialVersionUID = 1L;

    public KvioOutOfMemoryException(String message) {
        super(Status.OUT_OF_MEMORY, message);
    }
}
