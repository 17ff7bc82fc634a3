/*
 * sss.h — C interface of the SSS runtime: MBCF memory-based communication.
 *
 * A program started by the launcher (`sss run -n 4 ./prog`, or srun /
 * mpirun) is one *task* of a job, with a rank in 0 .. size-1. A task
 * exposes *segments* of its memory, each with a random 64-bit key and
 * permissions; peers operate on them one-sidedly: WRITE, READ, 8-byte
 * atomics (SWAP, CAS, FETCH_ADD), pushes into FIFO queues, SIGNALs that run
 * a handler in the target, and multicast WRITEs. The target checks key,
 * bounds and permission of every operation before touching memory; a
 * refused operation is never applied and comes back as an error status.
 * Incoming operations are applied by a progress thread of the target: the
 * application thread never has to poll.
 *
 * Conventions
 * - Every name this header declares starts with sss_ (functions, types)
 *   or SSS_ (constants, macros). Functions on an object are
 *   sss_<object>_<verb> (sss_seg_alloc, sss_fifo_pop); the operations and
 *   the task-wide calls are sss_<verb> (sss_write, sss_fence, sss_init).
 *   Typedefs end in _t, handle typedefs in _h; handles are opaque
 *   pointers.
 * - Every function returning sss_status_t returns SSS_OK (0) on success,
 *   SSS_INPROGRESS (1) where documented, and a negative error otherwise;
 *   sss_status_string() names it and sss_last_error() gives the detail.
 * - Outputs come last and are written only on success.
 * - Null handles and output pointers, misaligned uint64_t pointers and
 *   unknown flag bits give SSS_ERR_INVALID_PARAM. A buffer pointer may be
 *   NULL when its length is 0.
 * - No function aborts the process on bad input or internal errors.
 * - Structs the caller allocates that later versions may extend
 *   (sss_op_params_t, sss_stats_t, sss_node_info_t, sss_dsm_stats_t)
 *   begin with a uint64_t field_mask, as in UCX: bit
 *   SSS_<STRUCT>_FIELD_<FIELD> says the caller has set that field (input
 *   structs) or wants it filled (output structs). The library reads or
 *   writes only the fields whose bits are set — unset input fields count
 *   as 0 / NULL, unset output fields and field_mask itself are left as
 *   they are — so a program built against an older header, with a
 *   shorter struct, keeps working. New fields are only appended, each
 *   with a new bit; SSS_<STRUCT>_FIELD_ALL is every bit of this header.
 *   A bit the library does not know gives SSS_ERR_INVALID_PARAM, like
 *   an unknown flag bit, and nothing is read or written.
 * - Ending a program: sss_quiet() (own operations acknowledged, errors
 *   reported), sss_barrier() (nobody still operates on us), sss_finalize().
 *
 * Operations and completion
 * Operations (sss_write, sss_read, the atomics, sss_fifo_push, sss_signal,
 * sss_multicast) are non-blocking. The caller learns of completion by any
 * of:
 *   - a request: pass a non-NULL sss_request_h *, then sss_request_test()
 *     or sss_request_wait(), and sss_request_free();
 *   - a local counter: sss_op_params_t.counter is incremented (atomically,
 *     with release order) when the operation completes, successfully or
 *     not; wait for it with sss_wait_u64();
 *   - sss_fence() / sss_quiet(): wait until earlier operations are
 *     acknowledged and report the first error of operations nobody holds
 *     a request for.
 * Without SSS_OP_FLAG_STATUS_RETURN and without a counter, a WRITE, FIFO
 * push or SIGNAL completes locally at once; its delivery is confirmed by
 * sss_fence()/sss_quiet(). READ and the atomics always complete when the
 * answer arrives.
 *
 * | operation      | local buffer reusable  | remotely visible when            |
 * |----------------|------------------------|----------------------------------|
 * | sss_write      | on return (copied)     | the target applied it; a notify  |
 * |                |                        | counter is bumped after the data |
 * | sss_read       | buf filled at          | -                                |
 * |                | completion             |                                  |
 * | atomics        | on return              | applied atomically (native 8-B   |
 * |                |                        | atomic) before the reply         |
 * | sss_fifo_push  | on return (copied)     | in the queue once applied; a     |
 * |                |                        | full queue is SSS_ERR_FIFO_FULL, |
 * |                |                        | the message is not stored        |
 * | sss_signal     | on return (copied)     | handler queued in the target     |
 * | sss_multicast  | on return (copied)     | every member applied it when the |
 * |                |                        | request completes                |
 *
 * Reliable operations from one task to another are applied exactly once,
 * in issue order; a SIGNAL is applied when its handler is queued, so an
 * operation issued after it may be applied before the handler runs.
 * Operations with SSS_OP_FLAG_NOFC are sent once, may be
 * lost or reordered, and are never retransmitted (for hints).
 *
 * Thread safety
 * Every function may be called from any thread, concurrently on one task,
 * except: sss_finalize() must not race with any other call on the task
 * (nor be followed by one); one request handle must not be used by two
 * threads at once; pops of one FIFO are serialized (one consumer at a
 * time). Signal handlers run one at a time, in arrival order, on the
 * task's progress thread or on a thread of the task that is waiting in the
 * library (see sss_signal_set_handler()). Calls marked "a collective" must be made by
 * every task of the job, in the same order.
 *
 * Build: `pkg-config --cflags --libs sss` (shared) or
 * `pkg-config --static --cflags --libs sss` (static libsss.a).
 */
#ifndef SSS_H
#define SSS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this interface. */
#define SSS_API_VERSION_MAJOR 0
#define SSS_API_VERSION_MINOR 2

/* ------------------------------------------------------------------ */
/* Status                                                              */
/* ------------------------------------------------------------------ */

/**
 * Result of every call. Remote errors mirror the MBCF wire statuses
 * (SSS_ERR_X == -(wire code of X)); local errors start at -64.
 */
typedef enum sss_status {
    SSS_OK = 0,                  /**< Success. */
    SSS_INPROGRESS = 1,          /**< Not completed yet (not an error). */

    /* Remote statuses: the target refused or could not apply. */
    SSS_ERR_BAD_KEY = -1,        /**< Key matches no segment of the target. */
    SSS_ERR_OUT_OF_BOUNDS = -2,  /**< Range not inside the segment. */
    SSS_ERR_NO_PERMISSION = -3,  /**< Segment forbids this access. */
    SSS_ERR_FIFO_FULL = -4,      /**< Queue full; message not stored. */
    SSS_ERR_NO_SUCH_HANDLER = -5, /**< No signal handler at that index. */
    SSS_ERR_NODE_DOWN = -6,      /**< Target node did not answer. */
    SSS_ERR_NO_SUCH_TASK = -7,   /**< No task with that rank. */
    SSS_ERR_MISALIGNED = -8,     /**< Atomic on an address not 8-aligned. */
    SSS_ERR_NO_SUCH_GROUP = -9,  /**< Unknown multicast group. */
    SSS_ERR_TOO_LARGE = -10,     /**< Larger than the target accepts. */
    SSS_ERR_UNSUPPORTED = -11,   /**< Operation not supported there. */
    SSS_ERR_TIMED_OUT = -12,     /**< No answer / no event in time. */

    /* Local statuses. */
    SSS_ERR_INVALID_PARAM = -64, /**< Bad argument (null, flags, …). */
    SSS_ERR_NO_MESSAGE = -65,    /**< The FIFO queue is empty. */
    SSS_ERR_NO_MEMORY = -66,     /**< Memory or /dev/shm exhausted. */
    SSS_ERR_BOOT = -67,          /**< Joining the job failed. */
    SSS_ERR_IO = -68,            /**< A system call failed. */
    SSS_ERR_SHUTDOWN = -69,      /**< The task is shutting down. */
    SSS_ERR_TRUNCATED = -70,     /**< Buffer smaller than the message. */
    SSS_ERR_IN_HANDLER = -71,    /**< Collective/finalize in a handler. */
    SSS_ERR_INTERNAL = -72       /**< Library bug (caught, not fatal). */
} sss_status_t;

