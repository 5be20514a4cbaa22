/**
 * kvio's Java API: KV pools in accelerator and host memory ({@link io.kvio.DeviceKvPool}, {@link
 * io.kvio.HostKvPool}), the executors that move data between them ({@link io.kvio.KvioExecutor}),
 * the index lists that say which token slots ({@link io.kvio.TokenIndices}) and the handles of
 * submitted transfers ({@link io.kvio.Transfer}).
 *
 * <p><b>Threads.</b>
 *
 * <ul>
 *   <li>Pools, executors, index lists and transfers may be used from any number of threads at once:
 *       several threads may submit transfers with the same pools on the same executor, and any
 *       thread may await, poll or close a transfer another one submitted.
 *   <li>Transfers on one executor run in submission order; between threads, that is the order in
 *       which their jobs reached the executor, after kvio checked and planned them (a large
 *       transfer whose submit began first may be queued after a small one submitted meanwhile),
 *       with no further guarantee. kvio checks the slots <i>within</i> one transfer (duplicate
 *       destinations, overlapping source and destination); two transfers in flight at once that
 *       write the same slots, or that read slots another writes, are the caller's to order (await
 *       the first, or submit both on one executor).
 *   <li>Closing a pool or an executor while another thread submits with it is safe: the submit
 *       either goes through before the close (and the transfer completes; see {@link
 *       io.kvio.KvPool#close()}) or throws {@link io.kvio.KvioClosedException}. An index list is
 *       different: submit (and its get and toString) read its memory without holding it, so close a
 *       {@link io.kvio.TokenIndices} only once the calls that use it have returned (a transfer does
 *       not need it after its submit returns).
 *   <li>Builders ({@link io.kvio.PoolSpec.Builder}, {@link io.kvio.HostKvPool.Builder}) and
 *       requests ({@link io.kvio.HostKvPool.TransferRequest}, {@link io.kvio.Kvio.Request}) are not
 *       thread-safe: one thread configures and submits each.
 *   <li>ByteBuffers from {@link io.kvio.KvPool#buffer()} and {@link io.kvio.KvPool#slice} are
 *       ordinary direct buffers: their position and limit are not thread-safe, and their bytes are
 *       not ordered with transfers in flight (await a transfer before reading what it wrote).
 * </ul>
 *
 * <p><b>Errors.</b> Every refusal is a {@link io.kvio.KvioException} naming the argument, the bad
 * value and what is valid, with a subclass per status callers handle differently; a null argument
 * is a NullPointerException whose message names the argument (the parameter, or the setter that
 * took it, e.g. "hostIndices"). A refused call changes no byte of any pool. The subclasses:
 *
 * <ul>
 *   <li>{@link io.kvio.KvioInvalidArgumentException}: a value no call of this kind accepts (an
 *       unknown name, a negative size, mismatched lengths, a device number that does not exist).
 *   <li>{@link io.kvio.KvioOutOfRangeException}: an index or layer outside the pool.
 *   <li>{@link io.kvio.KvioUnsupportedException}: a valid request this io backend, layout or memory
 *       cannot serve (a device number other than {@link io.kvio.Kvio#HOST_DEVICE} on cpu, which has
 *       no devices; pageable memory on a device backend); the message names what can.
 *   <li>{@link io.kvio.KvioUnavailableException}: the backend's driver or device is missing here.
 *   <li>{@link io.kvio.KvioClosedException}: a closed pool, executor, transfer or index list.
 *   <li>{@link io.kvio.KvioOutOfMemoryException}: host or device memory (or the handles kvio may
 *       hold open at once) ran out.
 *   <li>{@link io.kvio.KvioBackendException}: the device runtime failed while moving bytes.
 * </ul>
 */
package io.kvio;
