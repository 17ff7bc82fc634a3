/* Dynamic windows: memory attached after creation and addressed by its
 * absolute address (MPI_Get_address, exchanged with MPI_Allgather): puts
 * and gets under fences and passive locks, a second region attached
 * later (the origins' copies of the table miss and are read again), an
 * address in no region (MPI_ERR_RMA_RANGE), detach.
 * Rank 0 prints "dynwin: ok N tasks" when every check passed. */
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
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Win win;
    CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS);
    /* Nothing attached yet: zero-count operations do nothing (as the OSU
     * benchmarks' first message size does). */
    long zero = 0, zres = 0;
    MPI_Win_fence(0, win);
    CHECK(MPI_Accumulate(&zero, 0, MPI_LONG, next, 0, 0, MPI_LONG, MPI_SUM, win) == MPI_SUCCESS);
    CHECK(MPI_Get_accumulate(&zero, 0, MPI_LONG, &zres, 0, MPI_LONG, next, 0, 0, MPI_LONG, MPI_SUM,
                             win) == MPI_SUCCESS);
    CHECK(MPI_Put(&zero, 0, MPI_LONG, next, 0, 0, MPI_LONG, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    long *a = calloc(32, sizeof(long));
    CHECK(MPI_Win_attach(win, a, 32 * sizeof(long)) == MPI_SUCCESS);
    MPI_Aint mine, *addrs = malloc(sizeof(MPI_Aint) * size);
    MPI_Get_address(a, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);

    /* A ring of puts under fences. */
    MPI_Win_fence(0, win);
    long v = 700 + rank;
    MPI_Put(&v, 1, MPI_LONG, next, addrs[next] + 3 * sizeof(long), 1, MPI_LONG, win);
    MPI_Win_fence(0, win);
    CHECK(a[3] == 700 + prev);

    /* Gets under a passive lock. */
    a[5] = 900 + rank;
    MPI_Barrier(MPI_COMM_WORLD);
    long got = 0;
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    MPI_Get(&got, 1, MPI_LONG, next, addrs[next] + 5 * sizeof(long), 1, MPI_LONG, win);
    MPI_Win_unlock(next, win);
    CHECK(got == 900 + next);

    /* A second region, attached later. */
    long *b = calloc(8, sizeof(long));
    CHECK(MPI_Win_attach(win, b, 8 * sizeof(long)) == MPI_SUCCESS);
    MPI_Get_address(b, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    MPI_Win_fence(0, win);
    v = 1100 + rank;
    MPI_Put(&v, 1, MPI_LONG, next, addrs[next] + sizeof(long), 1, MPI_LONG, win);
    MPI_Win_fence(0, win);
    CHECK(b[1] == 1100 + prev);

    /* Overlapping attachments and addresses in no region are errors. */
    int e;
    MPI_Error_class(MPI_Win_attach(win, b + 2, sizeof(long)), &e);
    CHECK(e == MPI_ERR_ARG);
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    MPI_Error_class(MPI_Put(&v, 1, MPI_LONG, next, addrs[next] + 64 * sizeof(long), 1, MPI_LONG,
                            win),
                    &e);
    CHECK(e == MPI_ERR_RMA_RANGE);
    MPI_Win_unlock(next, win);

    MPI_Win_fence(0, win);
    CHECK(MPI_Win_detach(win, b) == MPI_SUCCESS);
    CHECK(MPI_Win_detach(win, a) == MPI_SUCCESS);
    MPI_Error_class(MPI_Win_detach(win, a), &e);
    CHECK(e == MPI_ERR_ARG);
    MPI_Win_free(&win);
    free(a);
    free(b);
    free(addrs);
    int total;
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0)
        printf("dynwin: ok %d tasks\n", size);
    MPI_Finalize();
    return total != 0;
}
