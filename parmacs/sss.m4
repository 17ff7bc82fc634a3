divert(-1)
# PARMACS macros for SSS: m4 parmacs/sss.m4 prog.c.in > prog.c
# The runtime is parmacs/sss_parmacs.c (see sss_parmacs.h); link with
# -lsss. Tasks: `sss run -n P prog`; CREATE forks onto the next task.

define(MAIN_ENV, `
#include <stdio.h>
#include <stdlib.h>
#include <sss_parmacs.h>
')
define(EXTERN_ENV, `
#include <stdio.h>
#include <stdlib.h>
#include <sss_parmacs.h>
')
define(MAIN_INITENV, `sss_pm_init();')
define(MAIN_END, `sss_pm_end(0);')

define(G_MALLOC, `sss_pm_malloc($1)')
define(G_FREE, `')
define(CLOCK, `($1) = sss_pm_clock();')

define(CREATE, `sss_pm_create($1);')
define(WAIT_FOR_END, `sss_pm_wait_for_end($1);')

define(LOCKDEC, `sss_pm_lock_t $1;')
define(LOCKINIT, `{ ($1) = sss_pm_lock_new(); sss_pm_note(&($1), sizeof($1)); }')
define(LOCK, `sss_pm_lock($1);')
define(UNLOCK, `sss_pm_unlock($1);')

define(ALOCKDEC, `sss_pm_lock_t $1[$2];')
define(ALOCKINIT, `{ int sss_pm_i_; for (sss_pm_i_ = 0; sss_pm_i_ < ($2); sss_pm_i_++) ($1)[sss_pm_i_] = sss_pm_lock_new(); sss_pm_note(&($1)[0], sizeof(sss_pm_lock_t) * ($2)); }')
define(ALOCK, `sss_pm_lock(($1)[$2]);')
define(AULOCK, `sss_pm_unlock(($1)[$2]);')

define(BARDEC, `int $1;')
define(BARINIT, `')
define(BARRIER, `sss_pm_barrier($2);')

define(PAUSEDEC, `sss_pm_pause_t $1;')
define(PAUSEINIT, `{ ($1).flag = 0; ($1).lock = sss_pm_lock_new(); sss_pm_note(&($1), sizeof($1)); }')
define(SETPAUSE, `sss_pm_pause_set(&($1), 1);')
define(CLEARPAUSE, `sss_pm_pause_set(&($1), 0);')
define(WAITPAUSE, `sss_pm_pause_wait(&($1));')

# Lock and pause initialization always notes its words: they are
# shared whatever the program's note mode.
# Shared stores (no-ops for the pthreads build): see sss_parmacs.h.
define(ST, `SSS_PM_ST($1, $2);')
define(NOTE_RANGE, `SSS_PM_NOTE_RANGE($1, $2);')

# m4 builtins that are common C identifiers.
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