/**
 * A static, human-readable description of @p status ("unknown status" for
 * values not listed above). Never NULL. Thread-safe.
 */
const char *sss_status_string(sss_status_t status);

/**
 * Detail of the last failed call on the calling thread (e.g. the
 * bootstrap's explanation of SSS_ERR_BOOT), or "" if none failed yet.
 * The string stays valid until the next failing call on this thread.
 */
const char *sss_last_error(void);

/** The library version, e.g. "0.1.0". Static; thread-safe. */
const char *sss_version(void);

/* ------------------------------------------------------------------ */
/* Types                                                               */
/* ------------------------------------------------------------------ */

/** A task: this process's membership in the job. */
typedef struct sss_task *sss_task_h;
/** A segment of this task's memory, open to remote operations. */
typedef struct sss_seg *sss_seg_h;
/** A FIFO queue this task created in one of its segments. */
typedef struct sss_fifo *sss_fifo_h;
/** A pending or completed operation. */
typedef struct sss_request *sss_request_h;

/** Segment permissions (bit set). */
enum sss_perm {
    SSS_PERM_READ = 1,   /**< Remote READ. */
    SSS_PERM_WRITE = 2,  /**< Remote WRITE, FIFO push, multicast. */
    SSS_PERM_ATOMIC = 4, /**< Remote SWAP, CAS, FETCH_ADD. */
    SSS_PERM_ALL = 7
};

/** What a peer needs to address a segment (32 bytes). */
typedef struct sss_seg_info {
    uint32_t rank; /**< Owner task. */
    uint32_t perm; /**< SSS_PERM_* bits. */
    uint64_t key;  /**< Capability key. */
    uint64_t base; /**< Base virtual address in the owner. */
    uint64_t len;  /**< Length in bytes. */
} sss_seg_info_t;

/** An address in a task: (rank, segment key, virtual address); 24 bytes. */
typedef struct sss_raddr {
    uint32_t rank;     /**< Target task. */
    uint32_t reserved; /**< Zero. */
    uint64_t key;      /**< Key of the segment holding addr. */
    uint64_t addr;     /**< Virtual address in the target. */
} sss_raddr_t;

/** The address @p offset bytes into the segment described by @p info. */
static inline sss_raddr_t sss_seg_raddr(const sss_seg_info_t *info, uint64_t offset)
{
    sss_raddr_t a;
    a.rank = info->rank;
    a.reserved = 0;
    a.key = info->key;
    a.addr = info->base + offset;
    return a;
}

/** Flags of sss_op_params_t. */
enum sss_op_flags {
    /** Complete when the target applied the operation (status return). */
    SSS_OP_FLAG_STATUS_RETURN = 1,
    /** No flow control: sent once, unordered, never retransmitted. */
    SSS_OP_FLAG_NOFC = 2,
    /** sss_write only: after the data, add notify_addend to the 8-byte
     *  counter at (notify_key, notify_addr) in the same target. */
    SSS_OP_FLAG_NOTIFY = 4
};

/** field_mask bits of sss_op_params_t: the fields the caller set. */
#define SSS_OP_PARAM_FIELD_FLAGS         (UINT64_C(1) << 0)
#define SSS_OP_PARAM_FIELD_NOTIFY_KEY    (UINT64_C(1) << 1)
#define SSS_OP_PARAM_FIELD_NOTIFY_ADDR   (UINT64_C(1) << 2)
#define SSS_OP_PARAM_FIELD_NOTIFY_ADDEND (UINT64_C(1) << 3)
#define SSS_OP_PARAM_FIELD_COUNTER       (UINT64_C(1) << 4)
#define SSS_OP_PARAM_FIELD_ALL           (UINT64_C(0x1f))

/**
 * Options of one operation; pass NULL for defaults. Set field_mask to the
 * SSS_OP_PARAM_FIELD_* bits of the fields you set: the others are not
 * read and count as 0 / NULL (48 bytes).
 */
typedef struct sss_op_params {
    uint64_t field_mask;    /**< SSS_OP_PARAM_FIELD_* bits. */
    uint32_t flags;         /**< SSS_OP_FLAG_* bits. */
    uint32_t reserved;      /**< Never read. */
    uint64_t notify_key;    /**< NOTIFY: key of the counter's segment. */
    uint64_t notify_addr;   /**< NOTIFY: counter address (8-aligned). */
    uint64_t notify_addend; /**< NOTIFY: amount added (usually 1). */
    /** If not NULL: an 8-byte aligned local counter incremented when the
     *  operation completes (after READ data / an atomic's old value is
     *  stored). Implies status return. Must stay valid until then. */
    uint64_t *counter;
} sss_op_params_t;

/** Comparisons for sss_wait_u64(): wait until (*addr CMP value). */
typedef enum sss_cmp {
    SSS_CMP_EQ = 0,
    SSS_CMP_NE = 1,
    SSS_CMP_GT = 2,
    SSS_CMP_GE = 3,
    SSS_CMP_LT = 4,
    SSS_CMP_LE = 5
} sss_cmp_t;

/** field_mask bits of sss_stats_t: the counters to fill. */
#define SSS_STATS_FIELD_PACKETS_SENT     (UINT64_C(1) << 0)
#define SSS_STATS_FIELD_BYTES_SENT       (UINT64_C(1) << 1)
#define SSS_STATS_FIELD_PACKETS_RECEIVED (UINT64_C(1) << 2)
#define SSS_STATS_FIELD_BYTES_RECEIVED   (UINT64_C(1) << 3)
#define SSS_STATS_FIELD_RETRANSMISSIONS  (UINT64_C(1) << 4)
#define SSS_STATS_FIELD_APPLIED          (UINT64_C(1) << 5)
#define SSS_STATS_FIELD_REJECTED         (UINT64_C(1) << 6)
#define SSS_STATS_FIELD_BAD_PACKETS      (UINT64_C(1) << 7)
#define SSS_STATS_FIELD_REFUSED          (UINT64_C(1) << 8)
#define SSS_STATS_FIELD_ALL              (UINT64_C(0x1ff))

/** Counters of a task (80 bytes). */
typedef struct sss_stats {
    uint64_t field_mask;       /**< SSS_STATS_FIELD_* bits to fill. */
    uint64_t packets_sent;     /**< Datagrams sent. */
    uint64_t bytes_sent;       /**< Bytes sent. */
    uint64_t packets_received; /**< Datagrams received. */
    uint64_t bytes_received;   /**< Bytes received. */
    uint64_t retransmissions;  /**< Retransmitted packets. */
    uint64_t applied;          /**< Incoming operations applied. */
    uint64_t rejected;         /**< Incoming operations refused. */
    uint64_t bad_packets;      /**< Corrupted datagrams dropped. */
    uint64_t refused;          /**< Datagrams refused unopened under
                                    SSS_SECURITY=auth|encrypt: forged,
                                    modified, replayed, another job's. */
} sss_stats_t;

