divert(-1)
# PARMACS macros for POSIX threads on one machine: the same .c.in sources
# as parmacs/sss.m4, for reference runs. m4 parmacs/pthreads.m4 prog.c.in
# > prog.c; cc prog.c -lpthread. Both dialects, as in sss.m4. Shared state
# is defined by MAIN_ENV and declared by EXTERN_ENV, so multi-file
# programs link; helpers are static inline in every file. A file may
# expand EXTERN_ENV more than once (FMM does).

define(PM_INCLUDES, `
#ifndef PM_PARMACS_ENV_
#define PM_PARMACS_ENV_
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/time.h>
#ifndef PAGE_SIZE
#define PAGE_SIZE 4096
#endif
#ifndef SSS_PROTOCOL
#define SSS_PROTOCOL(name)
#endif
#define PM_MAX_THREADS 1024
typedef struct { pthread_mutex_t m; pthread_cond_t c; unsigned long count, cycle; } pm_bar_t;
typedef struct { volatile long flag; pthread_mutex_t m; pthread_cond_t c; } pm_pause_t;
typedef struct { long v; pthread_mutex_t m; } pm_gs_t;
extern pthread_t pm_threads_[PM_MAX_THREADS];
extern int pm_nthreads_, pm_splash3_;
extern pthread_mutex_t pm_create_lock_;
static inline void *pm_start_(void *fn) { ((void (*)(void))fn)(); return NULL; }
static inline void pm_create_(void (*fn)(void), long n)
{
    pthread_mutex_lock(&pm_create_lock_);
    for (long i = 0; i < n; i++) {
        if (pm_nthreads_ >= PM_MAX_THREADS || pthread_create(&pm_threads_[pm_nthreads_], NULL, pm_start_, (void *)fn) != 0) {
            perror("pthread_create");
            exit(1);
        }
        pm_nthreads_++;
    }
    pthread_mutex_unlock(&pm_create_lock_);
}
static inline void pm_wait_for_end_(long n)
{
    if (pm_splash3_)
        n--;
    for (long i = 0; i < n && i < pm_nthreads_; i++)
        pthread_join(pm_threads_[i], NULL);
}
static inline void pm_bar_init_(pm_bar_t *b)
{
    pthread_mutex_init(&b->m, NULL);
    pthread_cond_init(&b->c, NULL);
    b->count = 0;
    b->cycle = 0;
}
static inline void pm_bar_wait_(pm_bar_t *b, long n)
{
    pthread_mutex_lock(&b->m);
    unsigned long cycle = b->cycle;
    if (++b->count >= (unsigned long)n) {
        b->count = 0;
        b->cycle++;
        pthread_cond_broadcast(&b->c);
    } else {
        while (cycle == b->cycle)
            pthread_cond_wait(&b->c, &b->m);
    }
    pthread_mutex_unlock(&b->m);
}
static inline long pm_getsub_(pm_gs_t *g, long max)
{
    long sub;
    pthread_mutex_lock(&g->m);
    if (g->v <= max) {
        sub = g->v++;
    } else {
        sub = -1;
        g->v = 0;
    }
    pthread_mutex_unlock(&g->m);
    return sub;
}
#endif
')
define(MAIN_ENV, `PM_INCLUDES
pthread_t pm_threads_[PM_MAX_THREADS];
int pm_nthreads_, pm_splash3_;
pthread_mutex_t pm_create_lock_ = PTHREAD_MUTEX_INITIALIZER;
')
define(EXTERN_ENV, `PM_INCLUDES')
define(ENV, `')
define(NEWPROC, `')
define(MAIN_INITENV, `')
define(MAIN_END, `exit(0);')

define(G_MALLOC, `calloc(1, $1);')
define(G_MALLOC_F, `calloc(1, $1)')
define(NU_MALLOC, `calloc(1, $1);')
define(NU_MALLOC_F, `calloc(1, $1)')
define(G_FREE, `;')
define(NU_FREE, `;')
define(CLOCK, `{ struct timeval pm_tv_; gettimeofday(&pm_tv_, NULL); ($1) = (unsigned long)pm_tv_.tv_sec * 1000000ul + (unsigned long)pm_tv_.tv_usec; }')

define(CREATE, `ifelse($#, 0, ``CREATE'',
    $#, 1, `pm_create_((void (*)(void))($1), 1);',
    $#, 2, `{ pm_splash3_ = 1; pm_create_((void (*)(void))($1), ($2) - 1); $1(); }',
    `errprint(__file__:__line__: `CREATE takes (fn) or (fn, P)
')m4exit(1)')')
define(WAIT_FOR_END, `pm_wait_for_end_($1);')

define(LOCKDEC, `pthread_mutex_t $1;')
define(LOCKINIT, `pthread_mutex_init(&($1), NULL);')
define(LOCK, `pthread_mutex_lock(&($1));')
define(UNLOCK, `pthread_mutex_unlock(&($1));')

define(ALOCKDEC, `pthread_mutex_t $1[$2];')
define(ALOCKINIT, `{ long pm_i_; for (pm_i_ = 0; pm_i_ < (long)($2); pm_i_++) pthread_mutex_init(&($1)[pm_i_], NULL); }')
define(ALOCK, `pthread_mutex_lock(&($1)[$2]);')
define(AULOCK, `pthread_mutex_unlock(&($1)[$2]);')
define(AGETL, `(($1)[$2])')

define(NLOCKDEC, `long $1;')
define(NLOCKINIT, `{;}')
define(NLOCK, `{;}')
define(NUNLOCK, `{;}')

define(BARDEC, `pm_bar_t $1;')
define(BARINIT, `pm_bar_init_(&($1));')
define(BARRIER, `pm_bar_wait_(&($1), ($2));')
define(BAREXCLUDE, `{;}')
define(BARINCLUDE, `{;}')

define(CONDVARDEC, `pthread_cond_t $1;')
define(CONDVARINIT, `pthread_cond_init(&($1), NULL);')
define(CONDVARWAIT, `pthread_cond_wait(&($1), &($2));')
define(CONDVARSIGNAL, `pthread_cond_signal(&($1));')
define(CONDVARBCAST, `pthread_cond_broadcast(&($1));')

define(RELEASE_FENCE, `{ __atomic_thread_fence(__ATOMIC_RELEASE); }')
define(ACQUIRE_FENCE, `{ __atomic_thread_fence(__ATOMIC_ACQUIRE); }')
define(FULL_FENCE, `{ __atomic_thread_fence(__ATOMIC_SEQ_CST); }')

define(GSDEC, `pm_gs_t $1;')
define(GSINIT, `{ ($1).v = 0; pthread_mutex_init(&($1).m, NULL); }')
define(GETSUB, `{ ($2) = pm_getsub_(&($1), ($3)); }')
define(NU_GSDEC, `pm_gs_t $1;')
define(NU_GSINIT, `GSINIT($1)')
define(NU_GETSUB, `GETSUB($1, $2, $3, $4)')

define(PAUSEDEC, `pm_pause_t $1;')
define(PAUSEINIT, `{ ($1).flag = 0; pthread_mutex_init(&($1).m, NULL); pthread_cond_init(&($1).c, NULL); }')
define(SETPAUSE, `{ pthread_mutex_lock(&($1).m); ($1).flag = 1; pthread_cond_broadcast(&($1).c); pthread_mutex_unlock(&($1).m); }')
define(CLEARPAUSE, `{ pthread_mutex_lock(&($1).m); ($1).flag = 0; pthread_mutex_unlock(&($1).m); }')
define(WAITPAUSE, `{ pthread_mutex_lock(&($1).m); while (!($1).flag) pthread_cond_wait(&($1).c, &($1).m); pthread_mutex_unlock(&($1).m); }')
define(EVENT, `{;}')
define(PAUSE, `{;}')

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
define(GET_PID, `{ ($1) = 0; }')
define(AUG_DELAY, `{ sleep($1); }')
define(ST_LOG, `{;}')
define(SET_HOME, `{;}')

define(ST, `(($1) = ($2));')
define(NOTE_RANGE, `')

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
