/*
 * kvio C ABI: the one native interface of kvio. The Java bridge (JavaCPP) binds exactly these
 * functions, and the C++ API (kvio.hpp) is a header-only RAII layer over them.
 *
 * Conventions:
 *  - Every function that can fail returns a kvio_status; on failure, kvio_last_error() returns
 *    a message (thread-local, valid until the next kvio call on the same thread) that names
 *    the argument, the bad value and what is valid. No C++ exception crosses this boundary.
 *  - Objects are named by 64-bit handles (never 0), looked up in a registry, so a closed or
 *    foreign handle is reported as KVIO_STATUS_CLOSED / KVIO_STATUS_INVALID_ARGUMENT instead
 *    of being dereferenced. At most 2^24 handles of each type (pools, executors, transfers) are
 *    open at once: a function that opens one (kvio_pool_allocate* and kvio_pool_wrap*,
 *    kvio_executor_create*, kvio_submit*) returns KVIO_STATUS_OUT_OF_MEMORY past that, and
 *    leaves nothing behind (no pool, no executor, no byte moved); the message names the handle
 *    type, the limit and what to close (a transfer: kvio_transfer_close once it completed).
 *  - A rejected call changes no byte of any pool: all validation runs before any copy starts.
 *  - The header is C99 (stdint.h types, trailing commas in enumerator lists) and C++; C users
 *    link libkvio like any shared library (scripts/check-cpp-package.sh builds
 *    examples/c-consumer as -std=c99 -pedantic against the installed package).
 *  - Sizes and offsets are bytes; token indices are slot numbers (page * page_size + slot).
 *  - Any function may be called while the calling thread exits (from a pthread-key destructor,
 *    a thread_local object's destructor, an atexit handler or a static destructor): kvio's
 *    per-thread state is built for it (a message then keeps its first 511 bytes at most).
 *  - Compatibility: the soname carries the minor version (libkvio.so.0.2) while the version is
 *    0.x, and a 0.x minor version may change the ABI. The structs passed in by pointer without
 *    a size field (kvio_pool_spec, kvio_transfer_desc, kvio_support_query, kvio_copy2d) keep
 *    their layout for good: inputs that later versions add come as new entry points or in an
 *    extensible struct that carries its own size (kvio_submit_options), and structs kvio fills
 *    carry reserved space (kvio_transfer_info), so a caller built against an older header keeps
 *    working. The kvio_debug_* arrays are as long as their comments say, in every version.
 */
#ifndef KVIO_KVIO_H_
#define KVIO_KVIO_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define KVIO_API __declspec(dllexport)
#else
#define KVIO_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header, for #if checks, and as kvio_version() returns it (the library's). */
#define KVIO_VERSION_MAJOR 0
#define KVIO_VERSION_MINOR 2
#define KVIO_VERSION_PATCH 0
#define KVIO_VERSION_STRING "0.2.0"

/* The enumerations below (statuses, pool kinds, layouts, io backends, granularities, memory kinds,
 * name tables) are generated from kvio_enums.def, which lists each value with its number, the
 * name users type and what it means; KVIO_<TABLE>_COUNT is one past the last value. */
typedef int32_t kvio_status;
enum {
#define KVIO_DEF_STATUS(id, value) KVIO_STATUS_##id = value,
#include "kvio_enums.def"
};

/* Pool kind: how many components a token row has (KVIO_KIND_MHA: K and V; KVIO_KIND_MLA: one
 * latent). */
enum {
#define KVIO_DEF_KIND(id, cpp, value, name) KVIO_KIND_##id = value,
#include "kvio_enums.def"
  KVIO_KIND_COUNT
};

/* Host layouts of the reference (sglang HiCache), with the shape of one component:
 *   layer_first        [L, P*ps, H, D]   token rows of one layer contiguous
 *   page_first         [P*ps, L, H, D]   token-major ("page_first" is the reference's name)
 *   page_first_direct  [P, L, ps, H, D]  one (page, layer) block contiguous
 *   page_head          [P, H, ps, L, D]  one (page, head) block contiguous (MHA only)
 * Device pools are layer_first; with per-layer pointer tables or one buffer per component
 * (the Ascend 5-D [L, P, ps, H, D] device layout is layer_first per component). */
enum {
#define KVIO_DEF_LAYOUT(id, cpp, value, name) KVIO_LAYOUT_##id = value,
#include "kvio_enums.def"
  KVIO_LAYOUT_COUNT
};

/* IO backends (kvio_enums.def says what each is; kvio_backend_available, whether it is here). */
enum {
#define KVIO_DEF_BACKEND(id, cpp, value, name) KVIO_BACKEND_##id = value,
#include "kvio_enums.def"
  KVIO_BACKEND_COUNT
};

/* Transfer granularity, as the host pool entry points use it. */
enum {
#define KVIO_DEF_GRANULARITY(id, cpp, value, name) KVIO_GRANULARITY_##id = value,
#include "kvio_enums.def"
  KVIO_GRANULARITY_COUNT
};

/* Name tables: which enum a string or value belongs to (KVIO_NAME_MEMORY: the memory kinds,
 * KVIO_MEMORY_*, "host", "host_pinned", "cuda_device", ...). */
enum {
#define KVIO_DEF_NAME_TABLE(id, value, what) KVIO_NAME_##id = value,
#include "kvio_enums.def"
  KVIO_NAME_COUNT
};

/* The geometry of a pool. Bytes of one (component, layer, token) row = head_num * head_bytes. */
typedef struct kvio_pool_spec {
  int32_t kind;       /* KVIO_KIND_* */
  int32_t layout;     /* KVIO_LAYOUT_* */
  int64_t num_layers; /* layers held by this pool */
  int64_t num_pages;  /* capacity in pages; token slots = num_pages * page_size */
  int64_t page_size;  /* tokens per page */
  int64_t head_num;   /* KV heads per row (MLA: 1, its latent row; more only widens the row) */
  int64_t head_bytes; /* bytes per head: head_dim * dtype size (MLA: kv_cache_dim * size) */
} kvio_pool_spec;

/* A transfer: for each index pair i, for each layer j < num_layers, for each component,
 * copy the row of token src_indices[i] in src layer src_layer_start + j to token
 * dst_indices[i] in dst layer dst_layer_start + j. Index arrays are read during submit only. */
typedef struct kvio_transfer_desc {
  uint64_t src_pool;
  uint64_t dst_pool;
  const int64_t* src_indices;
  const int64_t* dst_indices;
  int64_t num_indices;
  int64_t src_layer_start;
  int64_t dst_layer_start;
  int64_t num_layers;
} kvio_transfer_desc;

/* A configuration to check against the support rules (see kvio_check_support). */
typedef struct kvio_support_query {
  int32_t kind;
  int32_t layout; /* host layout */
  int32_t io_backend;
  int32_t granularity; /* KVIO_GRANULARITY_* */
  int64_t head_num;
  int64_t head_bytes;
  int64_t page_size;
  int64_t host_num_layers;    /* layers the host pool holds */
  int64_t device_num_layers;  /* layers of the device pool (1 to 2^20, as host_num_layers) */
  int64_t device_layer_start; /* first device layer the host pool holds (layer sharding) */
} kvio_support_query;