/**
 * A signal handler: runs in the receiving task with the sender's rank and
 * the payload. @p task is a temporary handle valid only during the call;
 * @p payload is valid only during the call.
 */
typedef void (*sss_signal_handler_t)(void *arg, sss_task_h task, uint32_t from,
                                     const void *payload, size_t len);

/* ------------------------------------------------------------------ */
/* Task                                                                */
/* ------------------------------------------------------------------ */

/**
 * Joins the job this process was started in (`sss run`, Slurm, PMI or
 * Open MPI variables; a job of one task when there are none), starts the
 * progress thread, and stores the task in @p *task_p. Collective: every
 * task of the job calls it. One task per process: a second call before
 * sss_finalize() gives SSS_ERR_INVALID_PARAM. SSS_ERR_BOOT when the
 * launcher's rendezvous fails (see sss_last_error()).
 */
sss_status_t sss_init(sss_task_h *task_p);

/**
 * Leaves the job: waits (at most 2 s) for operations in flight to be
 * acknowledged, stops the progress thread and releases the task's shared
 * memory. Segments, FIFOs and requests of the task must not be used
 * afterwards (free them first; sss_quiet() first reports errors). Not
 * from a signal handler (SSS_ERR_IN_HANDLER) and not with a handler's
 * temporary task handle (SSS_ERR_INVALID_PARAM). Other tasks may still
 * be operating on this one: end with sss_barrier() when they might.
 */
sss_status_t sss_finalize(sss_task_h task);

/** This task's rank, or UINT32_MAX for a NULL task. */
uint32_t sss_task_rank(sss_task_h task);

/** Number of tasks in the job, or 0 for a NULL task. */
uint32_t sss_task_size(sss_task_h task);

/** The job id (non-zero, equal in every task), or 0 for a NULL task. */
uint32_t sss_task_job(sss_task_h task);

/** Copies the task's counters that @p stats->field_mask names into
 *  @p *stats. */
sss_status_t sss_task_stats(sss_task_h task, sss_stats_t *stats);

/**
 * Collective barrier through the launcher's rendezvous: returns when every
 * task called it. Meant for setup; for hot loops build one from atomics.
 * Blocking; a collective (SSS_ERR_IN_HANDLER inside a handler).
 */
sss_status_t sss_barrier(sss_task_h task);

/**
 * Collective: every task contributes @p len bytes from @p send (the same
 * @p len everywhere, at most a few KiB); @p recv receives size * len
 * bytes, task r's at offset r * len. A barrier too. Blocking; a
 * collective.
 */
sss_status_t sss_allgather(sss_task_h task, const void *send, size_t len, void *recv);

/**
 * Waits until every operation issued earlier by this task to @p rank is
 * acknowledged (an ack-based memory barrier towards one task), then
 * returns the first error among operations to @p rank that nobody holds a
 * request for (each error is reported once). Blocking.
 */
sss_status_t sss_fence(sss_task_h task, uint32_t rank);

/** sss_fence() towards every task. Blocking. */
sss_status_t sss_quiet(sss_task_h task);

/**
 * Waits until (*addr CMP value) holds for an 8-byte aligned local word
 * that remote operations (or an operation's counter, or a handler with
 * atomics) update. Spins for a while (receiving, applying and running
 * signal handlers itself), then sleeps until the progress thread applies
 * something; the load has acquire order, so data written before
 * a notify is visible once the counter is seen. Blocking.
 */
sss_status_t sss_wait_u64(sss_task_h task, const uint64_t *addr, sss_cmp_t cmp,
                          uint64_t value);

/** sss_wait_u64() giving up after @p timeout_us microseconds with
 *  SSS_ERR_TIMED_OUT. */
sss_status_t sss_wait_u64_timeout(sss_task_h task, const uint64_t *addr, sss_cmp_t cmp,
                                  uint64_t value, uint64_t timeout_us);

/**
 * SS-Wait: like sss_wait_u64(), naming the @p partner task expected to
 * change the word. Spins while the partner runs and its node (and ours)
 * has a CPU for every runnable thread; otherwise blocks until something
 * lands. Tunable with SSS_SSWAIT_SPIN_US and SSS_SSWAIT_BLOCK_US.
 * Blocking.
 */
sss_status_t sss_sswait_u64(sss_task_h task, const uint64_t *addr, sss_cmp_t cmp,
                            uint64_t value, uint32_t partner);

/** Bumps this task's progress counter, which the node daemon shows in
 *  IDM. Never fails; does nothing for a NULL task. */
void sss_progress_bump(sss_task_h task);

/** A task's scheduling state as its node daemon sampled it. */
typedef enum {
    SSS_TASK_UNKNOWN = 0,  /**< No daemon, or not listed. */
    SSS_TASK_RUNNING = 1,  /**< On a CPU. */
    SSS_TASK_RUNNABLE = 2, /**< Ready, on an oversubscribed node. */
    SSS_TASK_SLEEPING = 3, /**< Blocked. */
    SSS_TASK_GONE = 4      /**< Stopped, zombie or gone. */
} sss_task_state_t;

/** field_mask bits of sss_node_info_t: the fields to fill. */
#define SSS_NODE_INFO_FIELD_NAME            (UINT64_C(1) << 0)
#define SSS_NODE_INFO_FIELD_UP              (UINT64_C(1) << 1)
#define SSS_NODE_INFO_FIELD_NCPUS           (UINT64_C(1) << 2)
#define SSS_NODE_INFO_FIELD_RUNNABLE        (UINT64_C(1) << 3)
#define SSS_NODE_INFO_FIELD_NTASKS          (UINT64_C(1) << 4)
#define SSS_NODE_INFO_FIELD_LOAD1000        (UINT64_C(1) << 5)
#define SSS_NODE_INFO_FIELD_MEM_TOTAL_KB    (UINT64_C(1) << 6)
#define SSS_NODE_INFO_FIELD_MEM_FREE_KB     (UINT64_C(1) << 7)
#define SSS_NODE_INFO_FIELD_PACKETS         (UINT64_C(1) << 8)
#define SSS_NODE_INFO_FIELD_BYTES           (UINT64_C(1) << 9)
#define SSS_NODE_INFO_FIELD_RETRANSMISSIONS (UINT64_C(1) << 10)
#define SSS_NODE_INFO_FIELD_REJECTED        (UINT64_C(1) << 11)
#define SSS_NODE_INFO_FIELD_UPDATED_NS      (UINT64_C(1) << 12)
#define SSS_NODE_INFO_FIELD_ALL             (UINT64_C(0x1fff))

