/* Rooted and all-to-all nonblocking collectives on contiguous buffers,
 * each result checked. "contiguous" (the default): Iscatter, Iscatterv,
 * Igather, Igatherv and Iallgather of ints, which send from and receive
 * into the program's buffers (the statistics' nbc_copied_bytes stays 0).
 * "strided": one Iscatter received through a vector type (N ints two
 * apart), which the library receives packed and copies out: N * 4
 * bytes on every task.
 * Prints "nbccopy: ok MODE N tasks" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define N 4096

static int rank, size;

static int *ints(size_t n, int fill) {
    int *p = malloc(n * sizeof(int));
    CHECK(p != NULL);
    for (size_t i = 0; i < n; i++) p[i] = fill;
    return p;
}

static void contiguous(void) {
    int n = size, i, j;
    MPI_Request rq[5];
    int *all = ints((size_t)n * N, 0), *mine = ints(N, 0), *mine2 = ints(N, -9);
    int *cnt = ints((size_t)n, 0), *dsp = ints((size_t)n, 0);
    int *send = ints(N, 0), *gat = ints((size_t)n * N, -1), *gatv = ints((size_t)n * N, -1);
    int *ag = ints((size_t)n * N, -1);
    for (i = 0; i < n * N; i++) all[i] = i;
    for (i = 0; i < n; i++) cnt[i] = N - i, dsp[i] = (n - 1 - i) * N;
    for (i = 0; i < N; i++) send[i] = rank * N + i;
    MPI_Iscatter(all, N, MPI_INT, mine, N, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]);
    MPI_Iscatterv(all, cnt, dsp, MPI_INT, mine2, cnt[rank], MPI_INT, n - 1, MPI_COMM_WORLD, &rq[1]);
    MPI_Igather(send, N, MPI_INT, gat, N, MPI_INT, 1 % n, MPI_COMM_WORLD, &rq[2]);
    MPI_Igatherv(send, cnt[rank], MPI_INT, gatv, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD, &rq[3]);
    MPI_Iallgather(send, N, MPI_INT, ag, N, MPI_INT, MPI_COMM_WORLD, &rq[4]);
    MPI_Waitall(5, rq, MPI_STATUSES_IGNORE);
    for (j = 0; j < N; j++) {
        CHECK(mine[j] == rank * N + j);
        CHECK(mine2[j] == (j < N - rank ? (n - 1 - rank) * N + j : -9));
    }
    for (i = 0; i < n; i++)
        for (j = 0; j < N; j++) {
            if (rank == 1 % n) CHECK(gat[i * N + j] == i * N + j);
            if (rank == 0) CHECK(gatv[(n - 1 - i) * N + j] == (j < N - i ? i * N + j : -1));
            CHECK(ag[i * N + j] == i * N + j);
        }
    free(all), free(mine), free(mine2), free(cnt), free(dsp), free(send), free(gat), free(gatv), free(ag);
}

static void strided(void) {
    int n = size, j;
    MPI_Datatype every_other;
    MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int *all = ints((size_t)n * N, 0), *got = ints(2 * N, -9);
    for (j = 0; j < n * N; j++) all[j] = j;
    MPI_Request r;
    MPI_Iscatter(all, N, MPI_INT, got, 1, every_other, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (j = 0; j < N; j++) CHECK(got[2 * j] == rank * N + j && got[2 * j + 1] == -9);
    MPI_Type_free(&every_other);
    free(all), free(got);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "contiguous";
    if (strcmp(mode, "strided") == 0)
        strided();
    else
        contiguous();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("nbccopy: ok %s %d tasks\n", mode, size);
    MPI_Finalize();
    return 0;
}
