/* MPI_THREAD_MULTIPLE: several threads per rank call MPI at once and
 * block in it (Recv, Wait, Probe, collectives) without stopping each
 * other. Ranks pair up (0-1, 2-3, ...); argv[1] is the number of threads
 * per rank. Prints "threads: ok N tasks T threads" on rank 0. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define MAX_THREADS 8
#define ROUNDS 200
#define BIG 40000 /* above the eager size: a rendezvous */

static int rank, size, partner, nthreads;
static MPI_Comm comms[MAX_THREADS];
static MPI_Win wins[2];
static int *win_mem[2];

struct arg {
    int id;
    MPI_Comm comm;
    int tag;
};

/* Ping-pong of ROUNDS messages with the partner's thread of the same id;
 * every 16th message is large. */
static void *ping_pong(void *p) {
    struct arg *a = p;
    int lo = rank < partner;
    int *buf = malloc(BIG);
    CHECK(buf != NULL);
    for (int i = 0; i < ROUNDS; i++) {
        int n = i % 16 == 5 ? BIG / (int)sizeof(int) : 1 + i % 7;
        int v = a->id * 100000 + i;
        MPI_Status st;
        if (lo) {
            for (int k = 0; k < n; k++) buf[k] = v + k;
            CHECK(MPI_Send(buf, n, MPI_INT, partner, a->tag, a->comm) == MPI_SUCCESS);
            CHECK(MPI_Recv(buf, n, MPI_INT, partner, a->tag, a->comm, &st) == MPI_SUCCESS);
            for (int k = 0; k < n; k++) CHECK(buf[k] == v + k + 1);
        } else {
            CHECK(MPI_Recv(buf, n, MPI_INT, partner, a->tag, a->comm, &st) == MPI_SUCCESS);
            CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == a->tag);
            for (int k = 0; k < n; k++) CHECK(buf[k] == v + k);
            for (int k = 0; k < n; k++) buf[k]++;
            CHECK(MPI_Send(buf, n, MPI_INT, partner, a->tag, a->comm) == MPI_SUCCESS);
        }
    }
    free(buf);
    return NULL;
}

/* Nonblocking both ways: 16 receives and 16 sends in flight per round,
 * one tag per thread; the order of one tag's messages is kept. */
