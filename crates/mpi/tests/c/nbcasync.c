/* Nonblocking collectives that complete while every task computes without
 * calling MPI: each starts an MPI_Iallreduce and an MPI_Ibcast (a small
 * count that goes eagerly and a large one that goes by rendezvous), then
 * computes and polls, with no MPI call, the result buffer until it holds
 * its final value; only then MPI_Wait. A task gives up after 10 s and
 * fails. With SSS_MPI_NBC_SIGNAL=off nothing moves between calls: the
 * task computes a while without polling, and MPI_Wait completes the
 * operations. Prints "nbcasync: ok N tasks" on rank 0 when every check
 * passed, exits 1 on the first failure. */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int rank, size;
/* Work the polling loop does, printed so that it is not optimized away. */
static double work;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Computes without MPI until `done` holds, or 10 s passed (then fails).
 * `what` names the operation for the message. */
static void compute_until(int (*done)(void *), void *arg, const char *what) {
    double t0 = now();
    double x = 1.0;
    while (!done(arg)) {
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
        if (now() - t0 > 10.0) {
            fprintf(stderr,
                    "rank %d: %s did not complete in 10 s without MPI calls\n",
                    rank, what);
            exit(1);
        }
    }
    work += x;
}

/* Computes without MPI for `secs`. */
static void compute_for(double secs) {
    double t0 = now();
    double x = 1.0;
    while (now() - t0 < secs)
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
    work += x;
}

struct probe {
    const int *buf;
    int n;
    int want_first, want_last;
};

/* Whether the buffer holds its final value at both ends (the library
 * writes the result in one copy once the operation completed). */
static int landed(void *arg) {
    struct probe *p = arg;
    const volatile int *b = p->buf;
    int ok = b[p->n - 1] == p->want_last && b[0] == p->want_first;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return ok;
}

static int sum_of(int i) {
    /* sum over ranks r of (r + 1) * 3 + i */
    return 3 * size * (size + 1) / 2 + size * i;
}

static void one(int n, int poll) {
    int *in = malloc(sizeof(int) * (size_t)n);
    int *out = malloc(sizeof(int) * (size_t)n);
    int *bc = malloc(sizeof(int) * (size_t)n);
    CHECK(in && out && bc);
    for (int i = 0; i < n; i++) {
        in[i] = (rank + 1) * 3 + i;
        out[i] = -1;
        bc[i] = rank == 0 ? 7 * i + 1 : -1;
    }
    MPI_Request r[2];
    CHECK(MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]) ==
          MPI_SUCCESS);
    if (poll) {
        struct probe p = {out, n, sum_of(0), sum_of(n - 1)};
        compute_until(landed, &p, "MPI_Iallreduce");
    }
    CHECK(MPI_Ibcast(bc, n, MPI_INT, 0, MPI_COMM_WORLD, &r[1]) == MPI_SUCCESS);
    if (poll) {
        struct probe p = {bc, n, 1, 7 * (n - 1) + 1};
        compute_until(landed, &p, "MPI_Ibcast");
    } else {
        compute_for(0.05);
    }
    CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    for (int i = 0; i < n; i++) {
        CHECK(out[i] == sum_of(i));
        CHECK(bc[i] == 7 * i + 1);
    }

    /* Both outstanding at once, the broadcast from the last rank. */
    for (int i = 0; i < n; i++) {
        out[i] = -1;
        bc[i] = rank == size - 1 ? 5 * i + 2 : -1;
    }
    CHECK(MPI_Ibcast(bc, n, MPI_INT, size - 1, MPI_COMM_WORLD, &r[1]) ==
          MPI_SUCCESS);
    CHECK(MPI_Iallreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]) ==
          MPI_SUCCESS);
    if (poll) {
        struct probe p = {out, n, sum_of(0), sum_of(n - 1)};
        compute_until(landed, &p, "MPI_Iallreduce beside MPI_Ibcast");
        struct probe q = {bc, n, 2, 5 * (n - 1) + 2};
        compute_until(landed, &q, "MPI_Ibcast beside MPI_Iallreduce");
    }
    CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    for (int i = 0; i < n; i++) {
        CHECK(out[i] == sum_of(i));
        CHECK(bc[i] == 5 * i + 2);
    }
    free(in);
    free(out);
    free(bc);
}

/* Blocking ping-pong between ranks 0 and 1 while each has a schedule
 * outstanding (so every message carries a signal, which the receiver,
 * waiting in MPI_Recv, leaves to itself): an Ibcast whose root starts it
 * only after the ping-pong, on a communicator of its own per root. A
 * wait must not sleep through a message a signal's pass took from the
 * FIFO (it did, once: the pass ran after the wait's last look). */
static void pingpong_beside_schedules(void) {
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    int x = rank == 1 ? 11 : -1, y = rank == 0 ? 22 : -1;
    MPI_Request r[2];
    /* Everyone but the root starts each at once: ranks 0 and 1 each wait
     * in one for the other. */
    if (rank != 1)
        CHECK(MPI_Ibcast(&x, 1, MPI_INT, 1, a, &r[0]) == MPI_SUCCESS);
    if (rank != 0)
        CHECK(MPI_Ibcast(&y, 1, MPI_INT, 0, b, &r[1]) == MPI_SUCCESS);
    int v = 0;
    for (int i = 0; i < 20000 && rank < 2; i++) {
        if (rank == 0) {
            CHECK(MPI_Send(&i, 1, MPI_INT, 1, 5, MPI_COMM_WORLD) == MPI_SUCCESS);
            CHECK(MPI_Recv(&v, 1, MPI_INT, 1, 6, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE) == MPI_SUCCESS);
        } else {
            CHECK(MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE) == MPI_SUCCESS);
            CHECK(MPI_Send(&v, 1, MPI_INT, 0, 6, MPI_COMM_WORLD) == MPI_SUCCESS);
        }
        CHECK(v == i);
    }
    if (rank == 1)
        CHECK(MPI_Ibcast(&x, 1, MPI_INT, 1, a, &r[0]) == MPI_SUCCESS);
    if (rank == 0)
        CHECK(MPI_Ibcast(&y, 1, MPI_INT, 0, b, &r[1]) == MPI_SUCCESS);
    CHECK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    CHECK(x == 11 && y == 22);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *v = getenv("SSS_MPI_NBC_SIGNAL");
    int poll = !(v && (strcmp(v, "off") == 0 || strcmp(v, "0") == 0));
    /* Eager; then past the FIFO and the landing ring (rendezvous). */
    int counts[] = {1, 1000, 100000};
    for (int k = 0; k < 3; k++)
        for (int rep = 0; rep < 3; rep++)
            one(counts[k], poll);
    pingpong_beside_schedules();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("nbcasync: ok %d tasks%s (%g)\n", size,
               poll ? "" : ", signals off", work > 0 ? 1.0 : 0.0);
    MPI_Finalize();
    return 0;
}
