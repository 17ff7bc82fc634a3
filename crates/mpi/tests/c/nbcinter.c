/* Nonblocking collectives on intercommunicators: on two splits of the
 * job (even and odd ranks; the first third against the rest), with the
 * root in either group, every one of Ibarrier, Ibcast, Ireduce (also a
 * non-commutative user operation), Iallreduce, Igather(v), Iscatter(v),
 * Iallgather(v), Ialltoall(v,w) and Ireduce_scatter(_block), all
 * outstanding at once and completed together, must leave every buffer
 * as its blocking form does. Then the errors under MPI_ERRORS_RETURN: a
 * root out of range, MPI_IN_PLACE (also a non-root's), Iscan/Iexscan, a null operation, a
 * negative count and a null request, each with its class, after which
 * the intercommunicator still works. Rank 0 prints "nbcinter: ok N tasks"
 * (one task: nothing to pair). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs, rank;
#define CHECK_COUNTS
#include "check.h"

#define N 3     /* ints per block */
#define BIG 512 /* ints per buffer */
#define NOPS 15

/* x -> m x + c as (m, c); in o inout = in(inout(x)): associative, not
 * commutative. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    unsigned *a = in, *b = inout;
    (void)dt;
    for (int i = 0; i < *len; i++, a += 2, b += 2) {
        unsigned m = a[0] * b[0], c = a[0] * b[1] + a[1];
        b[0] = m;
        b[1] = c;
    }
}

/* The send and receive buffers of one collective, its blocking and its
 * nonblocking form each with their own. */
struct bufs {
    int s[BIG], r[BIG];
};
static struct bufs blk[NOPS], nbc[NOPS];

static void fill(int *b, int seed)
{
    for (int i = 0; i < BIG; i++)
        b[i] = seed * 1000 + i;
}