static void *nonblocking(void *p) {
    struct arg *a = p;
    enum { K = 16 };
    int out[K], in[K];
    MPI_Request r[2 * K];
    for (int round = 0; round < 20; round++) {
        for (int k = 0; k < K; k++) {
            in[k] = -1;
            MPI_Irecv(&in[k], 1, MPI_INT, partner, a->tag, a->comm, &r[k]);
        }
        for (int k = 0; k < K; k++) {
            out[k] = rank * 1000000 + a->id * 10000 + round * 100 + k;
            MPI_Isend(&out[k], 1, MPI_INT, partner, a->tag, a->comm, &r[K + k]);
        }
        CHECK(MPI_Waitall(2 * K, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
        for (int k = 0; k < K; k++)
            CHECK(in[k] == partner * 1000000 + a->id * 10000 + round * 100 + k);
    }
    return NULL;
}

/* Probe then receive, one tag per thread on a shared communicator. */
static void *probing(void *p) {
    struct arg *a = p;
    for (int i = 0; i < 50; i++) {
        int v = i, got = -1, count = 0;
        MPI_Status st;
        if ((i % 2 == 0) == (rank < partner)) {
            MPI_Send(&v, 1, MPI_INT, partner, a->tag, a->comm);
        } else {
            CHECK(MPI_Probe(partner, a->tag, a->comm, &st) == MPI_SUCCESS);
            MPI_Get_count(&st, MPI_INT, &count);
            CHECK(count == 1 && st.MPI_TAG == a->tag);
            MPI_Recv(&got, 1, MPI_INT, partner, a->tag, a->comm, MPI_STATUS_IGNORE);
            CHECK(got == i);
        }
    }
    return NULL;
}

/* Thread 0 runs collectives on its own communicator, the others
 * ping-pong meanwhile. */
static void *collectives(void *p) {
    struct arg *a = p;
    if (a->id != 0) return ping_pong(p);
    for (int i = 0; i < 100; i++) {
        int v = rank + i, sum = 0, b = rank == 0 ? i : -1;
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, a->comm);
        CHECK(sum == size * (size - 1) / 2 + size * i);
        MPI_Bcast(&b, 1, MPI_INT, 0, a->comm);
        CHECK(b == i);
        MPI_Barrier(a->comm);
    }
    return NULL;
}

/* Every thread runs nonblocking collectives on its own communicator,
 * the threads of the two tasks in whatever interleaving they get. */
static void *nonblocking_collectives(void *p) {
    struct arg *a = p;
    for (int i = 0; i < 50; i++) {
        int v = rank + i, sum = -1;
        MPI_Request r[2];
        MPI_Iallreduce(&v, &sum, 1, MPI_INT, MPI_SUM, a->comm, &r[0]);
        MPI_Ibarrier(a->comm, &r[1]);
        CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
        CHECK(sum == size * (size - 1) / 2 + size * i);
    }
    return NULL;
}

/* Every thread duplicates its own communicator at once with the
 * others: the new communicators must not share a context. */
static void *dup_concurrently(void *p) {
    struct arg *a = p;
    for (int i = 0; i < 10; i++) {
        MPI_Comm c;
        int v = a->id * 1000 + i, sum = -1;
        CHECK(MPI_Comm_dup(a->comm, &c) == MPI_SUCCESS);
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
        CHECK(sum == size * v);
        MPI_Comm_free(&c);
    }
    return NULL;
}

/* Thread 0 runs fence epochs on one window, thread 1 lock epochs on
 * another (to the partner), thread 3 shared lock epochs on that same
 * window (to itself), the others ping-pong meanwhile. */
static void *one_sided(void *p) {
    struct arg *a = p;
    if (a->id == 3) {
        for (int i = 0; i < 50; i++) {
            int got = -1;
            MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, wins[1]);
            MPI_Get(&got, 1, MPI_INT, rank, 0, 1, MPI_INT, wins[1]);
            /* Held a while: the partner's thread 1 waits for the lock
             * inside MPI_Win_lock on the same window meanwhile. */
            nanosleep(&(struct timespec){0, 200000}, NULL);
            MPI_Win_unlock(rank, wins[1]);
            CHECK(got == 77);
        }
        return NULL;
    }
    if (a->id >= 2) return ping_pong(p);
    MPI_Win w = wins[a->id];
    for (int i = 0; i < 50; i++) {
        int v = rank * 1000 + i;
        if (a->id == 0) {
            MPI_Win_fence(0, w);
            MPI_Put(&v, 1, MPI_INT, partner, 0, 1, MPI_INT, w);
            MPI_Win_fence(0, w);
            CHECK(win_mem[0][0] == partner * 1000 + i);
        } else {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, partner, 0, w);
            MPI_Put(&v, 1, MPI_INT, partner, 1, 1, MPI_INT, w);
            MPI_Win_unlock(partner, w);
        }
    }
    return NULL;
}

static void run(void *(*f)(void *), int shared) {
    pthread_t t[MAX_THREADS];
    struct arg args[MAX_THREADS];
    for (int i = 0; i < nthreads; i++) {
        args[i].id = i;
        args[i].comm = shared ? MPI_COMM_WORLD : comms[i];
        args[i].tag = shared ? 10 + i : 0;
        CHECK(pthread_create(&t[i], NULL, f, &args[i]) == 0);
    }
    for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    int provided = -1, queried = -1;
    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Query_thread(&queried);
    CHECK(queried == MPI_THREAD_MULTIPLE);
    CHECK(size % 2 == 0);
    nthreads = argc > 1 ? atoi(argv[1]) : 2;
    CHECK(nthreads >= 2 && nthreads <= MAX_THREADS);
    partner = rank ^ 1;
    for (int i = 0; i < nthreads; i++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);

    run(ping_pong, 0);   /* separate communicators */
    run(ping_pong, 1);   /* one communicator, a tag per thread */
    run(nonblocking, 0);
    run(nonblocking, 1);
    run(probing, 1);
    run(collectives, 0);
    run(nonblocking_collectives, 0);
    run(dup_concurrently, 0);
    for (int i = 0; i < 2; i++)
        MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, comms[i], &win_mem[i],
                         &wins[i]);
    win_mem[1][0] = 77;
    MPI_Barrier(MPI_COMM_WORLD);
    run(one_sided, 0);
    CHECK(win_mem[1][1] == partner * 1000 + 49);
    for (int i = 0; i < 2; i++) MPI_Win_free(&wins[i]);

    for (int i = 0; i < nthreads; i++) MPI_Comm_free(&comms[i]);
    if (rank == 0) printf("threads: ok %d tasks %d threads\n", size, nthreads);
    MPI_Finalize();
    return 0;
}