/** A node's IDM status page (see sss_idm_node()); 128 bytes. */
typedef struct sss_node_info {
    uint64_t field_mask;      /**< SSS_NODE_INFO_FIELD_* bits to fill. */
    char name[32];            /**< Node name (host address), NUL-padded. */
    uint32_t up;              /**< 1 while the node gossips, 0 once down. */
    uint32_t ncpus;           /**< CPUs. */
    uint32_t runnable;        /**< Runnable threads on the node. */
    uint32_t ntasks;          /**< SSS tasks on the node. */
    uint32_t load1000[3];     /**< Load averages 1/5/15 min, times 1000. */
    uint32_t reserved;        /**< Never written. */
    uint64_t mem_total_kb;    /**< Memory in total, KiB. */
    uint64_t mem_free_kb;     /**< Memory available, KiB. */
    uint64_t packets;         /**< MBCF datagrams sent by its tasks. */
    uint64_t bytes;           /**< MBCF bytes sent by its tasks. */
    uint64_t retransmissions; /**< MBCF retransmissions of its tasks. */
    uint64_t rejected;        /**< Operations its tasks refused. */
    uint64_t updated_ns;      /**< When it was published (CLOCK_REALTIME). */
} sss_node_info_t;

/**
 * Copies the fields @p info->field_mask names of node @p node's IDM page,
 * as this node's daemon knows it, into @p *info. Reads shared memory only (no system call once mapped).
 * SSS_ERR_NO_MESSAGE when no daemon runs here or the node is unknown.
 */
sss_status_t sss_idm_node(sss_task_h task, const char *node, sss_node_info_t *info);

/** Task @p rank's scheduling state from IDM (SSS_TASK_UNKNOWN without a
 *  daemon or for a NULL task). */
sss_task_state_t sss_idm_task_state(sss_task_h task, uint32_t rank);

/* ------------------------------------------------------------------ */
/* Segments                                                            */
/* ------------------------------------------------------------------ */

/**
 * Allocates @p len zeroed bytes of shared memory as a segment with
 * permissions @p perm (SSS_PERM_* bits) and a fresh random key. Tasks on
 * the same node then reach it directly through shared memory.
 * Local memory access: sss_seg_ptr().
 */
sss_status_t sss_seg_alloc(sss_task_h task, size_t len, uint32_t perm, sss_seg_h *seg_p);

/**
 * Collective: allocates a segment with the same key in every task (at
 * whatever address) — what sss_multicast() needs. Blocking; a
 * collective.
 */
sss_status_t sss_seg_alloc_shared_key(sss_task_h task, size_t len, uint32_t perm,
                                      sss_seg_h *seg_p);

/**
 * Collective: allocates a segment at the same virtual address and with the
 * same key in every task, so one (key, address) names it everywhere.
 * SSS_ERR_INVALID_PARAM if the address is taken in some task. Blocking;
 * a collective.
 */
sss_status_t sss_seg_alloc_symmetric(sss_task_h task, size_t len, uint32_t perm,
                                     sss_seg_h *seg_p);

/**
 * Registers existing memory [@p addr, @p addr + @p len) as a segment.
 * The memory must stay valid until sss_seg_free(), and remote operations
 * may change it at any time: synchronize through counters or flags.
 * Same-node peers reach it with process_vm_readv/writev; atomics and
 * notify counters in registered memory go through the progress thread.
 * SSS_ERR_INVALID_PARAM if the range is not mapped in the calling process
 * (readable, and writable for SSS_PERM_WRITE or SSS_PERM_ATOMIC).
 */
sss_status_t sss_seg_register(sss_task_h task, void *addr, size_t len, uint32_t perm,
                              sss_seg_h *seg_p);

/**
 * Frees a segment and its handle: its key stops working at once
 * (operations in flight to it fail with SSS_ERR_BAD_KEY). A FIFO created
 * in it keeps its memory mapped until sss_fifo_destroy().
 */
sss_status_t sss_seg_free(sss_task_h task, sss_seg_h seg);

/** Describes @p seg in @p *info, for sending to peers. */
sss_status_t sss_seg_info(sss_seg_h seg, sss_seg_info_t *info);

/** Local address of the segment's first byte, or NULL for a NULL seg. */
void *sss_seg_ptr(sss_seg_h seg);

/**
 * Collective: every task passes one of its segments; @p infos (an array of
 * sss_task_size() entries) receives every task's, by rank. Blocking; a
 * collective.
 */
sss_status_t sss_seg_exchange(sss_task_h task, sss_seg_h seg, sss_seg_info_t *infos);

/* ------------------------------------------------------------------ */
/* One-sided operations                                                */
/* ------------------------------------------------------------------ */

/*
 * Common arguments: @p params may be NULL (defaults); @p req may be NULL
 * (no request: completion through params->counter or sss_fence/
 * sss_quiet, which also report errors); otherwise *req receives a request
 * to test, wait for and free. A returned error means nothing was sent.
 */

/**
 * WRITE: stores @p len bytes from @p buf at @p dst. @p buf may be reused
 * on return. The data is visible to the target once its progress thread
 * (or a same-node sender, through shared memory) applied it; with
 * SSS_OP_FLAG_NOTIFY, the target's counter is bumped after the data, so a
 * target that sees the counter (sss_wait_u64) sees the data. Large writes
 * are split into packets transparently.
 */
sss_status_t sss_write(sss_task_h task, sss_raddr_t dst, const void *buf, size_t len,
                       const sss_op_params_t *params, sss_request_h *req);

/**
 * READ: fetches @p len bytes at @p src into @p buf. @p buf is written at
 * completion (only if successful) and must stay valid and untouched until
 * then; then params->counter, if any, is bumped.
 */
sss_status_t sss_read(sss_task_h task, sss_raddr_t src, size_t len,
                      const sss_op_params_t *params, void *buf, sss_request_h *req);

/**
 * SWAP: atomically stores @p value at @p dst (8-byte aligned, segment with
 * SSS_PERM_ATOMIC). At completion the old value is stored in @p *result
 * (if not NULL, 8-byte aligned, valid until then; only on success), then
 * params->counter is bumped.
 */
sss_status_t sss_swap(sss_task_h task, sss_raddr_t dst, uint64_t value,
                      const sss_op_params_t *params, uint64_t *result, sss_request_h *req);

/** CAS: atomically replaces @p expected by @p desired at @p dst; the old
 *  value goes to @p *result as for sss_swap() (equal to @p expected iff
 *  the swap happened). */
sss_status_t sss_cas(sss_task_h task, sss_raddr_t dst, uint64_t expected, uint64_t desired,
                     const sss_op_params_t *params, uint64_t *result, sss_request_h *req);

/** FETCH_ADD: atomically adds @p value at @p dst (wrapping); the old
 *  value goes to @p *result as for sss_swap(). */
sss_status_t sss_fetch_add(sss_task_h task, sss_raddr_t dst, uint64_t value,
                           const sss_op_params_t *params, uint64_t *result,
                           sss_request_h *req);

/* ------------------------------------------------------------------ */
/* FIFO queues                                                         */
/* ------------------------------------------------------------------ */

/**
 * Bytes a queue of @p slots (a power of two) messages of at most
 * @p max_msg bytes occupies in a segment; 0 for invalid arguments.
 */
size_t sss_fifo_bytes(uint32_t slots, size_t max_msg);

/**
 * Lays out an empty queue at byte @p offset (64-byte aligned) of @p seg,
 * which must hold sss_fifo_bytes(slots, max_msg) bytes from there and
 * allow SSS_PERM_WRITE. Give peers its address (sss_fifo_addr()).
 */
sss_status_t sss_fifo_create(sss_task_h task, sss_seg_h seg, size_t offset, uint32_t slots,
                             size_t max_msg, sss_fifo_h *fifo_p);

/** The address peers push to. */
sss_status_t sss_fifo_addr(sss_fifo_h fifo, sss_raddr_t *addr);