/* Runs collective k in blocking (q == NULL) or nonblocking form. */
static void op(int k, struct bufs *b, MPI_Comm ic, int lsize, int lrank, int rsize, int root,
               MPI_Op noncomm, MPI_Datatype aff, MPI_Request *q)
{
    int counts[64], displs[64], sc[64], sd[64], rc[64], rd[64], sdb[64], rdb[64], total = 0, at = 0;
    MPI_Datatype st[64], rt[64];
    /* Remote task j gets or gives j + 1 ints, placed in reverse rank order
     * with a gap of one before each. */
    for (int j = rsize - 1; j >= 0; j--) {
        counts[j] = j + 1;
        displs[j] = total + 1;
        total += j + 2;
    }
    for (int j = 0; j < rsize; j++) {
        sc[j] = j + 1;
        sd[j] = at;
        at += j + 1;
        rc[j] = lrank + 1;
        rd[j] = j * (lrank + 2) + 1;
        sdb[j] = sd[j] * (int)sizeof(int);
        rdb[j] = rd[j] * (int)sizeof(int);
        st[j] = rt[j] = MPI_INT;
    }
    /* Reduce_scatter: 12 ints in all, cut among the local tasks. */
    int rsc[64];
    for (int i = 0; i < lsize; i++)
        rsc[i] = 12 / lsize + (i < 12 % lsize);
    int rc_block = 60 / lsize, rv;
    switch (k) {
    case 0:
        rv = q ? MPI_Ibarrier(ic, q) : MPI_Barrier(ic);
        break;
    case 1:
        rv = q ? MPI_Ibcast(b->r, 2 * N, MPI_INT, root, ic, q) : MPI_Bcast(b->r, 2 * N, MPI_INT, root, ic);
        break;
    case 2:
        rv = q ? MPI_Ireduce(b->s, b->r, N, MPI_INT, MPI_SUM, root, ic, q)
               : MPI_Reduce(b->s, b->r, N, MPI_INT, MPI_SUM, root, ic);
        break;
    case 3:
        rv = q ? MPI_Ireduce(b->s, b->r, 2, aff, noncomm, root, ic, q)
               : MPI_Reduce(b->s, b->r, 2, aff, noncomm, root, ic);
        break;
    case 4:
        rv = q ? MPI_Iallreduce(b->s, b->r, N, MPI_INT, MPI_MAX, ic, q)
               : MPI_Allreduce(b->s, b->r, N, MPI_INT, MPI_MAX, ic);
        break;
    case 5:
        rv = q ? MPI_Igather(b->s, N, MPI_INT, b->r, N, MPI_INT, root, ic, q)
               : MPI_Gather(b->s, N, MPI_INT, b->r, N, MPI_INT, root, ic);
        break;
    case 6:
        rv = q ? MPI_Igatherv(b->s, lrank + 1, MPI_INT, b->r, counts, displs, MPI_INT, root, ic, q)
               : MPI_Gatherv(b->s, lrank + 1, MPI_INT, b->r, counts, displs, MPI_INT, root, ic);
        break;
    case 7:
        rv = q ? MPI_Iscatter(b->s, N, MPI_INT, b->r, N, MPI_INT, root, ic, q)
               : MPI_Scatter(b->s, N, MPI_INT, b->r, N, MPI_INT, root, ic);
        break;
    case 8:
        rv = q ? MPI_Iscatterv(b->s, counts, displs, MPI_INT, b->r, lrank + 1, MPI_INT, root, ic, q)
               : MPI_Scatterv(b->s, counts, displs, MPI_INT, b->r, lrank + 1, MPI_INT, root, ic);
        break;
    case 9:
        rv = q ? MPI_Iallgather(b->s, N, MPI_INT, b->r, N, MPI_INT, ic, q)
               : MPI_Allgather(b->s, N, MPI_INT, b->r, N, MPI_INT, ic);
        break;
    case 10:
        rv = q ? MPI_Iallgatherv(b->s, lrank + 1, MPI_INT, b->r, counts, displs, MPI_INT, ic, q)
               : MPI_Allgatherv(b->s, lrank + 1, MPI_INT, b->r, counts, displs, MPI_INT, ic);
        break;
    case 11:
        rv = q ? MPI_Ialltoall(b->s, N, MPI_INT, b->r, N, MPI_INT, ic, q)
               : MPI_Alltoall(b->s, N, MPI_INT, b->r, N, MPI_INT, ic);
        break;
    case 12:
        rv = q ? MPI_Ialltoallv(b->s, sc, sd, MPI_INT, b->r, rc, rd, MPI_INT, ic, q)
               : MPI_Alltoallv(b->s, sc, sd, MPI_INT, b->r, rc, rd, MPI_INT, ic);
        break;
    case 13:
        rv = q ? MPI_Ialltoallw(b->s, sc, sdb, st, b->r, rc, rdb, rt, ic, q)
               : MPI_Alltoallw(b->s, sc, sdb, st, b->r, rc, rdb, rt, ic);
        break;
    default:
        rv = q ? MPI_Ireduce_scatter(b->s, b->r, rsc, MPI_INT, MPI_SUM, ic, q)
               : MPI_Reduce_scatter(b->s, b->r, rsc, MPI_INT, MPI_SUM, ic);
        if (rv == MPI_SUCCESS) {
            MPI_Request q2;
            rv = q ? MPI_Ireduce_scatter_block(b->s, b->r + 100, rc_block, MPI_INT, MPI_SUM, ic, &q2)
                   : MPI_Reduce_scatter_block(b->s, b->r + 100, rc_block, MPI_INT, MPI_SUM, ic);
            if (q && rv == MPI_SUCCESS)
                MPI_Wait(&q2, MPI_STATUS_IGNORE);
        }
        break;
    }
    CHECK(rv == MPI_SUCCESS);
}

