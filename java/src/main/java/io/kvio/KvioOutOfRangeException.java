/*
 * An index, layer or region outside its pool (status OUT_OF_RANGE).
 */
package io.kvio;

public class KvioOutOfRangeException extends KvioException {
    private static final long serialVersionUID = 1L;

    public KvioOutOfRangeException(String message) {
        super(Status.OUT_OF_RANGE, message);
    }
}