/** Frees the handle (the queue memory belongs to the segment). */
sss_status_t sss_fifo_destroy(sss_fifo_h fifo);

/**
 * Pushes a message of @p len bytes (at most the queue's max_msg) into the
 * queue at @p queue. @p msg may be reused on return. A full queue refuses
 * the message with SSS_ERR_FIFO_FULL — reported by the request or counter
 * (use SSS_OP_FLAG_STATUS_RETURN to learn it per message and retry) or by
 * sss_fence/sss_quiet; messages are never silently dropped.
 */
sss_status_t sss_fifo_push(sss_task_h task, sss_raddr_t queue, const void *msg, size_t len,
                           const sss_op_params_t *params, sss_request_h *req);

/**
 * Pops the oldest message into @p buf (@p capacity bytes): its length in
 * @p *len_p and its sender in @p *from_p (may be NULL). SSS_ERR_NO_MESSAGE
 * when the queue is empty; SSS_ERR_TRUNCATED when the message is larger
 * than @p capacity — it then stays first in line for the next pop.
 * Messages from one sender arrive in push order.
 */
sss_status_t sss_fifo_pop(sss_fifo_h fifo, void *buf, size_t capacity, size_t *len_p,
                          uint32_t *from_p);

/** sss_fifo_pop() that waits (sleeping, not spinning) for a message.
 *  Blocking. */
sss_status_t sss_fifo_wait_pop(sss_task_h task, sss_fifo_h fifo, void *buf, size_t capacity,
                               size_t *len_p, uint32_t *from_p);

/* ------------------------------------------------------------------ */
/* Signals                                                             */
/* ------------------------------------------------------------------ */

/**
 * Registers @p handler at @p index (replacing an earlier one), called with
 * @p arg for every SIGNAL to that index. Handlers run one at a time, in
 * arrival order: on a thread of the task that is waiting in the library
 * (sss_wait_u64, sss_request_wait, sss_fence, sss_quiet, ...) when one
 * received the SIGNAL, so no other thread is woken, else on the task's
 * progress thread. Keep them short, and do not take a lock in a handler
 * that a waiting thread of the task may hold. A handler may issue
 * operations with its temporary task handle (to reply, for instance) and
 * wait for them: while it waits, incoming operations keep being applied,
 * but no other handler runs, so never wait for something only another
 * handler would do. Collectives and sss_finalize return
 * SSS_ERR_IN_HANDLER there.
 * @p arg must stay valid (and be safe to use from that thread) until
 * sss_finalize(). Register before peers signal (e.g. then sss_barrier()):
 * a SIGNAL to an empty index fails with SSS_ERR_NO_SUCH_HANDLER.
 */
sss_status_t sss_signal_set_handler(sss_task_h task, uint32_t index,
                                    sss_signal_handler_t handler, void *arg);

/**
 * SIGNAL: runs handler @p index of task @p rank with a copy of @p payload
 * (@p len bytes; @p payload may be reused on return). Completion (with
 * status return) means the handler was queued in the target.
 */
sss_status_t sss_signal(sss_task_h task, uint32_t rank, uint32_t index, const void *payload,
                        size_t len, const sss_op_params_t *params, sss_request_h *req);

/* ------------------------------------------------------------------ */
/* Multicast                                                           */
/* ------------------------------------------------------------------ */

/**
 * Declares multicast group @p group with @p count member ranks; every
 * member declares it with the same ranks in the same order.
 */
sss_status_t sss_group_create(sss_task_h task, uint32_t group, const uint32_t *ranks,
                              size_t count);

/**
 * MULTICAST: WRITEs @p len bytes from @p buf at byte @p offset of the
 * segment with key @p key in every member of @p group (the caller too, if
 * a member, before this returns), through a tree with ack combining.
 * Members hold such a segment from sss_seg_alloc_shared_key() or
 * sss_seg_alloc_symmetric(). @p buf may be reused on return; the request
 * completes when every member applied it. SSS_ERR_NO_SUCH_GROUP if this
 * task has not declared @p group.
 */
sss_status_t sss_multicast(sss_task_h task, uint32_t group, uint64_t key, uint64_t offset,
                           const void *buf, size_t len, sss_request_h *req);

/* ------------------------------------------------------------------ */
/* Requests                                                            */
/* ------------------------------------------------------------------ */

/**
 * SSS_INPROGRESS while the operation runs; once completed, SSS_OK or its
 * error (the same on every later call). Non-blocking.
 */
sss_status_t sss_request_test(sss_request_h req);

/** Waits for completion; the operation's status. Blocking unless already
 *  complete. */
sss_status_t sss_request_wait(sss_request_h req);

/**
 * Frees the handle (NULL is a no-op). Does not cancel the operation: if it
 * has not completed, its buffers must stay valid until it does, and its
 * error is reported by sss_fence/sss_quiet.
 */
void sss_request_free(sss_request_h req);

/* ------------------------------------------------------------------ */
/* Shared heap (ADSM)                                                  */
/* ------------------------------------------------------------------ */

/** A task's view of the shared heap. */
typedef struct sss_dsm *sss_dsm_h;

/**
 * Consistency protocol of an allocation (SSS_DSM_PROTOCOL spelling in
 * brackets). Every protocol gives data-race-free programs, synchronized
 * with sss_dsm_lock/unlock/barrier, the results of a sequential run.
 */
typedef enum sss_dsm_protocol {
    /** sss_dsm_init: from SSS_DSM_PROTOCOL (default ulrc); elsewhere:
     *  the heap's default protocol. */
    SSS_DSM_PROTOCOL_ENV = 0,
    /** [ulrc] Lazy release consistency, many writers: writes go home at
     *  release, acquire drops pages others wrote. */
    SSS_DSM_ULRC = 1,
    /** [invalidate] One writer a page: noted writes go home and every
     *  other copy is dropped before the note returns. */
    SSS_DSM_INVALIDATE = 2,
    /** [home_update] SAURC: noted writes go home at once (combined per
     *  packet); acquire drops pages others wrote. */
    SSS_DSM_HOME_UPDATE = 3,
    /** [update] Writes go to the home, which forwards them to every task
     *  holding a copy; no invalidations. At most 64 tasks. */
    SSS_DSM_UPDATE = 4,
    /** [update_drct] Writes go home at once and, at release, straight to
     *  every other task's copy (the copy set is the whole job). */
    SSS_DSM_UPDATE_DRCT = 5,
    /** [home_only] No copies kept: sss_dsm_read/sss_dsm_write go to the
     *  home; pages of plain loads are dropped at every acquire. */
    SSS_DSM_HOME_ONLY = 6
} sss_dsm_protocol_t;

/** How writes are recorded. */
typedef enum sss_dsm_writes {
    SSS_DSM_WRITES_ENV = 0, /**< From SSS_DSM_WRITES (default note). */
    SSS_DSM_NOTE = 1,       /**< The program calls sss_dsm_note_write(). */
    SSS_DSM_TRAP = 2,       /**< Write-protect faults, twins and diffs. */
    SSS_DSM_UDSM = 3        /**< Notes, and no userfaultfd: pages are made
                                 present only by sss_dsm_fetch() (what
                                 `sss cc --udsm` code calls; such a program
                                 selects this mode itself). */
} sss_dsm_writes_t;

