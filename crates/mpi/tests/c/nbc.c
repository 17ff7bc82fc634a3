/* Nonblocking collectives; prints "nbc: ok N tasks" on rank 0 when
 * every check passed, exits 1 on the first failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static int rank, size;

static void maxabs(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) b[i] = abs(a[i]) > abs(b[i]) ? abs(a[i]) : abs(b[i]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = size, i, flag;
    MPI_Request rq[16];
    int nr = 0;
    int bc[2] = {rank == 1 % n ? 5 : 0, rank == 1 % n ? 6 : 0};
    int sum = -1, red = -1, one = rank + 1;
    int *g = malloc(sizeof(int) * (size_t)n), *ag = malloc(sizeof(int) * (size_t)n);
    int *sc = malloc(sizeof(int) * (size_t)n), *a2a = malloc(sizeof(int) * (size_t)n);
    int *a2b = malloc(sizeof(int) * (size_t)n), *cnt = malloc(sizeof(int) * (size_t)n);
    int *dsp = malloc(sizeof(int) * (size_t)n), *gv = malloc(sizeof(int) * (size_t)n);
    int *agv = malloc(sizeof(int) * (size_t)n), *a2v = malloc(sizeof(int) * (size_t)n);
    for (i = 0; i < n; i++) sc[i] = 10 * i, a2a[i] = rank * 100 + i, cnt[i] = 1, dsp[i] = n - 1 - i;
    int mine = -1, mine2 = -1, scan = -1, exs = -7, rsb = -1;
    /* Many at once, completed together and in a different order. */
    MPI_Ibarrier(MPI_COMM_WORLD, &rq[nr++]);
    MPI_Ibcast(bc, 2, MPI_INT, 1 % n, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Ireduce(&one, &red, 1, MPI_INT, MPI_MAX, n - 1, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Igather(&rank, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Iallgather(&rank, 1, MPI_INT, ag, 1, MPI_INT, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Iscatter(sc, 1, MPI_INT, &mine, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Ialltoall(a2a, 1, MPI_INT, a2b, 1, MPI_INT, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Igatherv(&rank, 1, MPI_INT, gv, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Iscatterv(sc, cnt, dsp, MPI_INT, &mine2, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Iallgatherv(&rank, 1, MPI_INT, agv, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Ialltoallv(a2a, cnt, dsp, MPI_INT, a2v, cnt, dsp, MPI_INT, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Iscan(&one, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[nr++]);
    MPI_Iexscan(&one, &exs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[nr++]);
    int *ones = malloc(sizeof(int) * (size_t)n);
    for (i = 0; i < n; i++) ones[i] = i + rank;
    MPI_Ireduce_scatter_block(ones, &rsb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[nr++]);
    /* A point-to-point message meanwhile. */
    int tok = rank, got = -1;
    MPI_Request p2[2];
    MPI_Irecv(&got, 1, MPI_INT, (rank + n - 1) % n, 0, MPI_COMM_WORLD, &p2[0]);
    MPI_Isend(&tok, 1, MPI_INT, (rank + 1) % n, 0, MPI_COMM_WORLD, &p2[1]);
    MPI_Wait(&rq[2], MPI_STATUS_IGNORE);
    CHECK(sum == n * (n + 1) / 2 && rq[2] == MPI_REQUEST_NULL);
    MPI_Waitall(2, p2, MPI_STATUSES_IGNORE);
    CHECK(got == (rank + n - 1) % n);
    flag = 0;
    while (!flag) MPI_Testall(nr, rq, &flag, MPI_STATUSES_IGNORE);
    CHECK(bc[0] == 5 && bc[1] == 6);
    if (rank == n - 1) CHECK(red == n);
    for (i = 0; i < n; i++) {
        if (rank == 0) CHECK(g[i] == i && gv[n - 1 - i] == i);
        CHECK(ag[i] == i && agv[n - 1 - i] == i);
        CHECK(a2b[i] == i * 100 + rank);
        CHECK(a2v[n - 1 - i] == i * 100 + (n - 1 - rank));
    }
    CHECK(mine == 10 * rank && mine2 == 10 * (n - 1 - rank));
    CHECK(scan == (rank + 1) * (rank + 2) / 2);
    if (rank > 0) CHECK(exs == rank * (rank + 1) / 2);
    CHECK(rsb == n * rank + n * (n - 1) / 2);
    /* Issued nonblocking, then a blocking one on the same communicator:
     * they run in issue order. */
    int x = rank == 0 ? 42 : 0, y = 0;
    MPI_Request b;
    MPI_Ibcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD, &b);
    MPI_Allreduce(&one, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(y == n * (n + 1) / 2);
    MPI_Wait(&b, MPI_STATUS_IGNORE);
    CHECK(x == 42);
    /* A reduction on a dup'ed communicator, tested until done. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Iallreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_PROD, dup, &b);
    flag = 0;
    while (!flag) MPI_Test(&b, &flag, MPI_STATUS_IGNORE);
    int fact = 1;
    for (i = 1; i <= n; i++) fact *= i;
    CHECK(one == fact);
    MPI_Comm_free(&dup);
    /* A datatype and an operation freed while a collective using them
     * is pending: the collective goes on as if they were there. */
    MPI_Datatype pair;
    MPI_Type_vector(2, 1, 2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op op;
    MPI_Op_create(maxabs, 1, &op);
    int pv[4] = {rank == 0 ? 7 : 0, -1, rank == 0 ? 8 : 0, -1};
    int mv = rank % 2 ? -rank : rank, mo = 0;
    MPI_Request two[2];
    MPI_Ibcast(pv, 1, pair, 0, MPI_COMM_WORLD, &two[0]);
    MPI_Iallreduce(&mv, &mo, 1, MPI_INT, op, MPI_COMM_WORLD, &two[1]);
    MPI_Type_free(&pair);
    MPI_Op_free(&op);
    MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
    CHECK(pv[0] == 7 && pv[2] == 8 && pv[1] == -1 && mo == n - 1);
    /* Igatherv into blocks two ints apart, at the root's receive buffer
     * itself: the ints between them keep their values. */
    int *gap = malloc(sizeof(int) * (size_t)(2 * n)), *gdsp = malloc(sizeof(int) * (size_t)n);
    for (i = 0; i < 2 * n; i++) gap[i] = -9;
    for (i = 0; i < n; i++) gdsp[i] = 2 * i;
    MPI_Igatherv(&rank, 1, MPI_INT, gap, cnt, gdsp, MPI_INT, 0, MPI_COMM_WORLD, &b);
    MPI_Wait(&b, MPI_STATUS_IGNORE);
    if (rank == 0)
        for (i = 0; i < n; i++) CHECK(gap[2 * i] == i && gap[2 * i + 1] == -9);
    free(gap), free(gdsp);
    /* Iscatterv from the last task of blocks of 1 or 2 ints, each
     * received in the receive buffer itself: the int past a block of 1
     * keeps its value, and so does the root's. */
    int *src = malloc(sizeof(int) * (size_t)(2 * n)), *scnt = malloc(sizeof(int) * (size_t)n);
    int *sdsp = malloc(sizeof(int) * (size_t)n), got2[3] = {-9, -9, -9};
    for (i = 0; i < 2 * n; i++) src[i] = 1000 + i;
    for (i = 0; i < n; i++) scnt[i] = 1 + i % 2, sdsp[i] = 2 * i;
    MPI_Iscatterv(src, scnt, sdsp, MPI_INT, got2, scnt[rank], MPI_INT, n - 1, MPI_COMM_WORLD, &b);
    MPI_Wait(&b, MPI_STATUS_IGNORE);
    CHECK(got2[0] == 1000 + 2 * rank && got2[2] == -9);
    CHECK(got2[1] == (rank % 2 ? 1001 + 2 * rank : -9));
    free(src), free(scnt), free(sdsp);
    free(g), free(ag), free(sc), free(a2a), free(a2b), free(cnt), free(dsp), free(gv), free(agv), free(a2v),
        free(ones);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("nbc: ok %d tasks\n", size);
    MPI_Finalize();
    return 0;
}
