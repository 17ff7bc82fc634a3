/* One-sided operations on derived datatypes: MPI_Put, MPI_Get,
 * MPI_Accumulate and MPI_Get_accumulate with a strided (MPI_Type_vector) origin, target or both,
 * under fences and a passive lock, on a window of 64 doubles per task;
 * each task works on the next one's window. Rank 0 prints
 * "rmatypes: ok N tasks" when every check passed. */
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
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    double *win_mem;
    MPI_Win win;
    MPI_Win_allocate(64 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem,
                     &win);
    for (int i = 0; i < 64; i++)
        win_mem[i] = -1.0;
    /* Every 4th double, 8 of them; and 2 every 5, 4 times. */
    MPI_Datatype col, pairs;
    MPI_Type_vector(8, 1, 4, MPI_DOUBLE, &col);
    MPI_Type_commit(&col);
    MPI_Type_vector(4, 2, 5, MPI_DOUBLE, &pairs);
    MPI_Type_commit(&pairs);

    /* Contiguous origin, strided target: 8 values to every 4th slot. */
    double src[64];
    for (int i = 0; i < 64; i++)
        src[i] = 100.0 * rank + i;
    MPI_Win_fence(0, win);
    CHECK(MPI_Put(src, 8, MPI_DOUBLE, next, 1, 1, col, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 64; i++) {
        double want = (i >= 1 && (i - 1) % 4 == 0 && (i - 1) / 4 < 8) ? 100.0 * prev + (i - 1) / 4
                                                                        : -1.0;
        CHECK(win_mem[i] == want);
    }

    /* Strided origin and target, different shapes: the 8 values of a
     * column go to pairs; then read back pairs into a column. */
    for (int i = 0; i < 64; i++)
        win_mem[i] = -1.0;
    MPI_Win_fence(0, win);
    CHECK(MPI_Put(src, 1, col, next, 0, 1, pairs, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    int k = 0;
    for (int b = 0; b < 4; b++)
        for (int j = 0; j < 2; j++, k++)
            CHECK(win_mem[5 * b + j] == 100.0 * prev + 4 * k);
    double back[64];
    for (int i = 0; i < 64; i++)
        back[i] = 0.0;
    MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win);
    CHECK(MPI_Get(back, 1, col, next, 0, 1, pairs, win) == MPI_SUCCESS);
    MPI_Win_unlock(next, win);
    for (int i = 0; i < 32; i++)
        CHECK(back[i] == (i % 4 == 0 ? 100.0 * rank + i : 0.0));

    /* Strided target only, read into a contiguous buffer. */
    double flat[8];
    MPI_Win_fence(0, win);
    CHECK(MPI_Get(flat, 8, MPI_DOUBLE, next, 0, 1, pairs, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 8; i++)
        CHECK(flat[i] == 100.0 * rank + 4 * i);

    /* Accumulate: every task adds its rank + 1 to every 4th slot of the
     * next one's window (a contiguous origin, a strided target), twice;
     * the slots in between are left alone. */
    for (int i = 0; i < 64; i++)
        win_mem[i] = 0.0;
    double ones[8];
    for (int i = 0; i < 8; i++)
        ones[i] = rank + 1;
    MPI_Win_fence(0, win);
    for (int r = 0; r < 2; r++)
        CHECK(MPI_Accumulate(ones, 8, MPI_DOUBLE, next, 0, 1, col, MPI_SUM, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 32; i++)
        CHECK(win_mem[i] == (i % 4 == 0 ? 2.0 * (prev + 1) : 0.0));
    /* Strided on both sides. */
    MPI_Win_fence(0, win);
    CHECK(MPI_Accumulate(src, 1, col, next, 0, 1, pairs, MPI_SUM, win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    k = 0;
    for (int b = 0; b < 4; b++)
        for (int j = 0; j < 2; j++, k++) {
            int i = 5 * b + j;
            double before = i % 4 == 0 ? 2.0 * (prev + 1) : 0.0;
            CHECK(win_mem[i] == before + 100.0 * prev + 4 * k);
        }

    /* Get_accumulate: add 1 to every 4th slot (a column), the old values
     * back into pairs of a local buffer; then MPI_NO_OP reads the column
     * into a contiguous one; then MPI_REPLACE puts a column from pairs. */
    for (int i = 0; i < 64; i++)
        win_mem[i] = 1000.0 * rank + i;
    double got[64], want1[8];
    for (int i = 0; i < 64; i++)
        got[i] = -5.0;
    double plus[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    MPI_Win_fence(0, win);
    CHECK(MPI_Get_accumulate(plus, 8, MPI_DOUBLE, got, 1, pairs, next, 0, 1, col, MPI_SUM, win) ==
          MPI_SUCCESS);
    MPI_Win_fence(0, win);
    for (int c = 0; c < 8; c++)
        want1[c] = 1000.0 * next + 4 * c;
    k = 0;
    for (int b = 0; b < 4; b++)
        for (int j = 0; j < 2; j++, k++)
            CHECK(got[5 * b + j] == want1[k]);
    CHECK(got[2] == -5.0 && got[4] == -5.0);
    for (int i = 0; i < 64; i++)
        CHECK(win_mem[i] == 1000.0 * rank + i + (i % 4 == 0 && i / 4 < 8 ? 1.0 : 0.0));
    double flat2[8];
    MPI_Win_fence(0, win);
    CHECK(MPI_Get_accumulate(NULL, 0, MPI_DOUBLE, flat2, 8, MPI_DOUBLE, next, 0, 1, col, MPI_NO_OP,
                             win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    for (int c = 0; c < 8; c++)
        CHECK(flat2[c] == 1000.0 * next + 4 * c + 1.0);
    double old2[8];
    MPI_Win_fence(0, win);
    CHECK(MPI_Get_accumulate(src, 1, pairs, old2, 8, MPI_DOUBLE, next, 0, 1, col, MPI_REPLACE,
                             win) == MPI_SUCCESS);
    MPI_Win_fence(0, win);
    k = 0;
    for (int b = 0; b < 4; b++)
        for (int j = 0; j < 2; j++, k++) {
            CHECK(old2[k] == 1000.0 * next + 4 * k + 1.0);
            CHECK(win_mem[4 * k] == 100.0 * prev + 5 * b + j);
        }

    /* Sizes that differ are an error. */
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_fence(0, win);
    CHECK(MPI_Put(src, 3, MPI_DOUBLE, next, 0, 1, col, win) != MPI_SUCCESS);
    MPI_Win_fence(0, win);

    MPI_Type_free(&col);
    MPI_Type_free(&pairs);
    MPI_Win_free(&win);
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("rmatypes: ok %d tasks\n", size);
    MPI_Finalize();
    return all != 0;
}