/** Where the pages of an allocation live (the home of each page). */
typedef enum sss_dsm_placement {
    SSS_DSM_BLOCK = 0,       /**< Equal contiguous chunks in rank order. */
    SSS_DSM_CYCLIC = 1,      /**< Blocks of `param` pages round-robin. */
    SSS_DSM_FIRST_TOUCH = 2, /**< The first task to touch a page. */
    SSS_DSM_EXPLICIT = 3     /**< Every page at rank `param`. */
} sss_dsm_placement_t;

/** field_mask bits of sss_dsm_stats_t: the counters to fill. */
#define SSS_DSM_STATS_FIELD_READ_FAULTS      (UINT64_C(1) << 0)
#define SSS_DSM_STATS_FIELD_WRITE_FAULTS     (UINT64_C(1) << 1)
#define SSS_DSM_STATS_FIELD_PAGES_FETCHED    (UINT64_C(1) << 2)
#define SSS_DSM_STATS_FIELD_PAGES_PREFETCHED (UINT64_C(1) << 3)
#define SSS_DSM_STATS_FIELD_DIFFS            (UINT64_C(1) << 4)
#define SSS_DSM_STATS_FIELD_WRITES           (UINT64_C(1) << 5)
#define SSS_DSM_STATS_FIELD_BYTES_SENT       (UINT64_C(1) << 6)
#define SSS_DSM_STATS_FIELD_PACKETS          (UINT64_C(1) << 7)
#define SSS_DSM_STATS_FIELD_NOTES            (UINT64_C(1) << 8)
#define SSS_DSM_STATS_FIELD_NOTICES          (UINT64_C(1) << 9)
#define SSS_DSM_STATS_FIELD_INVALIDATIONS    (UINT64_C(1) << 10)
#define SSS_DSM_STATS_FIELD_LOCKS            (UINT64_C(1) << 11)
#define SSS_DSM_STATS_FIELD_BARRIERS         (UINT64_C(1) << 12)
#define SSS_DSM_STATS_FIELD_FAULT_NS         (UINT64_C(1) << 13)
#define SSS_DSM_STATS_FIELD_SYNC_NS          (UINT64_C(1) << 14)
#define SSS_DSM_STATS_FIELD_UPDATES          (UINT64_C(1) << 15)
#define SSS_DSM_STATS_FIELD_ALL              (UINT64_C(0xffff))

/** Counters of a task's heap (136 bytes). */
typedef struct sss_dsm_stats {
    uint64_t field_mask;       /**< SSS_DSM_STATS_FIELD_* bits to fill. */
    uint64_t read_faults;      /**< Missing-page faults on reads. */
    uint64_t write_faults;     /**< Write faults (missing or protected). */
    uint64_t pages_fetched;    /**< Pages fetched from homes (MBCF READ). */
    uint64_t pages_prefetched; /**< Of those, fetched ahead. */
    uint64_t diffs;            /**< Pages diffed against their twin. */
    uint64_t writes;           /**< MBCF WRITEs of data to homes. */
    uint64_t bytes_sent;       /**< Bytes written to homes. */
    uint64_t packets;          /**< Datagrams sent (udp peers). */
    uint64_t notes;            /**< Notes that reached the runtime (#CM;
                                    the inline sss_dsm_note_write() merges
                                    or skips the others). */
    uint64_t notices;          /**< Write notices published. */
    uint64_t invalidations;    /**< Pages dropped by invalidation. */
    uint64_t locks;            /**< Lock acquisitions. */
    uint64_t barriers;         /**< Barriers. */
    uint64_t fault_ns;         /**< Nanoseconds resolving faults. */
    uint64_t sync_ns;          /**< Nanoseconds in locks and barriers. */
    uint64_t updates;          /**< Update messages received for this
                                    task's copies (update, update_drct). */
} sss_dsm_stats_t;

/**
 * Collective: creates the shared heap of @p task's job — reserved at the
 * same address in every task (SSS_DSM_HEAP bytes, default 64 GiB, backed
 * lazily), read misses fetched from the page's home (userfaultfd),
 * SSS_DSM_PREFETCH following pages fetched with a miss. On x86-64 a
 * fault is resolved in the thread that took it: userfaultfd raises
 * SIGBUS there and the heap's handler, installed by the first init,
 * fetches the page and returns (a SIGBUS that is not a heap fault goes
 * to the action installed before). A program that installs a SIGBUS
 * handler after this must pass any SIGBUS it does not recognise on to
 * the handler it replaced, or set SSS_DSM_FAULTS=thread: faults are then
 * resolved by a fault thread and this heap installs no handler (also
 * what to set, or `handle SIGBUS nostop noprint pass`, under a
 * debugger). A fault that cannot be resolved prints why and ends the
 * task by SIGBUS. A handler of the program's own that reads a missing
 * heap page while its thread is inside malloc can deadlock in this mode
 * (resolving allocates); use SSS_DSM_FAULTS=thread for such programs. One heap per task; one thread of
 * the task uses it. SSS_ERR_IO when userfaultfd is unavailable (the
 * detail says why; SSS_DSM_UDSM, which programs built with
 * `sss cc --udsm` select, needs none);
 * SSS_ERR_INVALID_PARAM when an SSS_DSM_* or SSS_STATS value is not valid
 * (the detail names it), or when the tasks ask for different heaps (size,
 * protocol, UDSM or not); SSS_ERR_BOOT when another task failed a step of
 * the heap's creation (the detail names it and its error): every task
 * returns, none waits for the one that failed.
 */
sss_status_t sss_dsm_init(sss_task_h task, sss_dsm_protocol_t protocol,
                          sss_dsm_writes_t writes, sss_dsm_h *dsm_p);

/**
 * Collective: a final barrier, then prints the heap's counters as one JSON
 * line on stderr when SSS_STATS=json, stops the fault thread and frees
 * @p dsm. The heap must not be touched afterwards. Finalize the heap
 * before its task.
 */
sss_status_t sss_dsm_finalize(sss_dsm_h dsm);

/**
 * G_MALLOC: allocates @p len bytes (rounded up to whole pages, zeroed)
 * with @p placement (@p param: pages per block for SSS_DSM_CYCLIC, the
 * rank for SSS_DSM_EXPLICIT). Any task may call it; the address in
 * @p *addr_p is valid in every task (pass it on through the heap or a
 * collective). SSS_ERR_NO_MEMORY when the heap is exhausted or @p len
 * exceeds it (a failed request takes nothing from the heap).
 */
sss_status_t sss_dsm_malloc(sss_dsm_h dsm, size_t len,
                            sss_dsm_placement_t placement, uint32_t param,
                            void **addr_p);

/** Collective sss_dsm_malloc(): rank 0 allocates, every task gets the
 *  address (or rank 0's failure: SSS_ERR_NO_MEMORY as there). */
sss_status_t sss_dsm_malloc_all(sss_dsm_h dsm, size_t len,
                                sss_dsm_placement_t placement,
                                uint32_t param, void **addr_p);

/**
 * sss_dsm_malloc() with the allocation's consistency @p protocol
 * (SSS_DSM_PROTOCOL_ENV: the heap's default). SSS_ERR_INVALID_PARAM for
 * an unknown protocol, or SSS_DSM_UPDATE with more than 64 tasks.
 */
