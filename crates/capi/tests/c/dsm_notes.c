/*
 * dsm_notes.c — notes of plain stores through the header's inline
 * sss_dsm_note_write(): each task stores every word of its block of an
 * SSS_DSM_BLOCK allocation and notes each store (WORDS notes a sweep),
 * for SWEEPS sweeps with barriers; every task checks every word. Prints
 * the runtime's note count (notes that reached the runtime):
 *   NOTES-OK tasks=N notes=K calls=C
 * Built with -DSSS_NO_INLINE_NOTES every note is a call.
 */
#include <sss.h>
#include <stdio.h>
#include <stdlib.h>

#define WORDS 4096 /* 8 pages a task */
#define SWEEPS 4

#define CHECK(call)                                                     \
    do {                                                                \
        sss_status_t st_ = (call);                                      \
        if (st_ != SSS_OK) {                                            \
            fprintf(stderr, "%s: %s (%s)\n", #call,                     \
                    sss_status_string(st_), sss_last_error());          \
            exit(1);                                                    \
        }                                                               \
    } while (0)

int main(void) {
    sss_task_h task;
    sss_dsm_h dsm;
    CHECK(sss_init(&task));
    CHECK(sss_dsm_init(task, SSS_DSM_PROTOCOL_ENV, SSS_DSM_NOTE, &dsm));
    uint32_t me = sss_task_rank(task), np = sss_task_size(task);
    uint64_t *a;
    CHECK(sss_dsm_malloc_all(dsm, (size_t)np * WORDS * 8, SSS_DSM_BLOCK, 0,
                             (void **)&a));
    uint64_t calls = 0;
    for (uint64_t s = 1; s <= SWEEPS; s++) {
        for (uint64_t i = (uint64_t)me * WORDS; i < (uint64_t)(me + 1) * WORDS;
             i++) {
            a[i] = s * 100000 + i;
            CHECK(sss_dsm_note_write(dsm, &a[i], sizeof a[i]));
            calls++;
        }
        CHECK(sss_dsm_barrier(dsm));
        for (uint64_t i = 0; i < (uint64_t)np * WORDS; i++) {
            if (a[i] != s * 100000 + i) {
                fprintf(stderr, "sweep %llu: word %llu is %llu\n",
                        (unsigned long long)s, (unsigned long long)i,
                        (unsigned long long)a[i]);
                return 1;
            }
        }
        CHECK(sss_dsm_barrier(dsm));
    }
    sss_dsm_stats_t st = {.field_mask = SSS_DSM_STATS_FIELD_ALL};
    CHECK(sss_dsm_stats(dsm, &st));
    printf("NOTES-OK tasks=%u notes=%llu calls=%llu\n", np,
           (unsigned long long)st.notes, (unsigned long long)calls);
    CHECK(sss_dsm_finalize(dsm));
    CHECK(sss_finalize(task));
    return 0;
}