/* One 2-D copy of the plan: height rows of width bytes; row r moves
 * [src + r*src_pitch, +width) to [dst + r*dst_pitch, +width). height 1 = a 1-D copy. Pitches
 * are at least the width (a 1-D copy's equal it), so a 2-D copy call takes any copy as it is. */
typedef struct kvio_copy2d {
  uint64_t src;
  uint64_t dst;
  uint64_t width;
  uint64_t height;
  uint64_t src_pitch;
  uint64_t dst_pitch;
} kvio_copy2d;

/* ---- errors, names, version ---- */
KVIO_API const char* kvio_last_error(void);
/* The status of the failure kvio_last_error() describes (thread-local, as it is; OK before any
 * failure on this thread): for the functions that answer with a value instead of a status
 * (kvio_executor_auto_calibration returns NULL and this says why: CLOSED, INVALID_ARGUMENT,
 * UNSUPPORTED for an executor that is not 'auto', UNAVAILABLE; kvio_name returns NULL for
 * INVALID_ARGUMENT). */
KVIO_API kvio_status kvio_last_status(void);
KVIO_API const char* kvio_version(void);
KVIO_API const char* kvio_status_name(kvio_status status);
/* The string users type for value `value` of name table `table`; NULL for an unknown table or
 * value, and kvio_last_status() is then INVALID_ARGUMENT, kvio_last_error() naming the argument
 * and the valid values. */
KVIO_API const char* kvio_name(int32_t table, int32_t value);
/* Parses a user string (exact, case-sensitive, as the reference's flags). On failure the error
 * lists the valid values and the nearest match, if one is close; an input longer than 64
 * characters is quoted by its first 64 and its length, with no suggestion. */
KVIO_API kvio_status kvio_parse_name(int32_t table, const char* text, int32_t* value_out);

/* ---- support rules and backends ---- */
/* KVIO_STATUS_OK if the configuration works on this machine and build; otherwise the status
 * says why (UNAVAILABLE: backend absent; UNSUPPORTED / INVALID_ARGUMENT / OUT_OF_RANGE) and
 * kvio_last_error() says what is wrong and what is valid instead. The query names no memory:
 * whether an executor moves the pools' kinds of memory (cpu moves host memory only) is checked,
 * once the pools exist, by kvio_check_transfer with num_indices 0, which needs no index (the Java
 * HostKvPool builder refuses such a pairing when it is built). */
KVIO_API kvio_status kvio_check_support(const kvio_support_query* query);
/* KVIO_STATUS_OK if the backend can run here, else UNAVAILABLE with the cause. */
KVIO_API kvio_status kvio_backend_available(int32_t io_backend);

/* ---- pools ---- */
/* Bytes one component of a pool with this spec occupies (and checks the spec). */
KVIO_API kvio_status kvio_pool_component_bytes(const kvio_pool_spec* spec, uint64_t* bytes_out);
/* Allocates host memory for the pool (2 MiB aligned, transparent huge pages advised, zeroed).
 * Components lie one after the other: component c starts at c * component_bytes. */
KVIO_API kvio_status kvio_pool_allocate(const kvio_pool_spec* spec, uint64_t* pool_out);
/* Wraps caller-owned memory: one region of size_bytes holding all components in order.
 * The wraps take the sizes given (size_bytes, bytes_each) as the pool's memory: the checks that
 * a pool's buffers are distinct and that a transfer's two pools do not share memory compare
 * those ranges, so pass the bytes the spec needs (kvio_pool_component_bytes; a layer's for a
 * layer table), not a larger capacity that reaches into a neighbour's memory. Memory kvio
 * allocated for another pool (kvio_pool_region) may be wrapped by any wrap function: the new pool
 * then holds that allocation, which is freed when the last pool over it is released, not when
 * the pool that allocated it closes (docs/memory-lifetime.md). */
KVIO_API kvio_status kvio_pool_wrap(const kvio_pool_spec* spec, uint64_t address,
                                    uint64_t size_bytes, uint64_t* pool_out);
/* Wraps caller-owned memory, one buffer per component (e.g. separate K and V tensors, or the
 * Ascend 5-D per-component buffers), each of at least component_bytes. The buffers
 * [component_addresses[c], +bytes_each) must not overlap each other (INVALID_ARGUMENT naming
 * both entries): a pool's buffers are distinct memory. */
KVIO_API kvio_status kvio_pool_wrap_components(const kvio_pool_spec* spec,
                                               const uint64_t* component_addresses,
                                               int32_t num_components, uint64_t bytes_each,
                                               uint64_t* pool_out);
/* Wraps caller-owned per-layer buffers (layer_first only): table[c * num_layers + l] is the
 * base of component c, layer l, each at least num_pages * page_size * row bytes long. The
 * buffers [layer_addresses[i], +bytes_each) must not overlap each other (INVALID_ARGUMENT naming
 * both entries): a pool's buffers are distinct memory, which the check that a transfer within one
 * pool does not read what it writes relies on. */
KVIO_API kvio_status kvio_pool_wrap_layer_table(const kvio_pool_spec* spec,
                                                const uint64_t* layer_addresses,
                                                int64_t num_entries, uint64_t bytes_each,
                                                uint64_t* pool_out);
/* Base address and size of memory region `region` of the pool, and how many regions it has
 * (1 for allocated and wrapped pools, one per component or per layer for the others; region 0
 * always exists, so region 0 asks for the count). Each output may be NULL. On an error
 * (OUT_OF_RANGE for a region outside 0 to count - 1) no output is written. */
KVIO_API kvio_status kvio_pool_region(uint64_t pool, int64_t region, uint64_t* address_out,
                                      uint64_t* bytes_out, int64_t* num_regions_out);
KVIO_API kvio_status kvio_pool_get_spec(uint64_t pool, kvio_pool_spec* spec_out);
/* Closes the handle (docs/memory-lifetime.md). kvio's use of the pool's memory ends when no
 * transfer submitted with the pool is still running: memory kvio allocated is freed (once no
 * other pool that wraps part of it is open either: see kvio_pool_wrap) and kvio's
 * registration of wrapped caller memory (KVIO_MEMORY_HOST_PINNED,
 * KVIO_MEMORY_ASCEND_HOST_PINNED) ends.
 *  - No such transfer running (every one completed, waited for or not) and no other kvio call
 *    with the pool running on another thread (a submit being checked, a kvio_pool_copy, a
 *    kvio_pool_prefault): this happens before kvio_pool_close returns, so the caller may free
 *    or reuse wrapped memory right after. Such a concurrent call holds the pool until it
 *    returns: where other threads may still use the handle, kvio_pool_close_wait tells when the
 *    memory may be freed.
 *  - Transfers still running: it happens when the last of them completes (kvio releases the
 *    memory in whichever call first sees that transfer complete). Until then the memory must
 *    stay valid and untouched; kvio_pool_close_wait tells when it may be freed.
 * It does not fail for lack of memory (CLOSED and INVALID_ARGUMENT for a bad handle only). */