sss_status_t sss_dsm_malloc_with(sss_dsm_h dsm, size_t len,
                                 sss_dsm_placement_t placement,
                                 uint32_t param, sss_dsm_protocol_t protocol,
                                 void **addr_p);

/** Collective sss_dsm_malloc_with(): rank 0 allocates, every task gets
 *  the address (or rank 0's failure). */
sss_status_t sss_dsm_malloc_all_with(sss_dsm_h dsm, size_t len,
                                     sss_dsm_placement_t placement,
                                     uint32_t param,
                                     sss_dsm_protocol_t protocol,
                                     void **addr_p);

/**
 * Collective: switches the allocation containing @p addr to @p protocol
 * (SSS_DSM_PROTOCOL_ENV: the heap's default). Every task's pending
 * writes reach their homes, every cached copy of the allocation is
 * dropped, and the tasks agree through barriers; the contents are kept.
 * Has barrier semantics. SSS_ERR_INVALID_PARAM when @p addr is in no
 * allocation.
 */
sss_status_t sss_dsm_set_protocol(sss_dsm_h dsm, const void *addr,
                                  sss_dsm_protocol_t protocol);

/** The protocol of the allocation containing @p addr in @p *protocol_p
 *  (an sss_dsm_protocol_t value). */
sss_status_t sss_dsm_protocol(sss_dsm_h dsm, const void *addr,
                              uint32_t *protocol_p);

/**
 * Reads @p len bytes of the heap at @p addr into @p buf (private memory,
 * not the heap). On SSS_DSM_HOME_ONLY allocations, bytes of pages not
 * cached here are read from their home (MBCF READ) without keeping a
 * copy; elsewhere this is a plain load. @p buf may be reused on return.
 */
sss_status_t sss_dsm_read(sss_dsm_h dsm, const void *addr, void *buf,
                          size_t len);

/**
 * Writes @p len bytes of @p buf (private memory) to the heap at @p addr.
 * On SSS_DSM_HOME_ONLY allocations the bytes go to their homes (and into
 * a cached copy, if any); other tasks see them after this task's next
 * release. Elsewhere this is plain stores plus sss_dsm_note_write().
 * @p buf may be reused on return.
 */
sss_status_t sss_dsm_write(sss_dsm_h dsm, void *addr, const void *buf,
                           size_t len);

/**
 * SSS_DSM_UDSM heaps: makes every page of [@p addr, @p addr + @p len)
 * present in this task's view (fetched from its home, or this task's
 * home page mapped), as a fault would in the other modes; @p write: about
 * to be stored to. Call it before touching heap memory (after each
 * acquire) when the code was not compiled by `sss cc --udsm`. Does
 * nothing in the other modes. SSS_ERR_INVALID_PARAM outside the heap.
 */
sss_status_t sss_dsm_fetch(sss_dsm_h dsm, const void *addr, size_t len, int write);

/**
 * Records that [@p addr, @p addr + @p len) of the heap was written by
 * plain stores; call it after the stores. What happens follows each
 * allocation's protocol: ulrc keeps the range until the next release
 * (unlock, barrier); invalidate writes it home and drops other tasks'
 * copies before it returns; home_update, home_only and update_drct send
 * it home now (combined per packet; update_drct also to every copy at
 * release); update sends it through the home to every copy holder.
 * A no-op in trap mode (write protection records stores; diffs then go
 * out at release under every protocol).
 * SSS_ERR_INVALID_PARAM for a range outside the heap.
 */
sss_status_t sss_dsm_note_write(sss_dsm_h dsm, const void *addr, size_t len);

/** 1 when writes are recorded by traps (stores need no notes), else 0. */
int sss_dsm_is_trap(sss_dsm_h dsm);

/**
 * The note log: sss_dsm_note_write() below is an inline fast path that
 * calls into the runtime only when it must. When the heap needs no notes
 * (a task alone, trap mode) a note returns at once; when every allocation
 * known is SSS_DSM_ULRC (notes wait for the release anyway) the range is
 * appended to this log, or merged with the last entry it extends, and
 * the next call on the handle (any sss_dsm_* call: unlock, barrier, ...)
 * hands the log to the runtime. The log belongs to the handle opened
 * last and to the thread that opened it; other threads, other handles,
 * ranges outside the heap and a full log take the call. Define
 * SSS_NO_INLINE_NOTES to call the runtime for every note. The runtime
 * owns the fields; code reads them only as below.
 */
#define SSS_NOTE_LOG_CAP 256
typedef struct sss_note_log {
    sss_dsm_h dsm;  /**< The handle whose notes are logged (NULL: none). */
    uint64_t lo;    /**< Its heap's first byte. */
    uint64_t span;  /**< Its heap's length. */
    const uint64_t *mode; /**< Points at the policy word, in libsss: 0
                             call; 1 append; 2 no note needed. */
    uint64_t owner; /**< pthread_self() of the appending thread. */
    uint64_t n;     /**< Entries in use. */
    uint64_t ent[SSS_NOTE_LOG_CAP][2]; /**< Address, length. */
} sss_note_log_t;
/* `sss_note_log2`: the log whose `mode` is a pointer (the first layout,
 * `sss_note_log`, held the word itself); a program and a libsss of
 * different layouts then fail to link or load instead of misreading. */
extern sss_note_log_t sss_note_log2;

static inline sss_status_t sss_dsm_note_write_inline(sss_dsm_h dsm,
                                                     const void *addr,
                                                     size_t len) {
    sss_note_log_t *l = &sss_note_log2;
    uint64_t a = (uint64_t)(uintptr_t)addr, rel = a - l->lo;
    uint64_t mode = __atomic_load_n(l->mode, __ATOMIC_ACQUIRE);
    if (l->dsm == dsm && dsm != NULL && rel < l->span &&
        (uint64_t)len <= l->span - rel) {
        if (mode == 2) {
            return SSS_OK;
        }
        if (mode == 1 && l->owner == (uint64_t)pthread_self()) {
            uint64_t n = l->n;
            if (n > 0 && n <= SSS_NOTE_LOG_CAP &&
                l->ent[n - 1][0] + l->ent[n - 1][1] == a) {
                l->ent[n - 1][1] += len;
                return SSS_OK;
            }
            if (n < SSS_NOTE_LOG_CAP) {
                l->ent[n][0] = a;
                l->ent[n][1] = len;
                __atomic_store_n(&l->n, n + 1, __ATOMIC_RELEASE);
                return SSS_OK;
            }
        }
    }
    return (sss_dsm_note_write)(dsm, addr, len);
}

#ifndef SSS_NO_INLINE_NOTES
#define sss_dsm_note_write(dsm, addr, len) \
    sss_dsm_note_write_inline((dsm), (addr), (len))
#endif

/**
 * What code compiled by `sss cc` (the RCOP pass) uses: the heap range of
 * the DSM handle opened last in note mode (span 0 in trap mode and before
 * any heap), tested inline after each store that may reach the heap, and
 * the note called for stores inside it (as sss_dsm_note_write()).
 */
extern uint64_t sss_rcop_lo;
extern uint64_t sss_rcop_span;
void sss_rcop_note(const void *addr, size_t len);

/**
 * UDSM, in code compiled with `sss cc --udsm`: a constructor calls
 * sss_rcop_udsm() before main, so heaps are opened as SSS_DSM_UDSM (no
 * userfaultfd). Before each load or store inside the heap range the code
 * reads the page's byte in the presence map at sss_rcop_map (one byte per
 * page from sss_rcop_lo, non-zero while present) and calls
 * sss_rcop_fetch() when it is 0; a loop whose addresses ScalarEvolution
 * bounds calls sss_rcop_fetch_range() once at its entry instead.
 */
