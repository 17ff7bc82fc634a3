divert(-1)
# PARMACS macros for POSIX threads on one machine: the same .c.in sources
# as parmacs/sss.m4, for reference runs. m4 parmacs/pthreads.m4 prog.c.in
# > prog.c; cc prog.c -lpthread.

define(MAIN_ENV, `
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/time.h>
#define PM_MAX_THREADS 1024
pthread_t pm_threads_[PM_MAX_THREADS];
int pm_nthreads_;
pthread_barrier_t pm_bar_;
int pm_barrier_n_;
pthread_mutex_t pm_barrier_init_ = PTHREAD_MUTEX_INITIALIZER;
static void *pm_start_(void *fn) { ((void (*)(void))fn)(); return NULL; }
static void pm_barrier_(int n)
{
    pthread_mutex_lock(&pm_barrier_init_);
    if (pm_barrier_n_ != n) { pthread_barrier_init(&pm_bar_, NULL, (unsigned)n); pm_barrier_n_ = n; }
    pthread_mutex_unlock(&pm_barrier_init_);
    pthread_barrier_wait(&pm_bar_);
}
typedef struct { volatile long flag; pthread_mutex_t m; pthread_cond_t c; } pm_pause_t;
')
define(EXTERN_ENV, `
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/time.h>
')
define(MAIN_INITENV, `')
define(MAIN_END, `exit(0);')

define(G_MALLOC, `calloc(1, $1)')
define(G_FREE, `free($1);')
define(CLOCK, `{ struct timeval pm_tv_; gettimeofday(&pm_tv_, NULL); ($1) = (unsigned long)pm_tv_.tv_sec * 1000000ul + (unsigned long)pm_tv_.tv_usec; }')

define(CREATE, `{ if (pthread_create(&pm_threads_[pm_nthreads_++], NULL, pm_start_, (void *)($1)) != 0) { perror("pthread_create"); exit(1); } }')
define(WAIT_FOR_END, `{ int pm_i_; for (pm_i_ = 0; pm_i_ < ($1) && pm_i_ < pm_nthreads_; pm_i_++) pthread_join(pm_threads_[pm_i_], NULL); }')

define(LOCKDEC, `pthread_mutex_t $1;')
define(LOCKINIT, `pthread_mutex_init(&($1), NULL);')
define(LOCK, `pthread_mutex_lock(&($1));')
define(UNLOCK, `pthread_mutex_unlock(&($1));')

define(ALOCKDEC, `pthread_mutex_t $1[$2];')
define(ALOCKINIT, `{ int pm_i_; for (pm_i_ = 0; pm_i_ < ($2); pm_i_++) pthread_mutex_init(&($1)[pm_i_], NULL); }')
define(ALOCK, `pthread_mutex_lock(&($1)[$2]);')
define(AULOCK, `pthread_mutex_unlock(&($1)[$2]);')

define(BARDEC, `int $1;')
define(BARINIT, `')
define(BARRIER, `pm_barrier_($2);')

define(PAUSEDEC, `pm_pause_t $1;')
define(PAUSEINIT, `{ ($1).flag = 0; pthread_mutex_init(&($1).m, NULL); pthread_cond_init(&($1).c, NULL); }')
define(SETPAUSE, `{ pthread_mutex_lock(&($1).m); ($1).flag = 1; pthread_cond_broadcast(&($1).c); pthread_mutex_unlock(&($1).m); }')
define(CLEARPAUSE, `{ pthread_mutex_lock(&($1).m); ($1).flag = 0; pthread_mutex_unlock(&($1).m); }')
define(WAITPAUSE, `{ pthread_mutex_lock(&($1).m); while (!($1).flag) pthread_cond_wait(&($1).c, &($1).m); pthread_mutex_unlock(&($1).m); }')

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
undefine(`include')
undefine(`unix')
undefine(`translit')
divert(0)dnl