KVIO_API kvio_status kvio_pool_close(uint64_t pool);
/* Closes the handle if it is still open (as kvio_pool_close), then waits until kvio no longer
 * uses the pool's memory through this pool: every transfer submitted with the pool has
 * completed, the memory kvio allocated is freed (or held only by other pools that wrap part of
 * it, kvio_pool_wrap: while such a pool is open, or closed with transfers of its own still
 * running, those transfers may still use that memory; wait for that pool too) and kvio's
 * registration of wrapped memory has ended.
 * timeout_ns < 0 waits as long as that takes; 0 only checks; > 0 waits at most that long.
 * Returns KVIO_STATUS_OK once that is so: wrapped memory may be freed. KVIO_STATUS_TIMEOUT if
 * a transfer was still running at the deadline: the handle is closed all the same; call
 * kvio_pool_close_wait again with the same handle to wait more, and do not free the memory
 * before it returns OK. A pool closed earlier may be waited for with its old handle (OK at once
 * when its memory was released already); KVIO_STATUS_CLOSED only for a pool handle never opened
 * (INVALID_ARGUMENT for a value that is not a pool handle at all). */
KVIO_API kvio_status kvio_pool_close_wait(uint64_t pool, int64_t timeout_ns);

/* ---- executors and transfers ----
 * fork(): in a child process, an executor created before the fork (its threads, or its device
 * stream, stayed in the parent) and a transfer in flight at the fork (it never completes there)
 * answer KVIO_STATUS_UNAVAILABLE, saying so, to every call but their close, which releases the
 * handle only (kvio_executor_close does not drain or stop the parent's threads); so does
 * kvio_pool_close_wait of a pool such a transfer uses. Pools of host memory are the child's copy
 * and may be used with an executor created in the child. Device memory and device executors
 * follow the vendor runtime's rules (CUDA is not usable in a child of a process that used it).
 * Fork while no transfer runs and no other thread is inside a kvio call: a lock such a thread
 * holds at the fork stays held in the child (kvio takes only the lock of its shared plan storage,
 * which its io threads take after each job, around fork; not those of its handle registries,
 * its host registration registries, or each pool, executor and transfer). */
/* threads: the cpu backend's io threads (and auto's where it is cpu), 1 to 1024; <= 0: one per
 * online core, at most 1024. INVALID_ARGUMENT above 1024, for every io backend and on every
 * machine (also where auto runs on a GPU); the device backends ignore a count up to 1024. (The
 * Java binding is stricter: KvioExecutor.create refuses a count above 0 for a backend without io
 * threads, where a second int argument is easily meant as a device ordinal.) */
KVIO_API kvio_status kvio_executor_create(int32_t io_backend, int32_t threads,
                                          uint64_t* executor_out);
/* The executor's io threads (cpu, and auto without a GPU), or 1 (the device backends). */
KVIO_API kvio_status kvio_executor_threads(uint64_t executor, int32_t* threads_out);
/* The io backend the executor was created for (KVIO_BACKEND_*: 'auto' stays KVIO_BACKEND_AUTO;
 * kvio_transfer_info.chosen_backend says what ran a transfer). */
KVIO_API kvio_status kvio_executor_backend(uint64_t executor, int32_t* io_backend_out);
/* Releases the handle and waits for submitted transfers. Every transfer it accepted is done
 * when this returns, including those whose submit ran on another thread as it was called; a
 * submit that loses that race answers CLOSED and queues nothing. The executor's resources (the
 * cpu backend's io threads, a stream kvio created) go when the last call that found the handle
 * before it was released returns: usually before this returns, else right after that call (a
 * kvio_executor_threads on another thread, say). */
KVIO_API kvio_status kvio_executor_close(uint64_t executor);

/* Validates, plans and enqueues a transfer (kvio_submit_with is the general form: this is it
 * with no options). Transfers on one executor run in submission
 * order (like a stream); small ones may complete before this returns (the cpu backend, and
 * 'auto' where it runs cpu, copies a transfer of up to 512 KiB submitted to an idle executor on
 * the calling thread, and one of up to 8 MiB partly, beside its workers, until every piece of it
 * is taken; KVIO_SUBMIT_QUEUE_ONLY keeps every copy off the calling thread; 'auto' without a GPU
 * but with an NPU first waits, in this call, for the transfers it gave its other candidate when
 * a transfer goes to cpu after kernel_ascend ones or the reverse, to keep them in order). Refused
 * before any byte moves: more index pairs than the dst pool has token slots (INVALID_ARGUMENT,
 * before the arrays are read), indices out of range, duplicate destination slots, source and
 * destination slots overlapping in the same layers of one pool, and two distinct pools whose memory
 * regions overlap (aliasing views of one buffer; host memory of every kind, pageable or pinned by
 * CUDA or ACL for any device, is one address space), whatever the indices. The index arrays must
 * not change while this runs: kvio checks them, then reads them again to plan (or, for 'kernel', to
 * upload them). Indices another thread rewrites meanwhile still never address rows outside the
 * pools (the plan's runs are checked again, and 'kernel' checks the copy it stages for the device:
 * OUT_OF_RANGE), but which rows move is then undefined. A CUDA executor (kernel, direct, staged,
 * auto on a GPU) whose stream is being captured into a CUDA graph, and a kernel_ascend executor
 * (or auto on an NPU) whose stream is being captured into an ACL graph (aclmdlRICaptureBegin;
 * where the runtime has aclmdlRICaptureGetInfo and answers it; the default stream, 0, is not
 * asked), refuse it with UNSUPPORTED: kvio transfers cannot be captured (docs/cuda.md,
 * docs/ascend.md). */
KVIO_API kvio_status kvio_submit(uint64_t executor, const kvio_transfer_desc* desc,
                                 uint64_t* transfer_out);
/* Same, with the descriptor's fields as arguments (what the Java bridge calls). */
KVIO_API kvio_status kvio_submit_args(uint64_t executor, uint64_t src_pool, uint64_t dst_pool,
                                      const int64_t* src_indices, const int64_t* dst_indices,
                                      int64_t num_indices, int64_t src_layer_start,
                                      int64_t dst_layer_start, int64_t num_layers,
                                      uint64_t* transfer_out);
/* Submit flags (kvio_submit_options.flags, kvio_submit_flags, kvio_submit_args_flags; other bits
 * are INVALID_ARGUMENT).
 * KVIO_SUBMIT_OVERLAPS_COMPUTE: the transfer runs beside compute on the same device (e.g. a
 * layer's load during the forward pass); the 'auto' io backend then also gives the copy engine
 * rows of at least direct_row_bytes_overlap (2 KiB) that reach it in copies of at least
 * direct_copy_bytes_overlap (32 KiB), such as a page of one layer (docs/cuda.md). Other
 * backends ignore it.
 * KVIO_SUBMIT_QUEUE_ONLY: the submit only queues the transfer; the calling thread copies nothing
 * (for a thread that must not stall, e.g. an engine's scheduler). Without it the cpu backend
 * copies small transfers to an idle executor on the calling thread (kvio_submit says which),
 * which completes them sooner (a worker's wake-up costs as much as copying a few hundred KiB).
 * The device backends never copy on the calling thread and ignore it. */
#define KVIO_SUBMIT_OVERLAPS_COMPUTE 1u
#define KVIO_SUBMIT_QUEUE_ONLY 2u
KVIO_API kvio_status kvio_submit_flags(uint64_t executor, const kvio_transfer_desc* desc,
                                       uint32_t flags, uint64_t* transfer_out);
KVIO_API kvio_status kvio_submit_args_flags(uint64_t executor, uint64_t src_pool, uint64_t dst_pool,
                                            const int64_t* src_indices, const int64_t* dst_indices,
                                            int64_t num_indices, int64_t src_layer_start,
                                            int64_t dst_layer_start, int64_t num_layers,
                                            uint32_t flags, uint64_t* transfer_out);

