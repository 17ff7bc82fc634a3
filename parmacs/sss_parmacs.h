/*
 * PARMACS on SSS: the runtime behind parmacs/sss.m4.
 *
 * A PARMACS program is started by `sss run -n P prog`: all P tasks start
 * at once. Before main (or at MAIN_INITENV, sss_pm_init) each joins the
 * job and creates the shared heap; rank 0 runs main, every other task
 * waits for a CREATE. CREATE (sss_pm_create) hands a function to the next
 * idle task, going round-robin over the hosts of the job. In trap mode
 * (SSS_DSM_WRITES=trap) on more than one task the global variables are
 * shared memory (the executable's .data and .bss are a DSM range homed at
 * rank 0, sss_dsm_adopt): writes reach other tasks at LOCK, BARRIER and
 * condition variables, as with threads (SSS_PARMACS_GLOBALS=fork keeps
 * the snapshot below instead). With notes, CREATE instead sends
 * a snapshot of the creator's globals (in pieces): the created task
 * starts as a fork of its creator would, and later writes to globals are
 * not shared. Shared data lives in the shared heap (G_MALLOC), so
 * pointers to it kept in globals are valid everywhere; pointers to a
 * task's private memory (stack, malloc) are not, as with fork across
 * machines.
 *
 * Build: m4 parmacs/sss.m4 prog.c.in > prog.c, then
 *   cc -Iinclude -Iparmacs prog.c parmacs/sss_parmacs.c -lsss
 * linking libsss as a shared library (its state must not live in the
 * executable's globals). Compile with -DSSS_PM_NOTE_EACH to note every
 * shared store (ST) instead of one note per range (NOTE_RANGE).
 */
#ifndef SSS_PARMACS_H
#define SSS_PARMACS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A PARMACS lock: an ADSM lock id (LOCKDEC declares an unsigned). */
typedef unsigned sss_pm_lock_t;

/** PAUSE flag: a word in the shared heap guarded by a lock. */
typedef struct sss_pm_pause {
    volatile long flag; /**< 1 when set. */
    sss_pm_lock_t lock; /**< Guards flag. */
} sss_pm_pause_t;

/** GSDEC: a global subscript (GETSUB hands out 0, 1, ... max, then -1). */
typedef struct sss_pm_gs {
    volatile long v;    /**< Next subscript. */
    sss_pm_lock_t lock; /**< Guards v. */
} sss_pm_gs_t;

/** MAIN_INITENV: joins the job and creates the heap. Returns on rank 0
 *  only; other tasks serve CREATEs until MAIN_END, then exit. A task
 *  started by `sss run` has joined before main, and this returns. */
void sss_pm_init(void);

/** MAIN_END: ends every task of the job; never returns. */
void sss_pm_end(int code);

/** CREATE: runs @p fn in the next idle task, with this task's globals. */
void sss_pm_create(void (*fn)(void));

/** CREATE(fn, P) of SPLASH-3: runs @p fn in @p p - 1 idle tasks, then
 *  in this one; WAIT_FOR_END(P) then waits for the P - 1. */
void sss_pm_create_all(void (*fn)(void), long p);

/** WAIT_FOR_END: waits until @p n created functions have returned (n - 1
 *  after a CREATE(fn, P)). */
void sss_pm_wait_for_end(long n);

/** G_MALLOC: @p len bytes of the shared heap (placement from
 *  SSS_PARMACS_PLACEMENT: first_touch (default), block, cyclic[:pages]);
 *  page-aligned from 2 KiB up, smaller blocks share pages (16-aligned). */
void *sss_pm_malloc(size_t len);

/** G_MALLOC of an allocation whose declaration `SSS_PROTOCOL(name)`
 *  annotates (`sss cc` calls this in place of sss_pm_malloc): @p len
 *  bytes under @p protocol (an sss_dsm_protocol_t value), on pages of
 *  their own. */
void *sss_pm_malloc_with(size_t len, int protocol);

/** The protocol (an sss_dsm_protocol_t value) of the allocation holding
 *  @p p, or -1 when it is in none. */
int sss_pm_protocol(const void *p);

