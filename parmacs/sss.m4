divert(-1)
# PARMACS macros for SSS: m4 parmacs/sss.m4 prog.c.in > prog.c
# The runtime is parmacs/sss_parmacs.c (see sss_parmacs.h); link with
# -lsss. Tasks: `sss run -n P prog`; CREATE forks onto the next task.
# Both dialects: SPLASH-2's CREATE(fn) (one task) with WAIT_FOR_END(n)
# (n created tasks), and SPLASH-3's CREATE(fn, P) (P - 1 tasks, then fn
# in the creator) with WAIT_FOR_END(P); the dialect follows from
# CREATE's argument count. See docs/parmacs.md.

define(SSS_PM_INCLUDES, `
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/time.h>
#include <sss_parmacs.h>
#ifndef PAGE_SIZE
#define PAGE_SIZE 4096
#endif
')
define(MAIN_ENV, `SSS_PM_INCLUDES')
define(EXTERN_ENV, `SSS_PM_INCLUDES')
define(ENV, `')
define(NEWPROC, `')
define(MAIN_INITENV, `sss_pm_init();')
define(MAIN_END, `sss_pm_end(0);')

# Allocation. As in SPLASH's own macro files, G_MALLOC and NU_MALLOC end
# with a semicolon (programs rely on it); the _F forms do not.
define(G_MALLOC, `sss_pm_malloc($1);')
define(G_MALLOC_F, `sss_pm_malloc($1)')
define(NU_MALLOC, `sss_pm_malloc($1);')
define(NU_MALLOC_F, `sss_pm_malloc($1)')
define(G_FREE, `;')
define(NU_FREE, `;')
define(CLOCK, `{ ($1) = sss_pm_clock(); }')

define(CREATE, `ifelse($#, 0, ``CREATE'',
    $#, 1, `sss_pm_create($1);',
    $#, 2, `sss_pm_create_all($1, $2);',
    `errprint(__file__:__line__: `CREATE takes (fn) or (fn, P)
')m4exit(1)')')
define(WAIT_FOR_END, `sss_pm_wait_for_end($1);')

define(LOCKDEC, `unsigned $1;')
define(LOCKINIT, `{ ($1) = sss_pm_lock_new(); sss_pm_note(&($1), sizeof($1)); }')
define(LOCK, `sss_pm_lock($1);')
define(UNLOCK, `sss_pm_unlock($1);')

define(ALOCKDEC, `unsigned $1[$2];')
define(ALOCKINIT, `sss_pm_alock_init(&($1)[0], ($2));')
define(ALOCK, `sss_pm_lock(($1)[$2]);')
define(AULOCK, `sss_pm_unlock(($1)[$2]);')
define(AGETL, `(($1)[$2])')

# Null locks, as in SPLASH's macro files.
define(NLOCKDEC, `long $1;')
define(NLOCKINIT, `{;}')
define(NLOCK, `{;}')
define(NUNLOCK, `{;}')

# BARINIT takes (bar) in SPLASH-2 and (bar, P) in SPLASH-3; the count
# comes with each BARRIER.
define(BARDEC, `int $1;')
define(BARINIT, `')
define(BARRIER, `sss_pm_barrier($2);')
define(BAREXCLUDE, `{;}')
define(BARINCLUDE, `{;}')

# Condition variables block (a waiter sleeps until signalled); the lock
# of CONDVARWAIT is the one the caller holds, e.g. AGETL(locks, i). A
# variable is known by its address, so it needs no type of the runtime
# (SPLASH headers declare some before EXTERN_ENV); so are locks.
define(CONDVARDEC, `long $1;')
define(CONDVARINIT, `sss_pm_cond_init(&($1));')
define(CONDVARWAIT, `sss_pm_cond_wait(&($1), ($2));')
define(CONDVARSIGNAL, `sss_pm_cond_signal(&($1));')
define(CONDVARBCAST, `sss_pm_cond_broadcast(&($1));')

# Fences order this task's own accesses; other tasks see shared data at
# LOCK, UNLOCK, BARRIER and CONDVARWAIT (release consistency).
define(RELEASE_FENCE, `{ __atomic_thread_fence(__ATOMIC_RELEASE); }')
define(ACQUIRE_FENCE, `{ __atomic_thread_fence(__ATOMIC_ACQUIRE); }')
define(FULL_FENCE, `{ __atomic_thread_fence(__ATOMIC_SEQ_CST); }')

define(GSDEC, `sss_pm_gs_t $1;')
define(GSINIT, `sss_pm_gs_init(&($1));')
define(GETSUB, `{ ($2) = sss_pm_getsub(&($1), ($3)); }')
define(NU_GSDEC, `sss_pm_gs_t $1;')
define(NU_GSINIT, `sss_pm_gs_init(&($1));')
define(NU_GETSUB, `GETSUB($1, $2, $3, $4)')

define(PAUSEDEC, `sss_pm_pause_t $1;')
define(PAUSEINIT, `{ ($1).flag = 0; ($1).lock = sss_pm_lock_new(); sss_pm_note(&($1), sizeof($1)); }')
define(SETPAUSE, `sss_pm_pause_set(&($1), 1);')
define(CLEARPAUSE, `sss_pm_pause_set(&($1), 0);')
define(WAITPAUSE, `sss_pm_pause_wait(&($1));')
define(EVENT, `{;}')
define(PAUSE, `{;}')

# Simulator and tracing hooks of SPLASH's macro files: nothing to do.
define(SPLASH3_ROI_BEGIN, `')
define(SPLASH3_ROI_END, `')
define(ADEC, `long $1;')
define(AINIT, `{;}')
define(PROBEND, `{;}')
define(AUG_ON, ` ')
define(AUG_OFF, ` ')
define(TRACE_ON, ` ')
define(TRACE_OFF, ` ')
define(REF_TRACE_ON, ` ')
define(REF_TRACE_OFF, ` ')
define(DYN_TRACE_ON, `;')
define(DYN_TRACE_OFF, `;')
define(DYN_REF_TRACE_ON, `;')
define(DYN_REF_TRACE_OFF, `;')
define(DYN_SIM_ON, `;')
define(DYN_SIM_OFF, `;')
define(DYN_SCHED_ON, `;')
define(DYN_SCHED_OFF, `;')
define(AUG_SET_LOLIMIT, `;')
define(AUG_SET_HILIMIT, `;')
define(MENTER, `{;}')
define(DELAY, `{;}')
define(CONTINUE, `{;}')
define(MEXIT, `{;}')
define(MONINIT, `{;}')
define(GET_HOME, `{ ($1) = 0; }')
define(GET_PID, `{ ($1) = sss_pm_rank(); }')
define(AUG_DELAY, `{ sleep($1); }')
define(ST_LOG, `{;}')
define(SET_HOME, `{;}')

# Lock and pause initialization always notes its words: they are
# shared whatever the program's note mode.
# Shared stores (no-ops for the pthreads build): see sss_parmacs.h.
define(ST, `SSS_PM_ST($1, $2);')
define(NOTE_RANGE, `SSS_PM_NOTE_RANGE($1, $2);')

# m4 builtins that are common C identifiers. `include' stays: programs
# such as Radiosity use include(file.h); `#include' is an m4 comment.
undefine(`index')
undefine(`len')
undefine(`format')
undefine(`substr')
undefine(`eval')
undefine(`shift')
undefine(`incr')
undefine(`decr')
undefine(`unix')
undefine(`translit')
divert(0)dnl
