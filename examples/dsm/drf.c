/*
 * A data-race-free suite on the shared heap; every result is checked
 * against the answer a sequential run gives.
 *
 * 1. Producer/consumer through a lock: rank 0 publishes items 1..ITEMS
 *    (value and sequence number) under lock 1; every other task takes
 *    the lock until it has seen each item, checking the value.
 * 2. All tasks write disjoint words of one page in barrier phases, and
 *    every task reads all words after each barrier (ulrc only: under
 *    invalidate a page has one writer).
 * 3. A counter incremented ROUNDS times by every task under lock 2.
 * 4. Explicit calls and switching: every task writes its word of a
 *    home_only allocation with sss_dsm_write, everyone reads them all
 *    with sss_dsm_read; then the allocation switches to the heap's
 *    protocol and the words are read with plain loads and rewritten.
 *
 * Rank 0 prints "DRF-OK tasks=N counter=C" when everything matched.
 */
#include <sss.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITEMS 20
#define PHASES 6
#define ROUNDS 25

static sss_dsm_h dsm;
static int trap;

#define CHECK(call)                                                        \
    do {                                                                   \
        sss_status_t st_ = (call);                                         \
        if (st_ != SSS_OK) {                                               \
            fprintf(stderr, "%s: %s (%s)\n", #call, sss_status_string(st_), \
                    sss_last_error());                                     \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

/* A store followed by its note, as the compiler pass would emit it. */
static void put(volatile uint64_t *p, uint64_t v) {
    *p = v;
    if (!trap) {
        CHECK(sss_dsm_note_write(dsm, (const void *)p, sizeof *p));
    }
}

static int fail(const char *what, uint64_t got, uint64_t want) {
    fprintf(stderr, "mismatch in %s: got %llu, want %llu\n", what,
            (unsigned long long)got, (unsigned long long)want);
    exit(1);
}

int main(void) {
    sss_task_h task;
    CHECK(sss_init(&task));
    CHECK(sss_dsm_init(task, SSS_DSM_PROTOCOL_ENV, SSS_DSM_WRITES_ENV, &dsm));
    trap = sss_dsm_is_trap(dsm);
    uint64_t me = sss_task_rank(task), np = sss_task_size(task);
    const char *proto = getenv("SSS_DSM_PROTOCOL");
    int multi_writer = proto == NULL || strcmp(proto, "invalidate") != 0;

    /* 1. Producer/consumer. */
    volatile uint64_t *box;
    CHECK(sss_dsm_malloc_all(dsm, 16, SSS_DSM_EXPLICIT, (uint32_t)(np - 1),
                             (void **)&box));
    for (uint64_t item = 1; item <= ITEMS; item++) {
        if (me == 0) {
            CHECK(sss_dsm_lock(dsm, 1));
            put(&box[1], item * 1000 + 7);
            put(&box[0], item);
            CHECK(sss_dsm_unlock(dsm, 1));
        } else {
            for (;;) {
                CHECK(sss_dsm_lock(dsm, 1));
                uint64_t seq = box[0], val = box[1];
                CHECK(sss_dsm_unlock(dsm, 1));
                if (seq >= item) {
                    if (val != seq * 1000 + 7) {
                        fail("producer/consumer", val, seq * 1000 + 7);
                    }
                    break;
                }
            }
        }
        CHECK(sss_dsm_barrier(dsm));
    }

    /* 2. Disjoint words of one page, barrier phases. */
    if (multi_writer) {
        volatile uint64_t *page;
        CHECK(sss_dsm_malloc_all(dsm, 4096, SSS_DSM_EXPLICIT, 0, (void **)&page));
        for (uint64_t ph = 1; ph <= PHASES; ph++) {
            put(&page[me], ph * 100 + me);
            CHECK(sss_dsm_barrier(dsm));
            for (uint64_t r = 0; r < np; r++) {
                if (page[r] != ph * 100 + r) {
                    fail("shared page", page[r], ph * 100 + r);
                }
            }
            CHECK(sss_dsm_barrier(dsm));
        }
    }

    /* 3. Counter under a lock. */
    volatile uint64_t *counter;
    CHECK(sss_dsm_malloc_all(dsm, 8, SSS_DSM_CYCLIC, 1, (void **)&counter));
    for (int k = 0; k < ROUNDS; k++) {
        CHECK(sss_dsm_lock(dsm, 2));
        put(counter, *counter + 1);
        CHECK(sss_dsm_unlock(dsm, 2));
    }
    CHECK(sss_dsm_barrier(dsm));
    if (*counter != np * ROUNDS) {
        fail("counter", *counter, np * ROUNDS);
    }
    /* 4. Explicit calls, then a protocol switch. */
    volatile uint64_t *words;
    CHECK(sss_dsm_malloc_all_with(dsm, 4096, SSS_DSM_CYCLIC, 1,
                                  SSS_DSM_HOME_ONLY, (void **)&words));
    uint32_t got_proto = 0;
    CHECK(sss_dsm_protocol(dsm, (const void *)words, &got_proto));
    if (got_proto != SSS_DSM_HOME_ONLY) {
        fail("protocol of the home_only allocation", got_proto,
             SSS_DSM_HOME_ONLY);
    }
    uint64_t mine = 7000 + me;
    CHECK(sss_dsm_write(dsm, (void *)&words[me], &mine, sizeof mine));
    CHECK(sss_dsm_barrier(dsm));
    for (uint64_t r = 0; r < np; r++) {
        uint64_t v = 0;
        CHECK(sss_dsm_read(dsm, (const void *)&words[r], &v, sizeof v));
        if (v != 7000 + r) {
            fail("sss_dsm_read", v, 7000 + r);
        }
    }
    CHECK(sss_dsm_set_protocol(dsm, (const void *)words, SSS_DSM_PROTOCOL_ENV));
    for (uint64_t r = 0; r < np; r++) {
        if (words[r] != 7000 + r) {
            fail("after the switch", words[r], 7000 + r);
        }
    }
    CHECK(sss_dsm_barrier(dsm));
    if (multi_writer) {
        put(&words[me], 8000 + me);
    } else {
        /* One writer a page at a time. */
        for (uint64_t r = 0; r < np; r++) {
            if (r == me) {
                put(&words[me], 8000 + me);
            }
            CHECK(sss_dsm_barrier(dsm));
        }
    }
    CHECK(sss_dsm_barrier(dsm));
    for (uint64_t r = 0; r < np; r++) {
        if (words[r] != 8000 + r) {
            fail("written after the switch", words[r], 8000 + r);
        }
    }

    if (me == 0) {
        printf("DRF-OK tasks=%llu counter=%llu\n", (unsigned long long)np,
               (unsigned long long)*counter);
        fflush(stdout);
    }
    CHECK(sss_dsm_finalize(dsm));
    CHECK(sss_finalize(task));
    return 0;
}