/* Where a transfer's index arrays lie (kvio_submit_options.indices_memory). */
enum { KVIO_INDICES_HOST = 0, KVIO_INDICES_DEVICE = 1 };

/* Per-transfer options of kvio_submit_with and kvio_check_transfer_with, all at once. Extensible:
 * the caller sets struct_size to sizeof(kvio_submit_options) as it compiled it, and a later
 * version only appends fields whose value 0 means what a caller that does not know them meant.
 * kvio reads struct_size bytes:
 *  - struct_size below KVIO_SUBMIT_OPTIONS_MIN_SIZE (24, this first version's fields) or above
 *    KVIO_SUBMIT_OPTIONS_MAX_SIZE (4096, a bound against an uninitialised size) is
 *    INVALID_ARGUMENT naming struct_size and that range;
 *  - bytes past the fields this version knows must be 0 (INVALID_ARGUMENT naming the first
 *    non-zero byte's offset): a newer caller asking for something this library cannot do is
 *    refused, never ignored. So a later version lays its fields out with no padding between or
 *    after them (explicit reserved members instead), since padding need not be 0 in a struct a
 *    caller filled field by field.
 * Zero-initialised with struct_size set (KVIO_SUBMIT_OPTIONS_INIT) is kvio_submit: no flag, the
 * executor's launch shape, host indices. */
typedef struct kvio_submit_options {
  uint32_t struct_size;   /* sizeof(kvio_submit_options) as the caller compiled it */
  uint32_t flags;         /* KVIO_SUBMIT_OVERLAPS_COMPUTE | KVIO_SUBMIT_QUEUE_ONLY, or 0 (other
                             bits: INVALID_ARGUMENT) */
  int32_t cta_budget;     /* the copy kernel's thread blocks at most for this transfer (1 to
                             65535; <= 0: the executor's setting) */
  int32_t warps_per_cta;  /* warps per thread block (1 to 32; <= 0: the executor's setting) */
  int32_t indices_memory; /* KVIO_INDICES_HOST or KVIO_INDICES_DEVICE (other values:
                             INVALID_ARGUMENT) */
  int32_t reserved;       /* must be 0 (INVALID_ARGUMENT otherwise) */
} kvio_submit_options;
#define KVIO_SUBMIT_OPTIONS_MIN_SIZE 24u
#define KVIO_SUBMIT_OPTIONS_MAX_SIZE 4096u
#define KVIO_SUBMIT_OPTIONS_INIT \
  { sizeof(kvio_submit_options), 0u, 0, 0, KVIO_INDICES_HOST, 0 }

/* The general submit: kvio_submit with every per-transfer option at once. options NULL is
 * kvio_submit. The other submit entry points are forms of this one:
 *   kvio_submit, kvio_submit_args          no options;
 *   kvio_submit_flags, kvio_submit_args_flags   flags only;
 *   kvio_submit_launch                     cta_budget and warps_per_cta only;
 *   kvio_submit_device_indices             indices_memory = KVIO_INDICES_DEVICE only.
 * What each option does:
 *  - flags: KVIO_SUBMIT_OVERLAPS_COMPUTE (above): 'auto' reads it; it is recorded in the
 *    transfer's info (overlaps_compute) on every backend. KVIO_SUBMIT_QUEUE_ONLY (above): the
 *    cpu backend (and 'auto' running cpu) copies nothing on the calling thread.
 *  - cta_budget, warps_per_cta: the kernel backend's launch shape for this transfer only; 'auto'
 *    uses it when it gives the transfer to its kernel; the other backends ignore it, but its
 *    limits (65535 CTAs, 32 warps) are checked on every backend (INVALID_ARGUMENT).
 *  - indices_memory KVIO_INDICES_DEVICE: src_indices and dst_indices lie in memory of the
 *    executor's CUDA device, as kvio_submit_device_indices says (the kernel backend, and auto on a
 *    GPU; UNSUPPORTED elsewhere, before any byte moves).
 * The options are checked before the executor, the pools and the indices: struct_size, the bytes
 * past the known fields, flags, indices_memory and reserved right after desc, the launch shape
 * after transfer_out (as kvio_submit_launch does). Every refusal leaves *transfer_out as it was
 * and moves no byte. */
KVIO_API kvio_status kvio_submit_with(uint64_t executor, const kvio_transfer_desc* desc,
                                      const kvio_submit_options* options, uint64_t* transfer_out);
/* Runs kvio_submit_with's checks and submits nothing, as kvio_check_transfer (below) does for
 * kvio_submit_flags: OK when they pass, else the status and message the submission would give; no
 * byte moves either way. options NULL: the defaults. num_indices may be 0 (the index arrays are
 * then not looked at). With indices_memory KVIO_INDICES_DEVICE the index arrays are never read
 * (they are device memory): an executor that does not take device indices is UNSUPPORTED, and
 * for one that does, when num_indices > 0, the pairs' count against the dst pool's token slots,
 * the arrays' alignment and their first and last
 * entries' memory (of the executor's device, not of a CUDA context the caller created: see
 * kvio_submit_device_indices); their values only the kernel checks, when the transfer runs.
 * Whether a CUDA or Ascend executor's stream is being captured is asked by the submit only (the
 * capture may begin or end between the two). */
KVIO_API kvio_status kvio_check_transfer_with(uint64_t executor, const kvio_transfer_desc* desc,
                                              const kvio_submit_options* options);
/* kvio_check_transfer_with with only flags set: runs kvio_submit_flags' checks of its arguments
 * (host-resident indices) and submits nothing:
 * OK when they pass, else the status and message the submission would give; no byte moves either
 * way. A later submit may still fail for what this does not check: a null transfer_out, memory
 * to plan it in, or no transfer handle left (2^24 open). num_indices may be 0, which kvio_submit
 * refuses: the index arrays are then not read, and every check that needs no index runs (the
 * handles, the flags, the executor and the pools' kinds of memory, the pools' kinds and row
 * geometry, the layer ranges, pools that share memory). A negative num_indices is
 * INVALID_ARGUMENT with this entry point's range ("at least 0"; kvio_submit's says "at least 1").
 * The Java API checks its empty transfers with it. */
KVIO_API kvio_status kvio_check_transfer(uint64_t executor, const kvio_transfer_desc* desc,
                                         uint32_t flags);
KVIO_API kvio_status kvio_check_transfer_args(uint64_t executor, uint64_t src_pool,
                                              uint64_t dst_pool, const int64_t* src_indices,
                                              const int64_t* dst_indices, int64_t num_indices,
                                              int64_t src_layer_start, int64_t dst_layer_start,
                                              int64_t num_layers, uint32_t flags);
/* timeout_ns < 0 waits forever. Returns the transfer's own status once done, or TIMEOUT. */
KVIO_API kvio_status kvio_transfer_wait(uint64_t transfer, int64_t timeout_ns);
/* 1 if done, 0 if not, negative (-status) for a bad handle. Never waits: done means kvio no
 * longer uses the transfer's pools, so it answers 0 while another thread that saw the transfer
 * complete is still letting go of them (freeing a closed pool's memory, say). */
