/* General active target synchronization: a ring where each rank exposes
 * its window to the previous rank and accesses the next one
 * (post/start/put/complete/wait), then every rank putting into rank 0
 * in one epoch, then wrong orders that must fail with MPI_ERR_RMA_SYNC.
 * Rank 0 prints "pscw: ok N tasks" when every check passed. */
#include <mpi.h>
#include <stdio.h>

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
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Group world, gnext, gprev, gzero;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &next, &gnext);
    MPI_Group_incl(world, 1, &prev, &gprev);
    int zero = 0;
    MPI_Group_incl(world, 1, &zero, &gzero);
    int *mem;
    MPI_Win win;
    CHECK(MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                           &win) == MPI_SUCCESS);
    for (int i = 0; i < 64; i++)
        mem[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);

    /* The ring, three rounds: each round's value must be there after the
     * wait, and only then. */
    for (int round = 0; round < 3; round++) {
        CHECK(MPI_Win_post(gprev, 0, win) == MPI_SUCCESS);
        CHECK(MPI_Win_start(gnext, 0, win) == MPI_SUCCESS);
        int v = 100 * round + rank;
        MPI_Put(&v, 1, MPI_INT, next, round, 1, MPI_INT, win);
        CHECK(MPI_Win_complete(win) == MPI_SUCCESS);
        CHECK(MPI_Win_wait(win) == MPI_SUCCESS);
        CHECK(mem[round] == 100 * round + prev);
    }

    /* Everybody into rank 0, in one exposure epoch of rank 0. */
    if (rank == 0) {
        CHECK(MPI_Win_post(world, 0, win) == MPI_SUCCESS);
    }
    CHECK(MPI_Win_start(gzero, 0, win) == MPI_SUCCESS);
    int w = 5000 + rank;
    MPI_Put(&w, 1, MPI_INT, 0, 10 + rank, 1, MPI_INT, win);
    CHECK(MPI_Win_complete(win) == MPI_SUCCESS);
    if (rank == 0) {
        CHECK(MPI_Win_wait(win) == MPI_SUCCESS);
        for (int r = 0; r < size; r++)
            CHECK(mem[10 + r] == 5000 + r);
    }

    /* Wrong orders are errors, not hangs (the window's errors go to
     * its communicator's handler, copied from MPI_COMM_WORLD's). */
    int e;
    MPI_Error_class(MPI_Win_complete(win), &e);
    CHECK(e == MPI_ERR_RMA_SYNC);
    MPI_Error_class(MPI_Win_wait(win), &e);
    CHECK(e == MPI_ERR_RMA_SYNC);

    MPI_Win_free(&win);
    MPI_Group_free(&gnext);
    MPI_Group_free(&gprev);
    MPI_Group_free(&gzero);
    MPI_Group_free(&world);
    int total;
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0)
        printf("pscw: ok %d tasks\n", size);
    MPI_Finalize();
    return total != 0;
}
