/*
 * signal.c — SIGNAL round trips: rank 0 signals every other task, whose
 * handler replies by signalling rank 0 back with the same payload.
 *
 * Handlers run on each task's progress thread; the reply is issued from
 * inside the handler. Rank 0's reply handler counts replies in a word it
 * waits on with sss_wait_u64(). Rank 0 prints the mean round-trip time.
 *
 *   sss run -n 4 ./signal [rounds]
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
            fprintf(stderr, "signal: %s failed: %s (%s)\n", #call,               \
                    sss_status_string(st_), sss_last_error());                   \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

enum { PING = 0, PONG = 1 };

/* Rank 0's view of the replies, updated by the PONG handler on the
 * progress thread with the GCC/Clang __atomic builtins (sss_wait_u64 takes
 * a plain uint64_t *, which a C11 _Atomic object is not). */
struct replies {
    uint64_t count; /* atomically incremented, waited on */
    uint64_t bad;   /* replies with a wrong payload */
    uint64_t round; /* the round being played */
};

static uint64_t token(uint32_t rank, uint64_t round)
{
    return ((uint64_t)rank << 32) ^ (round * 2654435761u);
}

/* On ranks > 0: echo the payload back to the sender. */
static void on_ping(void *arg, sss_task_h task, uint32_t from, const void *payload,
                    size_t len)
{
    (void)arg;
    sss_status_t st = sss_signal(task, from, PONG, payload, len, NULL, NULL);
    if (st != SSS_OK)
        fprintf(stderr, "signal: reply failed: %s\n", sss_status_string(st));
}

/* On rank 0: check the echo, count it. */
static void on_pong(void *arg, sss_task_h task, uint32_t from, const void *payload,
                    size_t len)
{
    struct replies *r = arg;
    (void)task;
    uint64_t got = 0;
    uint64_t round = __atomic_load_n(&r->round, __ATOMIC_ACQUIRE);
    if (len == sizeof got)
        memcpy(&got, payload, sizeof got);
    if (len != sizeof got || got != token(from, round))
        __atomic_fetch_add(&r->bad, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->count, 1, __ATOMIC_RELEASE);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 100;
    if (rounds < 1) {
        fprintf(stderr, "usage: signal [rounds >= 1]\n");
        return 2;
    }

    sss_task_h task;
    CHECK(sss_init(&task));
    uint32_t rank = sss_task_rank(task), size = sss_task_size(task);
    if (size < 2) {
        fprintf(stderr, "signal: needs at least 2 tasks, got %u\n", size);
        return 1;
    }
    static struct replies replies;
    if (rank == 0)
        CHECK(sss_signal_set_handler(task, PONG, on_pong, &replies));
    else
        CHECK(sss_signal_set_handler(task, PING, on_ping, NULL));
    /* Handlers everywhere before the first signal. */
    CHECK(sss_barrier(task));

    int failed = 0;
    if (rank == 0) {
        uint32_t peers = size - 1;
        double start = now_us();
        for (long i = 0; i < rounds; i++) {
            __atomic_store_n(&replies.round, (uint64_t)i, __ATOMIC_RELEASE);
            for (uint32_t r = 1; r < size; r++) {
                uint64_t t = token(r, (uint64_t)i);
                CHECK(sss_signal(task, r, PING, &t, sizeof t, NULL, NULL));
            }
            uint64_t want = (uint64_t)(i + 1) * peers;
            CHECK(sss_wait_u64_timeout(task, &replies.count, SSS_CMP_GE, want, 30000000));
        }
        double rtt = (now_us() - start) / rounds;
        CHECK(sss_quiet(task));
        uint64_t count = __atomic_load_n(&replies.count, __ATOMIC_ACQUIRE);
        failed = replies.bad != 0 || count != (uint64_t)rounds * peers;
        if (failed)
            fprintf(stderr, "signal: %llu replies, %llu bad\n", (unsigned long long)count,
                    (unsigned long long)replies.bad);
        else
            printf("signal: %u peers x %ld rounds, all replies correct, round trip %.1f us\n",
                   peers, rounds, rtt);
    }

    /* Peers keep answering from their progress thread until rank 0 is
     * done; then everyone waits for its own operations to be acknowledged
     * before anyone leaves. */
    CHECK(sss_barrier(task));
    CHECK(sss_quiet(task));
    CHECK(sss_barrier(task));
    CHECK(sss_finalize(task));
    return failed;
}
