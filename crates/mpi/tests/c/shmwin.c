/* Shared-memory windows: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), then
 * MPI_Win_allocate_shared with a different size per rank (rank r gives
 * r + 1 doubles). Checked: the parts are contiguous in rank order, each
 * rank's stores are seen by direct loads of every other rank after
 * MPI_Win_sync and a barrier, MPI_Win_shared_query with MPI_PROC_NULL,
 * the window flavor, and RMA calls (MPI_Put, MPI_Accumulate) into a part
 * seen by direct loads after a fence. On a communicator spanning two
 * nodes the call fails with MPI_ERR_COMM (under MPI_ERRORS_RETURN).
 * Rank 0 prints "shmwin: ok N tasks" when every check passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs, rank;
#define CHECK_COUNTS
#include "check.h"

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Across nodes (when the job spans two): refused with MPI_ERR_COMM. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nsize, nrank;
    MPI_Comm_size(node, &nsize);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    if (nsize < size) {
        double *p;
        MPI_Win w;
        int rc = MPI_Win_allocate_shared(8, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &p, &w);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_COMM);
    }

    /* Rank r of the node gives r + 1 doubles. */
    double *mine;
    MPI_Win win;
    MPI_Aint bytes = (MPI_Aint)(nrank + 1) * sizeof(double);
    CHECK(MPI_Win_allocate_shared(bytes, sizeof(double), MPI_INFO_NULL, node, &mine, &win) ==
          MPI_SUCCESS);
    int flag = 0, *flavor = NULL;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && flavor && *flavor == MPI_WIN_FLAVOR_SHARED);

    /* Contiguous, in rank order, and our own part where we were told. */
    double *first = NULL;
    MPI_Aint qsize;
    int qunit;
    CHECK(MPI_Win_shared_query(win, 0, &qsize, &qunit, &first) == MPI_SUCCESS);
    CHECK(qsize == (MPI_Aint)sizeof(double) && qunit == (int)sizeof(double));
    for (int r = 0; r < nsize; r++) {
        double *p = NULL;
        CHECK(MPI_Win_shared_query(win, r, &qsize, &qunit, &p) == MPI_SUCCESS);
        CHECK(qsize == (MPI_Aint)(r + 1) * (MPI_Aint)sizeof(double));
        CHECK(p == first + r * (r + 1) / 2);
        if (r == nrank)
            CHECK(p == mine);
    }
    double *any = NULL;
    CHECK(MPI_Win_shared_query(win, MPI_PROC_NULL, &qsize, &qunit, &any) == MPI_SUCCESS);
    CHECK(any == first && qsize == (MPI_Aint)sizeof(double));

    /* Direct stores, seen by direct loads of everyone. */
    MPI_Win_lock_all(0, win);
    for (int i = 0; i <= nrank; i++)
        mine[i] = 1000.0 * nrank + i;
    MPI_Win_sync(win);
    MPI_Barrier(node);
    MPI_Win_sync(win);
    int total = nsize * (nsize + 1) / 2;
    for (int r = 0, k = 0; r < nsize; r++)
        for (int i = 0; i <= r; i++, k++)
            CHECK(first[k] == 1000.0 * r + i);
    CHECK(total > 0);
    MPI_Win_unlock_all(win);
    MPI_Barrier(node);

    /* RMA into the next rank's part, seen there by direct loads. */
    int next = (nrank + 1) % nsize;
    MPI_Win_fence(0, win);
    double v = -1.0 - nrank;
    MPI_Put(&v, 1, MPI_DOUBLE, next, 0, 1, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    int prev = (nrank + nsize - 1) % nsize;
    CHECK(mine[0] == -1.0 - prev);
    double one = 1.0;
    MPI_Win_fence(0, win);
    for (int r = 0; r < nsize; r++)
        MPI_Accumulate(&one, 1, MPI_DOUBLE, r, r, 1, MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_fence(0, win);
    CHECK(mine[nrank] == 1000.0 * nrank + nrank + nsize || (nrank == 0 && mine[0] == -1.0 - prev + nsize));

    CHECK(MPI_Win_free(&win) == MPI_SUCCESS);
    MPI_Comm_free(&node);
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("shmwin: ok %d tasks\n", size);
    MPI_Finalize();
    return all != 0;
}