extern uint64_t sss_rcop_map;
void sss_rcop_udsm(void);

/**
 * In code compiled with `sss cc -fsss-opt=no` or `-fsss-opt=ia` (without
 * `mb`, the seeds' NO and IA rows): a constructor calls it before main,
 * so heaps opened afterwards send every note as a WRITE of its own at the
 * release, neither merged with its neighbours nor packed with others to
 * the same home.
 */
void sss_rcop_separate(void);
void sss_rcop_fetch(const void *addr, size_t len);
void sss_rcop_fetch_range(const void *lo, const void *hi);

/**
 * Back-off, in code compiled with `sss cc -fsss-opt=bo`: loops that note
 * tick sss_rcop_ticks and call sss_rcop_backoff() every 256th iteration;
 * it looks (at most every 0.2 ms) at this task's retransmission counter,
 * as the IDM shows it, and while it grew by the threshold since the last
 * look (the network is saturated) yields, then naps 0.1 ms at a time
 * (at most 0.7 ms in all). Counted as `backoffs` with SSS_STATS=json.
 */
extern uint64_t sss_rcop_ticks;
void sss_rcop_backoff(void);

/**
 * Sets the retransmissions between two looks that make sss_rcop_backoff()
 * back off (default 1; 0: at every look, to test the mechanism).
 */
void sss_rcop_backoff_threshold(uint64_t retransmissions);

/**
 * For loops `dst[p[d]++] = v` that `sss cc` notes by bucket: a copy of
 * the @p n cursors of @p width bytes (4 or 8) at @p p, taken at loop
 * entry, or NULL when nothing needs noting (trap mode, no heap) or @p n
 * is 0 or above 2^24; then each store is noted by itself. One #CM.
 */
void *sss_rcop_cursor_begin(const void *p, uint64_t n, uint64_t width);

/**
 * At loop exit: for each cursor that moved since @p snap, notes the
 * elements of @p elem bytes of @p dst it moved over (and the cursor, if
 * it is in the heap), then frees @p snap. Nothing when @p snap is NULL
 * or SSS_RCOP_DIFFED. One #CM, however many ranges it notes (counted as
 * `cursor_ranges` on the `{"rcop":...}` line of SSS_STATS=json).
 */
void sss_rcop_cursor_end(void *snap, const void *p, uint64_t n, uint64_t width,
                         const void *dst, uint64_t elem);

/**
 * Diffed ranges, in code compiled by `sss cc` (-fsss-opt=ia): before a
 * loop nest whose stores it can bound to [@p lo, @p hi) but not note as
 * one range (the bytes are not one run), the code calls this once
 * instead of noting each store; @p written is at most how many bytes
 * they write (0: unknown). Non-zero: those stores need no notes until
 * the next release (unlock, barrier): the heap twins the range's pages
 * (present pages now, the others as they arrive) and the release sends
 * the bytes that differ from the twins, as trap mode's diffs, so bytes
 * of the range that other tasks wrote are never overwritten. Zero: the
 * code notes each store as usual (trap mode or no heap, a range under
 * another protocol than SSS_DSM_ULRC, wider than 2^15 pages, or with
 * more present pages to copy than 64 plus 4 per page written). Parts of
 * the range outside the heap need nothing. The release sends each
 * changed 8-byte word whole (less those whose changes all lie in the
 * interval's notes): the stores left unnoted must write whole aligned
 * words, as `sss cc` makes sure; others are noted. One #CM.
 */
int sss_rcop_twin_range(const void *lo, const void *hi, uint64_t written);

/** What sss_rcop_cursor_twin() returns when the heap diffs the loop. */
#define SSS_RCOP_DIFFED ((void *)1)

/**
 * For a cursor loop (as sss_rcop_cursor_begin()) that takes its back
 * edge at most @p backs times, each iteration moving one of the @p n
 * cursors by one: its stores lie in [@p dst + min * @p elem, @p dst +
 * (max + @p backs + 1) * @p elem) for the least and greatest cursors at
 * entry, cut to the heap allocation holding the first (C's pointer
 * arithmetic keeps them there). With more than 64 cursors a page of that
 * range, returns
 * SSS_RCOP_DIFFED when the heap diffs the range and the cursors (as
 * sss_rcop_twin_range()); otherwise, and when the heap refuses, what
 * sss_rcop_cursor_begin() returns (the exit then notes by bucket, which
 * costs less than a twin a page). One #CM.
 */
void *sss_rcop_cursor_twin(const void *p, uint64_t n, uint64_t width, const void *dst,
                           uint64_t elem, uint64_t backs);

/**
 * 1 when sss_dsm_adopt() can share memory: in trap mode, and in note mode
 * where the kernel's userfaultfd has write-protect faults (not UDSM);
 * else 0.
 */
int sss_dsm_can_adopt(sss_dsm_h dsm);

/**
 * Collective: makes the program's own memory [@p addr, @p addr + @p len)
 * (its global variables; page-aligned, at the same address in every
 * task) shared, as an allocation homed at rank 0 with SSS_DSM_ULRC: every
 * task now sees rank 0's bytes, and stores to it reach the other tasks at
 * release as heap stores do. @p keep holds
 * @p nkeep pairs (address, length) of ranges inside it (at most 256, each
 * at most 64 KiB) that stay each task's own bytes (never sent by a
 * release). The memory's old
 * contents are replaced: no other thread may touch it during the call,
 * and it must never be unmapped. Pages arrive when first touched;
 * sss_dsm_finalize() fills in the rest, so it stays whole afterwards.
 * Stores to it are trapped in note mode too (no compiler notes them):
 * its pages are installed write-protected, a first store keeps a twin
 * and the release sends what changed.
 * SSS_ERR_INVALID_PARAM where sss_dsm_can_adopt() says 0, for a
 * misaligned range, a range overlapping the heap or differing between
 * tasks, a range holding libsss's own state (libsss linked statically
 * into the program), or a second call (in any task: every task fails
 * alike).
 */
sss_status_t sss_dsm_adopt(sss_dsm_h dsm, void *addr, size_t len,
                           const size_t *keep, size_t nkeep);

/**
 * Acquires lock @p id (0..255; at most 64 tasks) with acquire semantics:
 * pages other tasks wrote before releasing are re-fetched on next use.
 */
sss_status_t sss_dsm_lock(sss_dsm_h dsm, uint32_t id);

/** Releases lock @p id with release semantics: this task's writes reach
 *  their homes first. */
sss_status_t sss_dsm_unlock(sss_dsm_h dsm, uint32_t id);

/** Collective barrier with release and acquire semantics. After waiting
 *  `SSS_DSM_STALL` seconds it prints the tasks not there yet; with
 *  `SSS_DSM_STALL=abort:SECONDS` it returns SSS_ERR_TIMED_OUT instead. */
sss_status_t sss_dsm_barrier(sss_dsm_h dsm);

/** This task's heap counters that @p stats_p->field_mask names. */
sss_status_t sss_dsm_stats(sss_dsm_h dsm, sss_dsm_stats_t *stats_p);

#ifdef __cplusplus
}
#endif

#endif /* SSS_H */