static void compare(MPI_Comm ic, int in_root_group, int root_local)
{
    int lsize, lrank, rsize;
    MPI_Comm_size(ic, &lsize);
    MPI_Comm_rank(ic, &lrank);
    MPI_Comm_remote_size(ic, &rsize);
    MPI_Op noncomm;
    MPI_Datatype aff;
    MPI_Op_create(compose, 0, &noncomm);
    MPI_Type_contiguous(2, MPI_UNSIGNED, &aff);
    MPI_Type_commit(&aff);
    int root = in_root_group ? (lrank == root_local ? MPI_ROOT : MPI_PROC_NULL) : root_local;
    for (int k = 0; k < NOPS; k++) {
        fill(blk[k].s, rank + 1);
        fill(blk[k].r, -1 - k);
        if (k == 3)
            for (int i = 0; i < 4; i++)
                blk[k].s[i] = rank + 2 + i;
        if (k == 1 && root == MPI_ROOT)
            fill(blk[k].r, 777);
        nbc[k] = blk[k];
    }
    for (int k = 0; k < NOPS; k++)
        op(k, &blk[k], ic, lsize, lrank, rsize, root, noncomm, aff, NULL);
    /* Every nonblocking one outstanding at once, plus one on the world,
     * completed together. */
    MPI_Request q[NOPS + 1];
    int one = 1, sum = 0;
    for (int k = 0; k < NOPS; k++)
        op(k, &nbc[k], ic, lsize, lrank, rsize, root, noncomm, aff, &q[k]);
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[NOPS]);
    CHECK(MPI_Waitall(NOPS + 1, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(sum == size);
    for (int k = 0; k < NOPS; k++) {
        int same = memcmp(&blk[k], &nbc[k], sizeof blk[k]) == 0;
        if (!same)
            fprintf(stderr, "rank %d: collective %d differs (root %d)\n", rank, k, root);
        CHECK(same);
    }
    /* Some results by value, so that both forms are not wrong alike:
     * the broadcast reached the other group, the allreduce gave each
     * group the other's largest world rank. */
    if (!in_root_group)
        CHECK(blk[1].r[0] == 777000 && blk[1].r[2 * N - 1] == 777000 + 2 * N - 1);
    int wmax = 0, mine = rank;
    MPI_Allreduce(&mine, &wmax, 1, MPI_INT, MPI_MAX, ic);
    CHECK(blk[4].r[0] == (wmax + 1) * 1000 && blk[4].r[N - 1] == (wmax + 1) * 1000 + N - 1);
    MPI_Type_free(&aff);
    MPI_Op_free(&noncomm);
}

static void errors(MPI_Comm ic)
{
    int rsize, x[4] = {0, 0, 0, 0}, y[4];
    MPI_Request q = MPI_REQUEST_NULL;
    MPI_Comm_remote_size(ic, &rsize);
    CHECK(MPI_Ibcast(x, 1, MPI_INT, rsize, ic, &q) == MPI_ERR_ROOT);
    CHECK(MPI_Ibcast(x, 1, MPI_INT, -7, ic, &q) == MPI_ERR_ROOT);
    CHECK(MPI_Ireduce(x, y, 1, MPI_INT, MPI_SUM, rsize + 3, ic, &q) == MPI_ERR_ROOT);
    CHECK(MPI_Igather(x, 1, MPI_INT, y, 1, MPI_INT, -9, ic, &q) == MPI_ERR_ROOT);
    CHECK(MPI_Iscatterv(x, NULL, NULL, MPI_INT, y, 1, MPI_INT, rsize, ic, &q) == MPI_ERR_ROOT);
    CHECK(MPI_Bcast(x, 1, MPI_INT, rsize, ic) == MPI_ERR_ROOT);
    CHECK(MPI_Iallreduce(MPI_IN_PLACE, y, 1, MPI_INT, MPI_SUM, ic, &q) == MPI_ERR_ARG);
    CHECK(MPI_Iallgather(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, ic, &q) == MPI_ERR_ARG);
    CHECK(MPI_Ialltoall(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, ic, &q) == MPI_ERR_ARG);
    /* MPI_IN_PLACE where only a root may pass it (every task here names
     * remote rank 0): refused, not read as a buffer. */
    CHECK(MPI_Igather(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, 0, ic, &q) == MPI_ERR_ARG);
    CHECK(MPI_Scatter(x, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0, ic) == MPI_ERR_ARG);
    CHECK(MPI_Iscan(x, y, 1, MPI_INT, MPI_SUM, ic, &q) == MPI_ERR_COMM);
    CHECK(MPI_Iexscan(x, y, 1, MPI_INT, MPI_SUM, ic, &q) == MPI_ERR_COMM);
    CHECK(MPI_Iallreduce(x, y, 1, MPI_INT, MPI_OP_NULL, ic, &q) == MPI_ERR_OP);
    CHECK(MPI_Iallreduce(x, y, -1, MPI_INT, MPI_SUM, ic, &q) == MPI_ERR_COUNT);
    /* A null request: refused before anything starts. */
    CHECK(MPI_Ibarrier(ic, NULL) == MPI_ERR_ARG);
    CHECK(q == MPI_REQUEST_NULL);
    /* Still in step: an allreduce across the groups. */
    int one = 1, got = 0;
    CHECK(MPI_Iallreduce(&one, &got, 1, MPI_INT, MPI_SUM, ic, &q) == MPI_SUCCESS);
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(got == rsize);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size > 1) {
        for (int split = 0; split < 2; split++) {
            /* split 0: evens (low) and odds; split 1: the first third
             * (at least one task, low) and the rest. */
            int third = (size + 2) / 3;
            int low = split == 0 ? rank % 2 == 0 : rank < third;
            int nlow = split == 0 ? (size + 1) / 2 : third;
            int remote_leader = split == 0 ? (low ? 1 : 0) : (low ? third : 0);
            MPI_Comm half, ic;
            MPI_Comm_split(MPI_COMM_WORLD, low, rank, &half);
            MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, remote_leader, 90 + split, &ic);
            MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
            /* Root: the low group's last task, then the high group's first. */
            compare(ic, low, nlow - 1);
            compare(ic, !low, 0);
            errors(ic);
            MPI_Comm_free(&ic);
            MPI_Comm_free(&half);
        }
    }
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("nbcinter: ok %d tasks\n", size);
    MPI_Finalize();
    return all != 0;
}
