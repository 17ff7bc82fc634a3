/*
 * counter.c — every task FETCH_ADDs a counter on rank 0, K times.
 *
 * The first add of each task waits for its old value through a request;
 * the rest are fire-and-forget with a local completion counter, then
 * sss_quiet() reports any error. Afterwards every task READs the counter
 * back and rank 0 checks it against size * K.
 *
 *   sss run -n 4 ./counter [K]
 */
#include <sss.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        sss_status_t st_ = (call);                                               \
        if (st_ != SSS_OK) {                                                     \
            fprintf(stderr, "counter: %s failed: %s (%s)\n", #call,              \
                    sss_status_string(st_), sss_last_error());                   \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

int main(int argc, char **argv)
{
    long k = argc > 1 ? atol(argv[1]) : 1000;
    if (k < 1) {
        fprintf(stderr, "usage: counter [K >= 1]\n");
        return 2;
    }

    sss_task_h task;
    CHECK(sss_init(&task));
    uint32_t rank = sss_task_rank(task), size = sss_task_size(task);

    /* Only rank 0's word is the counter, but exchange is collective. */
    sss_seg_h seg;
    CHECK(sss_seg_alloc(task, 64, SSS_PERM_ATOMIC | SSS_PERM_READ, &seg));
    sss_seg_info_t *infos = malloc(size * sizeof *infos);
    if (!infos) {
        fprintf(stderr, "counter: out of memory\n");
        return 1;
    }
    CHECK(sss_seg_exchange(task, seg, infos));
    sss_raddr_t target = sss_seg_raddr(&infos[0], 0);
    uint64_t total = (uint64_t)size * (uint64_t)k;
    int failed = 0;

    /* One add with its old value. */
    uint64_t old = UINT64_MAX;
    sss_request_h req;
    CHECK(sss_fetch_add(task, target, 1, NULL, &old, &req));
    CHECK(sss_request_wait(req));
    sss_request_free(req);
    if (old >= total) {
        fprintf(stderr, "counter: rank %u got old value %llu >= %llu\n", rank,
                (unsigned long long)old, (unsigned long long)total);
        failed = 1;
    }

    /* The rest without requests; `done` counts completions. */
    uint64_t done = 0;
    sss_op_params_t params;
    memset(&params, 0, sizeof params);
    params.field_mask = SSS_OP_PARAM_FIELD_COUNTER;
    params.counter = &done;
    for (long i = 1; i < k; i++)
        CHECK(sss_fetch_add(task, target, 1, &params, NULL, NULL));
    CHECK(sss_wait_u64(task, &done, SSS_CMP_GE, (uint64_t)(k - 1)));
    CHECK(sss_quiet(task));

    CHECK(sss_barrier(task));
    uint64_t seen = 0;
    CHECK(sss_read(task, target, sizeof seen, NULL, &seen, &req));
    CHECK(sss_request_wait(req));
    sss_request_free(req);
    if (seen != total) {
        fprintf(stderr, "counter: rank %u read %llu, expected %llu\n", rank,
                (unsigned long long)seen, (unsigned long long)total);
        failed = 1;
    }
    if (rank == 0) {
        uint64_t local;
        memcpy(&local, sss_seg_ptr(seg), sizeof local);
        failed |= local != total;
        if (!failed)
            printf("counter: %u tasks x %ld adds = %llu\n", size, k,
                   (unsigned long long)local);
        else
            fprintf(stderr, "counter: total %llu, expected %llu\n",
                    (unsigned long long)local, (unsigned long long)total);
    }

    CHECK(sss_barrier(task));
    CHECK(sss_seg_free(task, seg));
    CHECK(sss_finalize(task));
    free(infos);
    return failed;
}
