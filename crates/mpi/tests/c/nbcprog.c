/* Nonblocking collectives that progress on their own, and give what the
 * blocking ones give. Prints "nbcprog: ok N tasks" on rank 0 when every
 * check passed, exits 1 on the first failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

/* Composition of affine maps x -> a x + b (pairs of unsigned): associative,
 * not commutative. */
static void affine(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    unsigned *p = in, *q = inout;
    for (int i = 0; i < *len; i++, p += 2, q += 2) {
        unsigned a = q[0] * p[0], b = q[0] * p[1] + q[1];
        q[0] = a, q[1] = b;
    }
}

/* The deadlock of a library that runs a nonblocking collective only when
 * its request is waited on: rank 0 blocks in a receive that rank 1 sends
 * only once the collective completed there. kind 0: Ibarrier, 1: Ibcast
 * from rank 1, 2: Iallreduce. */
static void progress_in_recv(int kind) {
    int v[4] = {0, 0, 0, 0}, s = rank + 1, r = -1, tok = -1;
    if (rank == 1) v[0] = 11, v[1] = 12, v[2] = 13, v[3] = 14;
    MPI_Request q;
    if (kind == 0) MPI_Ibarrier(MPI_COMM_WORLD, &q);
    if (kind == 1) MPI_Ibcast(v, 4, MPI_INT, 1, MPI_COMM_WORLD, &q);
    if (kind == 2) MPI_Iallreduce(&s, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    if (rank == 0) {
        MPI_Recv(&tok, 1, MPI_INT, 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(tok == 1000 + kind);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (rank == 1) {
            tok = 1000 + kind;
            MPI_Send(&tok, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
        }
    }
    if (kind == 1) CHECK(v[0] == 11 && v[3] == 14);
    if (kind == 2) CHECK(r == size * (size + 1) / 2);
}

/* The same with rank 0 inside MPI_Probe, then MPI_Iprobe in a loop. */
static void progress_in_probe(void) {
    int s = rank + 1, r = -1, tok = 5, flag = 0;
    MPI_Request q;
    MPI_Iallreduce(&s, &r, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q);
    if (rank == 0) {
        MPI_Probe(1, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&tok, 1, MPI_INT, 1, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (rank == 1) MPI_Send(&tok, 1, MPI_INT, 0, 78, MPI_COMM_WORLD);
    }
    CHECK(r == size);
    MPI_Ibarrier(MPI_COMM_WORLD, &q);
    if (rank == 0) {
        while (!flag) MPI_Iprobe(1, 79, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        MPI_Recv(&tok, 1, MPI_INT, 1, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (rank == 1) MPI_Send(&tok, 1, MPI_INT, 0, 79, MPI_COMM_WORLD);
    }
}

/* Several at once on two communicators, completed in reverse order, with
 * point-to-point traffic between. */
static void many_outstanding(void) {
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hr, hn;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);
    enum { K = 12 };
    MPI_Request q[K];
    int sums[K], bc[K], one = rank + 1;
    for (int i = 0; i < K; i++) {
        MPI_Comm c = i % 3 == 0 ? MPI_COMM_WORLD : i % 3 == 1 ? dup : half;
        if (i % 2 == 0) {
            MPI_Iallreduce(&one, &sums[i], 1, MPI_INT, MPI_SUM, c, &q[i]);
        } else {
            bc[i] = rank == 0 ? 100 + i : -1;
            int root = c == half ? 0 : 0;
            if (c == half) bc[i] = hr == 0 ? 100 + i : -1;
            MPI_Ibcast(&bc[i], 1, MPI_INT, root, c, &q[i]);
        }
    }
    /* A ring of point-to-point messages on every communicator meanwhile. */
    for (int j = 0; j < 20; j++) {
        int out = rank * 1000 + j, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, j, &in, 1, MPI_INT,
                     (rank + size - 1) % size, j, j % 2 ? dup : MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        CHECK(in == ((rank + size - 1) % size) * 1000 + j);
    }
    /* Reverse order: the last few one by one, then Testany over the rest. */
    for (int i = K - 1; i >= K / 2; i--) MPI_Wait(&q[i], MPI_STATUS_IGNORE);
    int left = K / 2;
    while (left > 0) {
        int idx, flag;
        MPI_Testany(K / 2, q, &idx, &flag, MPI_STATUS_IGNORE);
        if (flag && idx != MPI_UNDEFINED) left--;
    }
    int hsum = 0;
    for (int p = 0; p < size; p++)
        if (p % 2 == rank % 2) hsum += p + 1;
    for (int i = 0; i < K; i++) {
        MPI_Comm c = i % 3 == 0 ? MPI_COMM_WORLD : i % 3 == 1 ? dup : half;
        if (i % 2 == 0) CHECK(sums[i] == (c == half ? hsum : size * (size + 1) / 2));
        else CHECK(bc[i] == 100 + i);
    }
    /* Waitall over an array issued in one order, listed in reverse. */
    MPI_Request r2[6];
    int a[6];
    for (int i = 0; i < 6; i++) {
        MPI_Comm c = i % 2 ? dup : half;
        MPI_Iallreduce(&one, &a[5 - i], 1, MPI_INT, MPI_MAX, c, &r2[5 - i]);
    }
    MPI_Waitall(6, r2, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 6; i++) CHECK(r2[i] == MPI_REQUEST_NULL);
    (void)hn;
    /* Freed while a collective on it is outstanding: that one completes. */
    MPI_Request last;
    int lv = -1;
    MPI_Iallreduce(&one, &lv, 1, MPI_INT, MPI_SUM, dup, &last);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Wait(&last, MPI_STATUS_IGNORE);
    CHECK(lv == size * (size + 1) / 2);
}

#define N 3

static int eq(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

static void wait1(MPI_Request *q) { MPI_Wait(q, MPI_STATUS_IGNORE); }

/* Every collective, blocking and nonblocking on the same input. */
static void same_as_blocking(void) {
    int n = size, i;
    size_t big = (size_t)(N * n * 2 + 8);
    int *in = malloc(sizeof(int) * big), *b1 = malloc(sizeof(int) * big),
        *b2 = malloc(sizeof(int) * big);
    int *cnt = malloc(sizeof(int) * (size_t)n), *dsp = malloc(sizeof(int) * (size_t)n);
    int *cnt2 = malloc(sizeof(int) * (size_t)n), *dsp2 = malloc(sizeof(int) * (size_t)n);
    MPI_Datatype *tys = malloc(sizeof(MPI_Datatype) * (size_t)n);
    int *wd = malloc(sizeof(int) * (size_t)n);
    MPI_Request q;
    MPI_Op aff;
    MPI_Op_create(affine, 0, &aff);
    MPI_Datatype pair, every2;
    MPI_Type_contiguous(2, MPI_UNSIGNED, &pair);
    MPI_Type_commit(&pair);
    MPI_Type_vector(N, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    int tot = 0;
    for (i = 0; i < n; i++) {
        cnt[i] = i % 3 + 1, dsp[i] = tot + i, tot += cnt[i] + 1;
        cnt2[i] = (rank + i) % 3, dsp2[i] = 4 * i;
        tys[i] = MPI_INT, wd[i] = (int)sizeof(int) * 4 * i;
    }
    for (i = 0; i < (int)big; i++) in[i] = rank * 1000 + i * 7 + 1;
#define RESET() (memset(b1, 0x5a, sizeof(int) * big), memset(b2, 0x5a, sizeof(int) * big))
#define SAME() CHECK(eq(b1, b2, sizeof(int) * big))
    for (int root = 0; root < n; root++) {
        RESET();
        memcpy(b1, in, sizeof(int) * N), memcpy(b2, in, sizeof(int) * N);
        MPI_Bcast(b1, N, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Ibcast(b2, N, MPI_INT, root, MPI_COMM_WORLD, &q), wait1(&q);
        SAME();
        /* Non-contiguous. */
        RESET();
        memcpy(b1, in, sizeof(int) * 2 * N), memcpy(b2, in, sizeof(int) * 2 * N);
        MPI_Bcast(b1, 1, every2, root, MPI_COMM_WORLD);
        MPI_Ibcast(b2, 1, every2, root, MPI_COMM_WORLD, &q), wait1(&q);
        SAME();
        RESET();
        MPI_Reduce(in, b1, N, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        MPI_Ireduce(in, b2, N, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &q), wait1(&q);
        SAME();
        RESET();
        MPI_Reduce(in, b1, N, pair, aff, root, MPI_COMM_WORLD);
        MPI_Ireduce(in, b2, N, pair, aff, root, MPI_COMM_WORLD, &q), wait1(&q);
        SAME();
        RESET();
        if (rank == root) memcpy(b1, in, sizeof(int) * 2 * N), memcpy(b2, in, sizeof(int) * 2 * N);
        MPI_Reduce(rank == root ? MPI_IN_PLACE : in, b1, N, pair, aff, root, MPI_COMM_WORLD);
        MPI_Ireduce(rank == root ? MPI_IN_PLACE : in, b2, N, pair, aff, root, MPI_COMM_WORLD, &q),
            wait1(&q);
        SAME();
        RESET();
        MPI_Gather(in, N, MPI_INT, b1, N, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Igather(in, N, MPI_INT, b2, N, MPI_INT, root, MPI_COMM_WORLD, &q), wait1(&q);
        SAME();
        RESET();
        if (rank == root) memcpy(b1 + N * root, in, sizeof(int) * N), memcpy(b2 + N * root, in, sizeof(int) * N);
        MPI_Gather(rank == root ? MPI_IN_PLACE : in, N, MPI_INT, b1, N, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Igather(rank == root ? MPI_IN_PLACE : in, N, MPI_INT, b2, N, MPI_INT, root, MPI_COMM_WORLD, &q),
            wait1(&q);
        SAME();
        RESET();
        MPI_Gatherv(in, cnt[rank], MPI_INT, b1, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Igatherv(in, cnt[rank], MPI_INT, b2, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD, &q), wait1(&q);
        SAME();
        RESET();
        MPI_Scatter(in, N, MPI_INT, b1, N, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Iscatter(in, N, MPI_INT, b2, N, MPI_INT, root, MPI_COMM_WORLD, &q), wait1(&q);
        SAME();
        RESET();
        MPI_Scatter(in, N, MPI_INT, rank == root ? MPI_IN_PLACE : b1, N, MPI_INT, root, MPI_COMM_WORLD);
        MPI_Iscatter(in, N, MPI_INT, rank == root ? MPI_IN_PLACE : b2, N, MPI_INT, root, MPI_COMM_WORLD, &q),
            wait1(&q);
        SAME();
        RESET();
        MPI_Scatterv(in, cnt, dsp, MPI_INT, b1, cnt[rank], MPI_INT, root, MPI_COMM_WORLD);
        MPI_Iscatterv(in, cnt, dsp, MPI_INT, b2, cnt[rank], MPI_INT, root, MPI_COMM_WORLD, &q), wait1(&q);
        SAME();
    }
    RESET();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Ibarrier(MPI_COMM_WORLD, &q), wait1(&q);
    RESET();
    MPI_Allreduce(in, b1, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Iallreduce(in, b2, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1, in, sizeof(int) * 2 * N), memcpy(b2, in, sizeof(int) * 2 * N);
    MPI_Allreduce(MPI_IN_PLACE, b1, N, pair, aff, MPI_COMM_WORLD);
    MPI_Iallreduce(MPI_IN_PLACE, b2, N, pair, aff, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    MPI_Allgather(in, N, MPI_INT, b1, N, MPI_INT, MPI_COMM_WORLD);
    MPI_Iallgather(in, N, MPI_INT, b2, N, MPI_INT, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1 + N * rank, in, sizeof(int) * N), memcpy(b2 + N * rank, in, sizeof(int) * N);
    MPI_Allgather(MPI_IN_PLACE, N, MPI_INT, b1, N, MPI_INT, MPI_COMM_WORLD);
    MPI_Iallgather(MPI_IN_PLACE, N, MPI_INT, b2, N, MPI_INT, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    MPI_Allgatherv(in, cnt[rank], MPI_INT, b1, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
    MPI_Iallgatherv(in, cnt[rank], MPI_INT, b2, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1 + dsp[rank], in, sizeof(int) * (size_t)cnt[rank]);
    memcpy(b2 + dsp[rank], in, sizeof(int) * (size_t)cnt[rank]);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_INT, b1, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_INT, b2, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    MPI_Alltoall(in, N, MPI_INT, b1, N, MPI_INT, MPI_COMM_WORLD);
    MPI_Ialltoall(in, N, MPI_INT, b2, N, MPI_INT, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1, in, sizeof(int) * big), memcpy(b2, in, sizeof(int) * big);
    MPI_Alltoall(MPI_IN_PLACE, N, MPI_INT, b1, N, MPI_INT, MPI_COMM_WORLD);
    MPI_Ialltoall(MPI_IN_PLACE, N, MPI_INT, b2, N, MPI_INT, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    /* v: what task p sends to q is (p + q) % 3 ints, symmetric. */
    RESET();
    MPI_Alltoallv(in, cnt2, dsp2, MPI_INT, b1, cnt2, dsp2, MPI_INT, MPI_COMM_WORLD);
    MPI_Ialltoallv(in, cnt2, dsp2, MPI_INT, b2, cnt2, dsp2, MPI_INT, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1, in, sizeof(int) * big), memcpy(b2, in, sizeof(int) * big);
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_INT, b1, cnt2, dsp2, MPI_INT, MPI_COMM_WORLD);
    MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_INT, b2, cnt2, dsp2, MPI_INT, MPI_COMM_WORLD, &q),
        wait1(&q);
    SAME();
    RESET();
    MPI_Alltoallw(in, cnt2, wd, tys, b1, cnt2, wd, tys, MPI_COMM_WORLD);
    MPI_Ialltoallw(in, cnt2, wd, tys, b2, cnt2, wd, tys, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1, in, sizeof(int) * big), memcpy(b2, in, sizeof(int) * big);
    MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, b1, cnt2, wd, tys, MPI_COMM_WORLD);
    MPI_Ialltoallw(MPI_IN_PLACE, NULL, NULL, NULL, b2, cnt2, wd, tys, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    MPI_Reduce_scatter_block(in, b1, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Ireduce_scatter_block(in, b2, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1, in, sizeof(int) * big), memcpy(b2, in, sizeof(int) * big);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, b1, 1, pair, aff, MPI_COMM_WORLD);
    MPI_Ireduce_scatter_block(MPI_IN_PLACE, b2, 1, pair, aff, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    MPI_Reduce_scatter(in, b1, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Ireduce_scatter(in, b2, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1, in, sizeof(int) * big), memcpy(b2, in, sizeof(int) * big);
    MPI_Reduce_scatter(MPI_IN_PLACE, b1, cnt, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Ireduce_scatter(MPI_IN_PLACE, b2, cnt, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    MPI_Scan(in, b1, N, pair, aff, MPI_COMM_WORLD);
    MPI_Iscan(in, b2, N, pair, aff, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1, in, sizeof(int) * 2 * N), memcpy(b2, in, sizeof(int) * 2 * N);
    MPI_Scan(MPI_IN_PLACE, b1, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Iscan(MPI_IN_PLACE, b2, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    MPI_Exscan(in, b1, N, pair, aff, MPI_COMM_WORLD);
    MPI_Iexscan(in, b2, N, pair, aff, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    RESET();
    memcpy(b1, in, sizeof(int) * 2 * N), memcpy(b2, in, sizeof(int) * 2 * N);
    MPI_Exscan(MPI_IN_PLACE, b1, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Iexscan(MPI_IN_PLACE, b2, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q), wait1(&q);
    SAME();
    MPI_Op_free(&aff);
    MPI_Type_free(&pair);
    MPI_Type_free(&every2);
    free(in), free(b1), free(b2), free(cnt), free(dsp), free(cnt2), free(dsp2), free(tys), free(wd);
}

/* Large messages (rendezvous) in a schedule while the peer sits in a
 * blocking receive. */
static void large(void) {
    enum { L = 1 << 17 };
    int *v = malloc(sizeof(int) * L), tok = 3;
    for (int i = 0; i < L; i++) v[i] = rank == 0 ? i : -1;
    MPI_Request q;
    MPI_Ibcast(v, L, MPI_INT, 0, MPI_COMM_WORLD, &q);
    if (rank == 0) {
        MPI_Recv(&tok, 1, MPI_INT, size - 1, 80, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (rank == size - 1) MPI_Send(&tok, 1, MPI_INT, 0, 80, MPI_COMM_WORLD);
    }
    for (int i = 0; i < L; i += 1021) CHECK(v[i] == i);
    free(v);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) {
        for (int k = 0; k < 3; k++) progress_in_recv(k);
        progress_in_probe();
        large();
    }
    many_outstanding();
    same_as_blocking();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("nbcprog: ok %d tasks\n", size);
    MPI_Finalize();
    return 0;
}