KVIO_API int32_t kvio_transfer_is_done(uint64_t transfer);
/* The bytes the transfer moves (planned at submit). */
KVIO_API kvio_status kvio_transfer_bytes(uint64_t transfer, uint64_t* bytes_out);
/* Releases the handle without waiting and without cancelling: a running transfer goes on, and
 * its pools stay in use until it completes (kvio_pool_close_wait tells when). */
KVIO_API kvio_status kvio_transfer_close(uint64_t transfer);

/* What a transfer is and how long it took, for observability (the Java API's JDK Flight
 * Recorder event, docs/observability.md). Times are CLOCK_MONOTONIC nanoseconds (System.nanoTime
 * in Java on Linux), recorded only for transfers submitted while kvio_transfer_timing is on:
 * 0 otherwise, and 0 for a time not reached yet (submit_ns, start_ns and end_ns below). */
typedef struct kvio_transfer_info {
  int32_t io_backend; /* KVIO_BACKEND_* of the executor */
  int32_t src_layout; /* KVIO_LAYOUT_* of the pools */
  int32_t dst_layout;
  int32_t src_memory; /* KVIO_MEMORY_* of the pools */
  int32_t dst_memory;
  int32_t components;       /* rows per (token, layer): 2 for mha (K, V), 1 for mla */
  int64_t num_indices;      /* index pairs */
  int64_t num_layers;       /* layers per index pair */
  uint64_t bytes;           /* planned bytes, as kvio_transfer_bytes */
  int64_t copies;           /* 2-D copies of the plan (cpu, direct, kernel_ascend); staged: its
                               copy-engine copies (host runs, one per contiguous host block per
                               chunk, before cuts at allocation boundaries); 0 for kernel */
  int64_t launches;         /* kernel launches: kernel 1, staged one gather/scatter per chunk;
                               0 for cpu, direct and kernel_ascend */
  int64_t submit_ns;        /* the submit call began (before validation and planning) */
  int64_t start_ns;         /* execution began. cpu: the first copy started (a job up to 8 MiB
                               with nothing queued before it is copied by the submitting thread
                               beside the workers, so on either, unless KVIO_SUBMIT_QUEUE_ONLY;
                               else on a worker, after every job
                               queued before it). kernel, direct, staged, auto, kernel_ascend: the
                               work was issued to the stream (device-side queueing behind earlier
                               stream work counts as transfer time, not queue time) */
  int64_t end_ns;           /* kvio saw it complete. cpu: the last copy ended; device backends:
                               the first query, wait or reap that found its event done (so it
                               includes polling latency) */
  int32_t done;             /* 1 once complete (status is final), else 0 */
  int32_t status;           /* the transfer's own status once done, else KVIO_STATUS_OK */
  int32_t chosen_backend;   /* KVIO_BACKEND_* that ran it: what 'auto' chose (kernel, direct,
                               staged; without a GPU cpu, or kernel_ascend for NPU memory);
                               io_backend for the others */
  int32_t overlaps_compute; /* 1 if submitted with KVIO_SUBMIT_OVERLAPS_COMPUTE, else 0 */
  int64_t reserved[6];      /* written as 0. Fields later versions add take these bytes, so the
                               struct keeps its size: a caller built against this header has
                               room for what a newer library writes, and reads 0 from an older
                               one for fields it does not know yet */
} kvio_transfer_info;

/* Fills *info_out (any transfer handle still open, done or not). */
KVIO_API kvio_status kvio_transfer_get_info(uint64_t transfer, kvio_transfer_info* info_out);
/* Turns timestamping of transfers submitted from now on on (enabled != 0) or off, process-wide.
 * Off by default: three clock reads per transfer when on. The Java API turns it on the first
 * time its Flight Recorder event is enabled. */
KVIO_API kvio_status kvio_transfer_timing(int32_t enabled);

/* ---- the planner, exposed for tests, tools and other executors ---- */
/* Writes up to capacity copies of the plan of `desc` into copies_out and their number into
 * count_out (the full count, even when larger than capacity; capacity 0, or copies_out NULL,
 * asks for the count only). Validates like kvio_submit; a negative capacity is
 * INVALID_ARGUMENT. */
KVIO_API kvio_status kvio_plan(const kvio_transfer_desc* desc, kvio_copy2d* copies_out,
                               int64_t capacity, int64_t* count_out);

/* ---- memory kinds and the CUDA backend ----
 * Pools know where their memory lies. The functions above create host pageable pools; the
 * _memory variants take a memory kind:
 *   KVIO_MEMORY_HOST         pageable host memory (cpu backend only)
 *   KVIO_MEMORY_HOST_PINNED  page-locked host memory: kvio_pool_allocate_memory allocates it
 *                            with cudaHostAlloc; the wrap functions register the caller's
 *                            memory with cudaHostRegister (whole pages, in chunks of at most
 *                            1 GiB, a partial first or last page registered on its own; pools
 *                            sharing a page share kvio's registration, which ends when no pool
 *                            uses any of its pages, see kvio_pool_close). Memory
 *                            the caller registered itself is used as is, and never
 *                            unregistered by kvio, only when its registrations provably cover
 *                            the whole region; a partial one is INVALID_ARGUMENT.
 *                            Movable by cpu, kernel, direct, staged and auto (kernel_ascend
 *                            refuses it: UNSUPPORTED). The kernel backend reads
 *                            it through the device address cudaHostGetDevicePointer gives.
 *   KVIO_MEMORY_CUDA_DEVICE  memory of CUDA device `device` (cudaMalloc, zeroed; or wrapped
 *                            caller memory, e.g. a framework's tensors: its first and last
 *                            bytes must be device memory of that device, and not memory of a
 *                            context the caller created that the device's primary context, in
 *                            which kvio works, cannot reach; else INVALID_ARGUMENT). kernel,
 *                            direct, staged and auto only.
 * Backends and memory: cpu moves host memory of either kind; kernel, direct, staged, and auto on
 * a GPU, move pinned host and device memory (pageable host memory is rejected with UNSUPPORTED,
 * never a crash): kernel and auto in every direction, direct host <-> device and device to
 * device (host to host is UNSUPPORTED: CUDA's copies between host buffers are synchronous with
 * the host, not ordered on the stream; auto gives it to kernel), staged host <-> device only;
 * auto without a GPU moves what cpu moves (and Ascend memory, through kernel_ascend, where an NPU
 * is usable). */
enum {
#define KVIO_DEF_MEMORY(id, cpp, value, name) KVIO_MEMORY_##id = value,
#include "kvio_enums.def"
  KVIO_MEMORY_COUNT
};

