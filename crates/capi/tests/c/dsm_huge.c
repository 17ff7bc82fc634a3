/*
 * sss_dsm_malloc with sizes too large for the heap or for size_t
 * arithmetic: each fails with SSS_ERR_NO_MEMORY (in every task for the
 * collective form), and the heap stays usable: the next allocation does
 * not overlap a live block. Rank 0 prints "HUGE-OK" when all held.
 */
#include <sss.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PAGE 4096

#define CHECK(call)                                                        \
    do {                                                                   \
        sss_status_t st_ = (call);                                         \
        if (st_ != SSS_OK) {                                               \
            fprintf(stderr, "%s: %s (%s)\n", #call, sss_status_string(st_), \
                    sss_last_error());                                     \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

static const size_t huge[] = {SIZE_MAX, (size_t)0xfffffffffffff000u,
                              SIZE_MAX - PAGE + 2, (size_t)1 << 62};

static void no_memory(const char *what, size_t len, sss_status_t st) {
    if (st != SSS_ERR_NO_MEMORY) {
        fprintf(stderr, "%s(%#zx): %s, want SSS_ERR_NO_MEMORY\n", what, len,
                sss_status_string(st));
        exit(1);
    }
}

int main(void) {
    sss_task_h task;
    sss_dsm_h dsm;
    uint32_t rank;
    size_t i;
    void *a, *b, *p;
    CHECK(sss_init(&task));
    rank = sss_task_rank(task);
    CHECK(sss_dsm_init(task, SSS_DSM_PROTOCOL_ENV, SSS_DSM_WRITES_ENV, &dsm));
    CHECK(sss_dsm_malloc_all(dsm, PAGE, SSS_DSM_BLOCK, 0, &a));
    for (i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        no_memory("sss_dsm_malloc_all", huge[i],
                  sss_dsm_malloc_all(dsm, huge[i], SSS_DSM_BLOCK, 0, &p));
    }
    if (rank == 0) {
        for (i = 0; i < sizeof huge / sizeof huge[0]; i++) {
            no_memory("sss_dsm_malloc", huge[i],
                      sss_dsm_malloc(dsm, huge[i], SSS_DSM_BLOCK, 0, &p));
            no_memory("sss_dsm_malloc (first touch)", huge[i],
                      sss_dsm_malloc(dsm, huge[i], SSS_DSM_FIRST_TOUCH, 0,
                                     &p));
        }
        CHECK(sss_dsm_malloc(dsm, PAGE, SSS_DSM_BLOCK, 0, &b));
        if ((uintptr_t)b < (uintptr_t)a + PAGE &&
            (uintptr_t)a < (uintptr_t)b + PAGE) {
            fprintf(stderr, "new block %p overlaps live block %p\n", b, a);
            exit(1);
        }
        printf("HUGE-OK\n");
    }
    CHECK(sss_dsm_finalize(dsm));
    CHECK(sss_finalize(task));
    return 0;
}
