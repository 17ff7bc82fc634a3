/*
 * multicast.c — every task declares one group of all tasks and holds a
 * segment with a shared key; rank 0 multicasts a block into it, waits for
 * the combined ack, and everyone checks the block after a barrier.
 * Run by tests/c_api.rs.
 */
#include <sss.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        sss_status_t st_ = (call);                                               \
        if (st_ != SSS_OK) {                                                     \
            fprintf(stderr, "multicast: %s failed: %s (%s)\n", #call,            \
                    sss_status_string(st_), sss_last_error());                   \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

int main(void)
{
    sss_task_h task;
    CHECK(sss_init(&task));
    uint32_t rank = sss_task_rank(task), size = sss_task_size(task);
    sss_seg_h seg;
    sss_seg_info_t info;
    CHECK(sss_seg_alloc_shared_key(task, 1024, SSS_PERM_WRITE, &seg));
    CHECK(sss_seg_info(seg, &info));
    uint32_t *ranks = malloc(size * sizeof *ranks);
    if (!ranks)
        return 1;
    for (uint32_t r = 0; r < size; r++)
        ranks[r] = r;
    CHECK(sss_group_create(task, 7, ranks, size));
    CHECK(sss_barrier(task));

    char block[600];
    for (size_t i = 0; i < sizeof block; i++)
        block[i] = (char)(i * 7 + 3);
    if (rank == 0) {
        sss_request_h req;
        CHECK(sss_multicast(task, 7, info.key, 100, block, sizeof block, &req));
        CHECK(sss_request_wait(req));
        sss_request_free(req);
    }
    CHECK(sss_barrier(task));
    int ok = memcmp((char *)sss_seg_ptr(seg) + 100, block, sizeof block) == 0;
    int all_ok = 0;
    int *oks = malloc(size * sizeof *oks);
    if (!oks)
        return 1;
    CHECK(sss_allgather(task, &ok, sizeof ok, oks));
    all_ok = 1;
    for (uint32_t r = 0; r < size; r++)
        all_ok &= oks[r];
    if (rank == 0)
        printf("multicast: %u members %s\n", size, all_ok ? "all received the block" : "MISSING");
    CHECK(sss_barrier(task));
    CHECK(sss_seg_free(task, seg));
    CHECK(sss_finalize(task));
    free(ranks);
    free(oks);
    return !all_ok;
}
