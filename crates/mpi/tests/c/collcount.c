/* Messages a collective takes (counted in tests/stats.rs): 100
 * allreduces of one int and 10 allgathers of 256 KiB a task, nothing
 * else. Prints "collcount: ok" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

#define CHUNK (64 * 1024) /* ints */

static int rank;

int main(int argc, char **argv) {
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 100; i++) {
        int x = rank + i, sum;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == size * (size - 1) / 2 + size * i);
    }
    int *mine = malloc(sizeof(int) * CHUNK), *all = malloc(sizeof(int) * CHUNK * size);
    CHECK(mine && all);
    for (int i = 0; i < 10; i++) {
        for (int k = 0; k < CHUNK; k++) mine[k] = rank * 7 + i + k;
        MPI_Allgather(mine, CHUNK, MPI_INT, all, CHUNK, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < CHUNK; k += 97) CHECK(all[r * CHUNK + k] == r * 7 + i + k);
    }
    free(mine), free(all);
    MPI_Finalize();
    if (rank == 0) printf("collcount: ok\n");
    return 0;
}
