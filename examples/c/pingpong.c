/*
 * pingpong.c — ranks 0 and 1 WRITE a message back and forth.
 *
 * Each WRITE carries a notify: after the data lands, the receiver's
 * counter is bumped, and the receiver waits for the counter rather than
 * polling the data. Rank 0 prints the mean round-trip time.
 *
 *   sss run -n 2 ./pingpong [rounds] [bytes]
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
            fprintf(stderr, "pingpong: %s failed: %s (%s)\n", #call,             \
                    sss_status_string(st_), sss_last_error());                   \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

/* Segment layout: the notify counter, then the message buffer. */
#define COUNTER_OFF 0
#define DATA_OFF 64

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The message of round i: i, then bytes of (i & 0x7f). */
static void fill(char *msg, long bytes, long i)
{
    memset(msg, (int)(i & 0x7f), (size_t)bytes);
    memcpy(msg, &i, sizeof i);
}

/* Waits for the notify of round i and checks the message; a wrong one
 * ends the task at once (the launcher then ends the job). */
static void wait_round(sss_task_h task, const uint64_t *counter, const char *inbox, long bytes,
                       long i)
{
    CHECK(sss_wait_u64(task, counter, SSS_CMP_GE, (uint64_t)i));
    long got;
    memcpy(&got, inbox, sizeof got);
    if (got != i || (bytes > (long)sizeof got && inbox[bytes - 1] != (char)(i & 0x7f))) {
        fprintf(stderr, "pingpong: rank %u: round %ld brought message %ld\n",
                sss_task_rank(task), i, got);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 1000;
    long bytes = argc > 2 ? atol(argv[2]) : 8;
    if (rounds < 1 || bytes < 8 || bytes > (1 << 20)) {
        fprintf(stderr, "usage: pingpong [rounds >= 1] [8 <= bytes <= 1 MiB]\n");
        return 2;
    }

    sss_task_h task;
    CHECK(sss_init(&task));
    uint32_t rank = sss_task_rank(task), size = sss_task_size(task);
    if (size < 2) {
        fprintf(stderr, "pingpong: needs at least 2 tasks, got %u\n", size);
        return 1;
    }

    sss_seg_h seg;
    CHECK(sss_seg_alloc(task, DATA_OFF + (size_t)bytes, SSS_PERM_WRITE, &seg));
    sss_seg_info_t *infos = malloc(size * sizeof *infos);
    char *msg = malloc((size_t)bytes);
    if (!infos || !msg) {
        fprintf(stderr, "pingpong: out of memory\n");
        return 1;
    }
    CHECK(sss_seg_exchange(task, seg, infos));

    char *base = sss_seg_ptr(seg);
    const uint64_t *counter = (const uint64_t *)(base + COUNTER_OFF);
    const char *inbox = base + DATA_OFF;
    if (rank < 2) {
        uint32_t peer = 1 - rank;
        sss_raddr_t dst = sss_seg_raddr(&infos[peer], DATA_OFF);
        sss_op_params_t params;
        memset(&params, 0, sizeof params);
        /* Name the fields set: the library reads only those. */
        params.field_mask = SSS_OP_PARAM_FIELD_FLAGS | SSS_OP_PARAM_FIELD_NOTIFY_KEY |
                            SSS_OP_PARAM_FIELD_NOTIFY_ADDR |
                            SSS_OP_PARAM_FIELD_NOTIFY_ADDEND;
        params.flags = SSS_OP_FLAG_NOTIFY;
        params.notify_key = infos[peer].key;
        params.notify_addr = infos[peer].base + COUNTER_OFF;
        params.notify_addend = 1;

        double start = now_us();
        for (long i = 1; i <= rounds; i++) {
            /* Rank 0 serves, rank 1 answers what it received. */
            if (rank == 1)
                wait_round(task, counter, inbox, bytes, i);
            fill(msg, bytes, i);
            CHECK(sss_write(task, dst, msg, (size_t)bytes, &params, NULL));
            if (rank == 0)
                wait_round(task, counter, inbox, bytes, i);
        }
        double rtt = (now_us() - start) / rounds;
        CHECK(sss_quiet(task));
        if (rank == 0)
            printf("pingpong: %ld rounds of %ld B between 2 tasks, round trip %.1f us\n",
                   rounds, bytes, rtt);
    }

    CHECK(sss_barrier(task));
    CHECK(sss_seg_free(task, seg));
    CHECK(sss_finalize(task));
    free(infos);
    free(msg);
    return 0;
}