/* The Ascend kinds (the kernel_ascend backend, docs/ascend.md):
 *   KVIO_MEMORY_ASCEND_DEVICE       memory of Ascend NPU `device` (aclrtMalloc, zeroed with
 *                                   aclrtMemset; or wrapped caller memory, e.g. torch_npu
 *                                   tensors, used as given). Where the runtime has
 *                                   aclrtPointerGetAttributes, a wrapped region whose first or
 *                                   last byte it does not report as DEVICE is refused
 *                                   (INVALID_ARGUMENT). kernel_ascend only.
 *   KVIO_MEMORY_ASCEND_HOST_PINNED  page-locked host memory for the NPU: allocated with
 *                                   aclrtMallocHost, or wrapped caller memory. Where the
 *                                   runtime has aclrtPointerGetAttributes, each wrapped region
 *                                   whose first and last byte it reports as HOST (memory from
 *                                   aclrtMallocHost, e.g. torch_npu's pinned tensors, or
 *                                   registered with ACL by the caller) is used as given: kvio
 *                                   registers nothing and never unregisters or frees it, on any
 *                                   CANN and any OS kernel. Keep it allocated (and registered)
 *                                   until kvio no longer uses the pool. A region reported HOST at
 *                                   one end and UNREGISTERED at the other, or NPU memory, is
 *                                   refused (INVALID_ARGUMENT: each region must lie in one
 *                                   buffer). Memory ACL does not know (UNREGISTERED, e.g. malloc;
 *                                   or every region where the runtime lacks the query or it
 *                                   fails) is pinned by kvio with
 *                                   aclrtHostRegisterV2(ACL_HOST_REG_PINNED) (whole pages,
 *                                   shared by pools sharing a page, ended as for
 *                                   KVIO_MEMORY_HOST_PINNED); that is UNSUPPORTED where the
 *                                   runtime lacks aclrtHostRegisterV2 (aclrtHostRegister does not
 *                                   pin for copies) and on OS kernels 5.10 and older, where CANN
 *                                   documents that pinning pageable memory leads to errors.
 *                                   Pages kvio pinned for another device's open pool are refused
 *                                   (INVALID_ARGUMENT: ACL keeps one process-wide table). Without
 *                                   aclrtPointerGetAttributes, memory the caller registered with
 *                                   ACL itself is refused (INVALID_ARGUMENT: ACL cannot tell kvio
 *                                   what such a registration covers). ACL reports memory the
 *                                   caller registered with aclrtHostRegister (V1), which maps but
 *                                   does not pin, as HOST too: do not wrap it. Movable by
 *                                   kernel_ascend and cpu.
 * kernel_ascend moves between Ascend device memory and Ascend pinned host memory (and device to
 * device); pageable host memory and CUDA memory are rejected with UNSUPPORTED. */

/* device: the CUDA or Ascend device ordinal (ignored for KVIO_MEMORY_HOST). */
KVIO_API kvio_status kvio_pool_allocate_memory(const kvio_pool_spec* spec, int32_t memory_kind,
                                               int32_t device, uint64_t* pool_out);
KVIO_API kvio_status kvio_pool_wrap_memory(const kvio_pool_spec* spec, int32_t memory_kind,
                                           int32_t device, uint64_t address, uint64_t size_bytes,
                                           uint64_t* pool_out);
KVIO_API kvio_status kvio_pool_wrap_components_memory(const kvio_pool_spec* spec,
                                                      int32_t memory_kind, int32_t device,
                                                      const uint64_t* component_addresses,
                                                      int32_t num_components, uint64_t bytes_each,
                                                      uint64_t* pool_out);
KVIO_API kvio_status kvio_pool_wrap_layer_table_memory(const kvio_pool_spec* spec,
                                                       int32_t memory_kind, int32_t device,
                                                       const uint64_t* layer_addresses,
                                                       int64_t num_entries, uint64_t bytes_each,
                                                       uint64_t* pool_out);
KVIO_API kvio_status kvio_pool_memory(uint64_t pool, int32_t* memory_kind_out, int32_t* device_out);

/* Backs every page of a pool's pageable host memory (KVIO_MEMORY_HOST: kvio_pool_allocate's, or
 * wrapped caller memory) with physical memory now, keeping every byte. The kernel maps such
 * memory on first touch, so without this the first transfers into a new pool pay its page faults
 * (docs/benchmarks.md, kvio_first_touch_bench: a 512 MiB host pool's first backup took 4 times
 * as long as its second; prefault and backup together, 0.6 times as long as that first one).
 * Call it at start-up, before the pool's transfers: it is not ordered with them. Uses
 * madvise(MADV_POPULATE_WRITE) (Linux 5.14); on older kernels memory kvio allocated is touched
 * page by page instead (an atomic add of zero to one byte of each), and caller memory is
 * refused (UNSUPPORTED: touch it yourself). Pinned and device memory are backed already: OK,
 * nothing done. OUT_OF_MEMORY when the system cannot back the pages or a write would raise
 * SIGBUS (a hugetlb mapping out of huge pages, a file mapping past the end of its file),
 * INVALID_ARGUMENT for memory that cannot be written (a read-only mapping), BACKEND_ERROR for a
 * hardware-poisoned page, CLOSED for a closed pool; regions before the one named in the message
 * stay backed. The page-by-page fallback cannot report a lack of memory: the kernel's
 * out-of-memory handling answers it. */
KVIO_API kvio_status kvio_pool_prefault(uint64_t pool);

/* Synchronous copy between bytes [offset, offset + bytes) of memory region `region` of a pool
 * (see kvio_pool_region) and ordinary host memory at host_address (pageable is fine), for
 * tests, debugging and warm-up; not a transfer path. Works on pools of every memory kind: a
 * memcpy for host kinds; for KVIO_MEMORY_CUDA_DEVICE a cudaMemcpyAsync on a private stream of
 * the pool's device, synchronized; for KVIO_MEMORY_ASCEND_DEVICE an aclrtMemcpyAsync through a
 * pinned staging buffer on a private stream, synchronized. It returns once the bytes have
 * moved. It is not ordered with transfers in flight: wait for them first.
 * direction: KVIO_COPY_POOL_TO_HOST or KVIO_COPY_HOST_TO_POOL. bytes 0 copies nothing.
 * OUT_OF_RANGE for a region or byte range outside the pool, INVALID_ARGUMENT for a null
 * host_address or an unknown direction, CLOSED for a closed pool. */
enum { KVIO_COPY_POOL_TO_HOST = 0, KVIO_COPY_HOST_TO_POOL = 1 };
KVIO_API kvio_status kvio_pool_copy(uint64_t pool, int64_t region, uint64_t offset,
                                    uint64_t host_address, uint64_t bytes, int32_t direction);

/* Number of CUDA devices. Without a CUDA build, driver or device: UNAVAILABLE, and
 * kvio_last_error() says which (the runtime's own message, e.g. "CUDA driver version is
 * insufficient for CUDA runtime version").
 * kvio's CUDA work reports through kvio statuses, and it reads and clears the calling thread's
 * CUDA last error (cudaGetLastError) around its own calls: a non-sticky error your earlier call
 * left there (a launch with a bad configuration) is gone after a kvio call. Check your own
 * launches before calling kvio. Sticky errors (a context that faulted) stay, and kvio reports
 * them too. */
KVIO_API kvio_status kvio_cuda_device_count(int32_t* count_out);

/* Passing this as `stream` to kvio_executor_create_cuda makes kvio create its own non-blocking
 * stream. Any other value is a cudaStream_t of the executor's device that the caller owns and
 * keeps alive until the executor is closed. 0 is the default stream, as in the CUDA runtime's own
 * calls (the legacy default stream, also cudaStreamLegacy, 0x1; torch's default stream is 0) of
 * the device's primary context, which kvio makes current for its work: the executor's work is
 * ordered with the caller's work there, not with work in a context the caller created. kvio's
 * work runs in the primary context: a stream of another device (by builds with a CUDA 12.8+
 * toolkit) or of a context the caller created (cuCtxCreate; by drivers of CUDA 12.5 or later) is
 * refused with INVALID_ARGUMENT (neither is checked while the stream is being captured). A green
 * context's stream is taken (untested).
 * cudaStreamPerThread (0x2) is refused with INVALID_ARGUMENT: it is another stream on each
 * thread, and an executor orders its transfers on one. */