/** Selects the consistency protocol of what a declaration's G_MALLOC
 *  returns, for programs built with `sss cc`: `SSS_PROTOCOL(update)
 *  double *grid;` then `grid = G_MALLOC(n);` allocates under `update`.
 *  Names: ulrc, invalidate, home_update, update, update_drct, home_only.
 *  Other compilers ignore it (the heap's default protocol). */
#if defined(__clang__)
#define SSS_PROTOCOL(name) __attribute__((annotate("sss-protocol:" #name)))
#else
#define SSS_PROTOCOL(name)
#endif

/** LOCKINIT: a fresh lock id. */
sss_pm_lock_t sss_pm_lock_new(void);

/** @p n consecutive lock ids; returns the first (they wrap round). */
sss_pm_lock_t sss_pm_lock_new_n(unsigned long n);

/** ALOCKINIT: fresh ids for @p n locks at @p locks. */
void sss_pm_alock_init(sss_pm_lock_t *locks, unsigned long n);

/** LOCK, with acquire semantics. */
void sss_pm_lock(sss_pm_lock_t l);

/** UNLOCK, with release semantics. */
void sss_pm_unlock(sss_pm_lock_t l);

/** BARRIER among @p n tasks (must be the job size). */
void sss_pm_barrier(int n);

/** Records a store of @p len bytes at @p addr (no-op outside the heap
 *  and in trap mode). */
void sss_pm_note(const void *addr, size_t len);

/** SETPAUSE / CLEARPAUSE. */
void sss_pm_pause_set(sss_pm_pause_t *p, long v);

/** WAITPAUSE: waits until the flag is set. */
void sss_pm_pause_wait(sss_pm_pause_t *p);

/* Condition variables (CONDVARDEC declares a long) are known by their
 * address, the same in every task; they hold no state of their own. */

/** CONDVARINIT (nothing to do). */
void sss_pm_cond_init(const void *cv);

/** CONDVARWAIT: releases @p l, sleeps until signalled, takes @p l again.
 *  The caller holds @p l. Wakes up only after a signal or broadcast. */
void sss_pm_cond_wait(const void *cv, sss_pm_lock_t l);

/** CONDVARSIGNAL: wakes one task waiting on @p cv, if any. */
void sss_pm_cond_signal(const void *cv);

/** CONDVARBCAST: wakes every task waiting on @p cv. */
void sss_pm_cond_broadcast(const void *cv);

/** GSINIT. */
void sss_pm_gs_init(sss_pm_gs_t *gs);

/** GETSUB: the next subscript up to @p max, then -1 (and starts over). */
long sss_pm_getsub(sss_pm_gs_t *gs, long max);

/** CLOCK: microseconds since an arbitrary start. */
unsigned long sss_pm_clock(void);

/** This task's rank and the job size (for diagnostics). */
int sss_pm_rank(void);
/** Tasks in the job. */
int sss_pm_size(void);

/* Shared stores. ST(lvalue, value) stores; with SSS_PM_NOTE_EACH it also
 * notes the store (unoptimized: one consistency call per store).
 * NOTE_RANGE(addr, len) notes a contiguous run once (coalesced); it does
 * nothing with SSS_PM_NOTE_EACH, whose stores were noted one by one.
 * SSS_PM_NO_NOTES makes both plain (unmodified programs). */
#if defined(SSS_PM_NO_NOTES)
/* Plain PARMACS, as SPLASH ships it: the program notes nothing, so it
 * needs trap mode or a compiler that notes its stores (`sss cc`). */
#define SSS_PM_ST(lv, v) do { (lv) = (v); } while (0)
#define SSS_PM_NOTE_RANGE(a, n) do { (void)(a); (void)(n); } while (0)
#elif defined(SSS_PM_NOTE_EACH)
#define SSS_PM_ST(lv, v) \
    do { (lv) = (v); sss_pm_note((const void *)&(lv), sizeof(lv)); } while (0)
#define SSS_PM_NOTE_RANGE(a, n) do { (void)(a); (void)(n); } while (0)
#else
#define SSS_PM_ST(lv, v) do { (lv) = (v); } while (0)
#define SSS_PM_NOTE_RANGE(a, n) sss_pm_note((const void *)(a), (size_t)(n))
#endif

#ifdef __cplusplus
}
#endif

#endif /* SSS_PARMACS_H */
