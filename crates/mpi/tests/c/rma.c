/* One-sided communication: Put/Get with fences, accumulates from every
 * rank, fetch-and-op and compare-and-swap under passive locks, an
 * exclusive read-modify-write, window attributes and range errors.
 * Rank 0 prints "rma: ok N tasks" when every check passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs;
#define CHECK_COUNTS
#include "check.h"

static long created[64];

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* Allocated window: a ring of puts, then gets. */
    int *mem;
    MPI_Win win;
    CHECK(MPI_Win_allocate(16 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win) ==
          MPI_SUCCESS);
    for (int i = 0; i < 16; i++)
        mem[i] = -1;
    MPI_Win_fence(0, win);
    int v = 1000 + rank;
    MPI_Put(&v, 1, MPI_INT, next, 3, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    CHECK(mem[3] == 1000 + prev);
    mem[5] = 2000 + rank;
    MPI_Win_fence(0, win);
    int got[2] = {0, 0};
    MPI_Get(got, 2, MPI_INT, next, 4, 2, MPI_INT, win);
    MPI_Win_fence(0, win);
    CHECK(got[0] == -1 && got[1] == 2000 + next);

    /* Accumulate from every rank into rank 0. */
    mem[0] = 0;
    MPI_Win_fence(0, win);
    int one = rank + 1;
    MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    if (rank == 0)
        CHECK(mem[0] == size * (size + 1) / 2);

    /* Passive target: fetch-and-op counters and one CAS winner. */
    mem[1] = 0;
    mem[2] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    int inc = 1, old, seen_max = -1;
    for (int i = 0; i < 50; i++) {
        MPI_Fetch_and_op(&inc, &old, MPI_INT, 0, 1, MPI_SUM, win);
        MPI_Win_flush(0, win);
        CHECK(old > seen_max);
        seen_max = old;
    }
    int minus = -1, mine = rank, was;
    MPI_Compare_and_swap(&mine, &minus, &was, MPI_INT, 0, 2, win);
    MPI_Win_unlock_all(win);
    int won = (was == -1), winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(mem[1] == 50 * size && mem[2] >= 0 && mem[2] < size);

    /* Exclusive lock: a plain get-increment-put is never lost. */
    mem[6] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 20; i++) {
        int x;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&x, 1, MPI_INT, 0, 6, 1, MPI_INT, win);
        MPI_Win_flush(0, win);
        x++;
        MPI_Put(&x, 1, MPI_INT, 0, 6, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(mem[6] == 20 * size);

    /* Attributes, and an access outside the target's window. */
    MPI_Aint *wsize;
    int flag;
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag);
    CHECK(flag && *wsize == 16 * (MPI_Aint)sizeof(int));
    CHECK(MPI_Put(&v, 1, MPI_INT, next, 16, 1, MPI_INT, win) == MPI_ERR_RMA_RANGE);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, size, 0, win) == MPI_ERR_RANK);
    MPI_Win_fence(0, win);
    CHECK(MPI_Win_free(&win) == MPI_SUCCESS && win == MPI_WIN_NULL);

    /* A window over memory the program owns; Get_accumulate. */
    for (int i = 0; i < 64; i++)
        created[i] = rank;
    MPI_Win w2;
    CHECK(MPI_Win_create(created, sizeof created, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &w2) ==
          MPI_SUCCESS);
    MPI_Win_fence(0, w2);
    long add[4] = {10, 10, 10, 10}, before[4];
    MPI_Get_accumulate(add, 4, MPI_LONG, before, 4, MPI_LONG, next, 60, 4, MPI_LONG, MPI_SUM, w2);
    MPI_Win_fence(0, w2);
    CHECK(before[0] == next && before[3] == next);
    CHECK(created[60] == rank + 10 && created[63] == rank + 10 && created[59] == rank);
    MPI_Win_free(&w2);

    int total = 0;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf("rma: ok %d tasks\n", size);
        else
            printf("rma: %d errors\n", total);
    }
    MPI_Finalize();
    return 0;
}