#define KVIO_CUDA_OWN_STREAM UINT64_MAX

/* A kernel, direct, staged or auto executor on `device` ordering its work on `stream`.
 * cta_budget: thread blocks the copy kernels launch at most (<= 0: the backend's default, kernel
 * 4, staged 8; they share the GPU with the forward pass); warps_per_cta: <= 0: default 16.
 * Ignored by direct. kvio_executor_create(KVIO_BACKEND_KERNEL, _DIRECT or _STAGED, ...) means
 * device 0, own stream, defaults. */
KVIO_API kvio_status kvio_executor_create_cuda(int32_t io_backend, int32_t device, uint64_t stream,
                                               int32_t cta_budget, int32_t warps_per_cta,
                                               uint64_t* executor_out);
/* The 'auto' io backend (docs/cuda.md): per transfer it runs the kernel, direct or staged executor,
 * all on the auto executor's stream, by the mean row size of the transfer's plan (and, for a
 * transfer marked KVIO_SUBMIT_OVERLAPS_COMPUTE, its mean bytes per copy-engine copy) against
 * crossovers. Where no CUDA device is usable, 'auto' is the cpu backend for host memory, and
 * where an Ascend NPU is usable it also gives transfers of Ascend memory to kernel_ascend
 * (kvio_executor_create_on_npu chooses the NPU).
 * kvio_executor_create(KVIO_BACKEND_AUTO, ...) is device 0, own stream;
 * kvio_executor_create_cuda(KVIO_BACKEND_AUTO, ...) chooses the device and stream.
 * Its crossovers start from the file named by the environment variable KVIO_AUTO_CALIBRATION
 * (a regular file of at most 1 MiB, read at executor creation, on a machine without a GPU too;
 * unreadable, not a regular file, larger, or malformed: the creation fails with
 * INVALID_ARGUMENT), else the defaults
 * (H200 figures); KVIO_AUTO_CALIBRATION=measure instead times kernel against direct on the
 * device when the executor is created and takes direct_row_bytes and direct_copy_bytes_overlap
 * from that (a failed sweep fails the creation). This replaces them for
 * transfers submitted after the call; `text` is the calibration file format (one `key = value` a
 * line, `#` comments, no NUL byte; keys direct_row_bytes, direct_row_bytes_overlap,
 * direct_copy_bytes_overlap, staged_min_bytes; values bytes with an optional K/M/G suffix, or
 * never; keys left out keep their default).
 * INVALID_ARGUMENT for a malformed text, UNSUPPORTED for an executor that is not 'auto'. */
KVIO_API kvio_status kvio_executor_set_auto_calibration(uint64_t executor, const char* text);
/* The auto executor's calibration in the file format (its source in a comment), valid until the
 * next kvio call on this thread; NULL for an executor that is not 'auto' (kvio_last_status()
 * UNSUPPORTED), a closed or bad handle (CLOSED, INVALID_ARGUMENT), or a call made while the
 * calling thread exits, after its storage for the text is gone (UNAVAILABLE), kvio_last_error()
 * saying why. */
KVIO_API const char* kvio_executor_auto_calibration(uint64_t executor);
/* Changes the launch shape (CTA budget, warps per CTA; <= 0: the default) of a kernel executor,
 * of an auto executor's kernel candidate, or of a staged executor's gather/scatter kernel, for
 * transfers submitted after this call; UNSUPPORTED for the backends that launch no copy kernel
 * (cpu, direct, kernel_ascend, and auto without a GPU). INVALID_ARGUMENT above 65535 CTAs or 32
 * warps, on every backend (checked first). */
KVIO_API kvio_status kvio_executor_set_launch(uint64_t executor, int32_t cta_budget,
                                              int32_t warps_per_cta);
/* The stream a CUDA executor orders its work on (a cudaStream_t), e.g. to make a consumer
 * stream wait on it. */
KVIO_API kvio_status kvio_executor_cuda_stream(uint64_t executor, uint64_t* stream_out);

/* Like kvio_submit, with the kernel backend's launch shape for this transfer only (the form of
 * kvio_submit_with with only cta_budget and warps_per_cta set): at most
 * cta_budget thread blocks of warps_per_cta warps (<= 0: the executor's setting). 'auto' uses it
 * when it gives the transfer to its kernel; the other backends ignore it. INVALID_ARGUMENT above
 * 65535 CTAs or 32 warps. */
KVIO_API kvio_status kvio_submit_launch(uint64_t executor, const kvio_transfer_desc* desc,
                                        int32_t cta_budget, int32_t warps_per_cta,
                                        uint64_t* transfer_out);
/* Like kvio_submit, with src_indices and dst_indices in memory of the executor's CUDA device (the
 * form of kvio_submit_with with only indices_memory KVIO_INDICES_DEVICE set)
 * (the kernel backend, and auto on a GPU, which gives such transfers to its kernel; UNSUPPORTED
 * elsewhere). They are read by the kernel, so they must stay valid and unchanged
 * until the transfer completes. Refused before anything is launched (INVALID_ARGUMENT): more
 * pairs than the dst pool has token slots (a transfer writes each slot once), arrays
 * that are not 8-byte aligned, any of whose bytes (the first, the last: num_indices - 1, and the
 * first past each allocation they run through) is not memory of the executor's device (host
 * memory; a num_indices past the end of the array; a gap between allocations), or that a CUDA
 * context the caller created holds (cuCtxCreate: kvio runs in the device's primary context,
 * which cannot reach it). The host cannot check the values: the kernel skips every pair with
 * an index outside its pool, and the transfer completes with KVIO_STATUS_OUT_OF_RANGE naming
 * the first bad position. Duplicate destination slots among them are not detected (the rows
 * race), nor, within one pool over overlapping layer ranges, a source slot that is another pair's
 * destination slot (the pairs are copied in parallel: such a row may be read before or after it
 * is written). Host indices are checked for both; with device indices they are the caller's. */
KVIO_API kvio_status kvio_submit_device_indices(uint64_t executor, const kvio_transfer_desc* desc,
                                                uint64_t* transfer_out);
/* The CUDA event (a cudaEvent_t) recorded after a CUDA transfer's work on its stream; another
 * stream can cudaStreamWaitEvent on it, e.g. to start layer i as soon as its load lands.
 * Valid until kvio_transfer_close (kvio then reuses it for later transfers or destroys it):
 * enqueue the wait before closing the transfer. UNSUPPORTED for transfers that did not run on
 * a CUDA executor (cpu, kernel_ascend). The event completes for a transfer that failed too (a
 * call that failed mid-submit, a fault on the device): a stream that waits on it goes ahead on
 * whatever was written, so check the transfer's status (kvio_transfer_wait) before using its
 * destination. */
KVIO_API kvio_status kvio_transfer_cuda_event(uint64_t transfer, uint64_t* event_out);

