/*
 * fifo.c — many-to-one through an MBCF FIFO queue on rank 0.
 *
 * Rank 0 lays out a small queue in one of its segments; every other task
 * pushes M numbered messages into it. A full queue refuses a push with
 * SSS_ERR_FIFO_FULL (never loses it), so senders ask for status return
 * and retry. Rank 0 pops (size - 1) * M messages and checks that each
 * sender's messages arrive complete and in order.
 *
 *   sss run -n 4 ./fifo [M]
 */
#define _POSIX_C_SOURCE 200809L
#include <sss.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                              \
    do {                                                                         \
        sss_status_t st_ = (call);                                               \
        if (st_ != SSS_OK) {                                                     \
            fprintf(stderr, "fifo: %s failed: %s (%s)\n", #call,                 \
                    sss_status_string(st_), sss_last_error());                   \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define SLOTS 16 /* small, so senders do meet back-pressure */
#define MAX_MSG 64

struct message {
    uint32_t from;
    uint32_t seq;
    char text[40];
};

int main(int argc, char **argv)
{
    long m = argc > 1 ? atol(argv[1]) : 200;
    if (m < 1 || m > 1000000) {
        fprintf(stderr, "usage: fifo [M >= 1]\n");
        return 2;
    }

    sss_task_h task;
    CHECK(sss_init(&task));
    uint32_t rank = sss_task_rank(task), size = sss_task_size(task);
    int failed = 0;

    sss_seg_h seg = NULL;
    sss_fifo_h fifo = NULL;
    sss_raddr_t mine;
    memset(&mine, 0, sizeof mine);
    if (rank == 0) {
        CHECK(sss_seg_alloc(task, sss_fifo_bytes(SLOTS, MAX_MSG), SSS_PERM_WRITE, &seg));
        CHECK(sss_fifo_create(task, seg, 0, SLOTS, MAX_MSG, &fifo));
        CHECK(sss_fifo_addr(fifo, &mine));
    }
    /* Everybody learns rank 0's queue address. */
    sss_raddr_t *all = malloc(size * sizeof *all);
    if (!all) {
        fprintf(stderr, "fifo: out of memory\n");
        return 1;
    }
    CHECK(sss_allgather(task, &mine, sizeof mine, all));
    sss_raddr_t queue = all[0];

    if (rank != 0) {
        sss_op_params_t params;
        memset(&params, 0, sizeof params);
        params.field_mask = SSS_OP_PARAM_FIELD_FLAGS;
        params.flags = SSS_OP_FLAG_STATUS_RETURN;
        for (long i = 0; i < m; i++) {
            struct message msg;
            memset(&msg, 0, sizeof msg);
            msg.from = rank;
            msg.seq = (uint32_t)i;
            snprintf(msg.text, sizeof msg.text, "task %u msg %ld", rank, i);
            for (;;) {
                sss_request_h req;
                CHECK(sss_fifo_push(task, queue, &msg, sizeof msg, &params, &req));
                sss_status_t st = sss_request_wait(req);
                sss_request_free(req);
                if (st == SSS_OK)
                    break;
                if (st != SSS_ERR_FIFO_FULL) {
                    fprintf(stderr, "fifo: push failed: %s\n", sss_status_string(st));
                    return 1;
                }
                struct timespec pause = {0, 20000};
                nanosleep(&pause, NULL);
            }
        }
    } else {
        uint32_t *next = calloc(size, sizeof *next);
        if (!next) {
            fprintf(stderr, "fifo: out of memory\n");
            return 1;
        }
        long expect = (long)(size - 1) * m;
        for (long n = 0; n < expect && !failed; n++) {
            struct message msg;
            size_t len;
            uint32_t from;
            CHECK(sss_fifo_wait_pop(task, fifo, &msg, sizeof msg, &len, &from));
            char text[40];
            snprintf(text, sizeof text, "task %u msg %u", from, msg.seq);
            if (len != sizeof msg || from == 0 || from >= size || msg.from != from ||
                msg.seq != next[from] || strcmp(msg.text, text) != 0) {
                fprintf(stderr, "fifo: bad message %ld: len %zu from %u (says %u) seq %u "
                                "(expected %u)\n",
                        n, len, from, msg.from, msg.seq, from < size ? next[from] : 0);
                failed = 1;
                break;
            }
            next[from]++;
        }
        size_t len;
        char extra[MAX_MSG];
        if (!failed && sss_fifo_pop(fifo, extra, sizeof extra, &len, NULL) != SSS_ERR_NO_MESSAGE) {
            fprintf(stderr, "fifo: more messages than were sent\n");
            failed = 1;
        }
        if (!failed)
            printf("fifo: %u senders x %ld messages, each sender in order\n", size - 1, m);
        free(next);
    }

    CHECK(sss_barrier(task));
    if (rank == 0) {
        CHECK(sss_fifo_destroy(fifo));
        CHECK(sss_seg_free(task, seg));
    }
    CHECK(sss_finalize(task));
    free(all);
    return failed;
}