/* ---- the Ascend backend (docs/ascend.md) ---- */
/* ACL initialisation. kvio's first use of the Ascend runtime (any kernel_ascend call, Ascend
 * memory kinds, kvio_ascend_device_count, kvio_backend_available(KVIO_BACKEND_KERNEL_ASCEND), and
 * kvio_check_support when it lists the backends available here) loads libascendcl.so and calls
 * aclInit(NULL); ACL_ERROR_REPEAT_INITIALIZE (ACL initialised already) is fine. CANN's runtime
 * counts aclInit calls: a call after the first one only adds to the count and returns
 * ACL_ERROR_REPEAT_INITIALIZE without reading its configuration. So initialise ACL (aclInit with
 * your configuration, or import torch_npu) before your first kvio call that uses Ascend;
 * otherwise your later aclInit(config) silently loses its configuration (dump, profiling, ...).
 * kvio never calls aclFinalize nor aclFinalizeReference: its count stays, so an application that
 * ends ACL with aclFinalizeReference sees one reference more than its own (aclFinalize ends ACL
 * whatever the count). Do not finalize ACL while kvio's Ascend executors, pools or transfers are
 * open.
 * Number of Ascend NPUs. Without CANN (libascendcl.so) or an NPU: UNAVAILABLE, and
 * kvio_last_error() says which. */
KVIO_API kvio_status kvio_ascend_device_count(int32_t* count_out);

/* Passing this as `stream` to kvio_executor_create_ascend makes kvio create its own stream. Any
 * other value is an aclrtStream the caller owns and keeps alive until the executor is closed; 0
 * (a null aclrtStream) is, as in ACL's own calls, the default stream of the device's default
 * context (aclrtSetDevice's), which kvio makes current for its work (a caller working in a
 * context it created passes a stream of that context instead). */
#define KVIO_ASCEND_OWN_STREAM UINT64_MAX

/* A kernel_ascend executor on NPU `device` ordering its work on `stream`.
 * kvio_executor_create(KVIO_BACKEND_KERNEL_ASCEND, ...) means device 0, own stream.
 * A copy that fails on the NPU (a DMA error) fails its transfer (KVIO_STATUS_BACKEND_ERROR) only
 * where the context stops on failure (aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE) on a
 * stream of it); in ACL's default mode no event reports it and the transfer reads as done
 * (docs/ascend.md, "Failed copies"). kvio does not set the mode: it is the context's. */
KVIO_API kvio_status kvio_executor_create_ascend(int32_t device, uint64_t stream,
                                                 uint64_t* executor_out);
/* An executor of io backend `io_backend` on NPU `device` ordering its NPU work on `stream` (as for
 * kvio_executor_create_ascend: KVIO_ASCEND_OWN_STREAM for one kvio creates, 0 the default stream):
 * KVIO_BACKEND_KERNEL_ASCEND (kvio_executor_create_ascend), or KVIO_BACKEND_AUTO on a machine with
 * NPUs and no usable CUDA GPU: transfers of Ascend device memory run on kernel_ascend there, the
 * others on the cpu backend (one io thread per core). kvio_executor_create(KVIO_BACKEND_AUTO, ...)
 * on such a machine means NPU 0, own stream. UNSUPPORTED for auto where a CUDA GPU is usable
 * (auto runs on it: kvio_executor_create_cuda); INVALID_ARGUMENT for other io backends or a
 * negative device; UNAVAILABLE without CANN or an NPU. */
KVIO_API kvio_status kvio_executor_create_on_npu(int32_t io_backend, int32_t device,
                                                 uint64_t stream, uint64_t* executor_out);
/* The aclrtStream a kernel_ascend executor orders its work on; for an auto executor on an NPU,
 * its kernel_ascend candidate's (the transfers it gives to cpu are not on it). */
KVIO_API kvio_status kvio_executor_ascend_stream(uint64_t executor, uint64_t* stream_out);
/* The aclrtEvent recorded after a kernel_ascend transfer's work on its stream (another stream can
 * aclrtStreamWaitEvent on it, e.g. to start layer i as soon as its load lands). Valid until
 * kvio_transfer_close; kvio destroys it (aclrtDestroyEvent) once the transfer is closed and
 * complete. Enqueue the wait before closing the transfer. Whether that is enough depends on the
 * CANN version: the references from CANN 8.0 allow destroying an event before the work waiting
 * on it has run (its resources go when it completes); the 7.0 and older references say that an
 * event from aclrtCreateEvent may be destroyed only once the tasks of aclrtStreamWaitEvent (and
 * aclrtSynchronizeEvent) on it have finished. On such older runtimes, keep the transfer open
 * until your stream has passed its wait (e.g. aclrtSynchronizeStream of your stream, or an event
 * of yours recorded after the wait that you have seen complete), then close it.
 * UNSUPPORTED for transfers of other backends. The event completes for a transfer that failed
 * too (a call that failed after some of its copies were queued; and in the runtime's default
 * mode a copy that fails on the device is not reported through it at all: docs/ascend.md,
 * "Failed copies"): a stream that waits on it goes ahead on whatever was written, so check the
 * transfer's status (kvio_transfer_wait) before using its destination. */
KVIO_API kvio_status kvio_transfer_ascend_event(uint64_t transfer, uint64_t* event_out);

/* ---- diagnostics (docs/reliability.md) ---- */
/* Live objects of this process: counts_out[0] open pool handles, [1] open executor handles,
 * [2] open transfer handles, [3] host allocations kvio made and has not freed yet (memory of
 * closed pools stays allocated while a submitted transfer uses it). All 0 once everything was
 * closed and every transfer completed. */
KVIO_API kvio_status kvio_debug_live_objects(int64_t* counts_out /* [4] */);
/* Host registrations kvio made (cudaHostRegister, aclrtHostRegisterV2 of wrapped pinned memory)
 * and has not ended yet. 0 once every wrapped pinned pool was closed and its transfers
 * completed (registrations the caller made itself are not counted); one whose unregistration the
 * runtime refused stays counted (the runtime may still hold it) until a retry ends it: a later
 * wrap over any of its pages retries first, and is refused with INVALID_ARGUMENT ("could not
 * unregister") while the runtime still refuses (docs/cuda.md, docs/ascend.md). */
KVIO_API kvio_status kvio_debug_live_host_registrations(int64_t* count_out);
/* Copy-engine calls kvio has issued in this process for plans (the direct and kernel_ascend
 * backends, and staged's host runs; not the kernel's and staged's table uploads):
 * counts_out[0] single 1-D copies, [1] single 2-D copies, [2] batches of 1-D copies
 * (cuMemcpyBatchAsync, aclrtMemcpyBatchAsync), [3] batches of 2-D/3-D copies
 * (cudaMemcpy3DBatchAsync). Benchmarks read it around a run to print calls per transfer. */
KVIO_API kvio_status kvio_debug_copy_engine_calls(int64_t* counts_out /* [4] */);
/* Launches of the 'kernel' backend's copy kernel in this process (the kernel's transfers, also
 * those 'auto' gives it), by where each launch's layer tables and indices went:
 * counts_out[0] in the kernel parameter itself (host indices; tables, indices and the 16-byte
 * status within 3840 bytes: nothing uploaded), [1] uploaded through a pinned staging slot (larger
 * jobs, and every job with device-resident indices). Only launches that were issued count. Tests
 * read it around a transfer to tell which path ran. */
KVIO_API kvio_status kvio_debug_kernel_launches(int64_t* counts_out /* [2] */);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KVIO_KVIO_H_ */
