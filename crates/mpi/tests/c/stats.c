/* A fixed traffic pattern on 2 tasks for SSS_STATS: the counts printed at
 * MPI_Finalize are known in advance (see tests/stats.rs).
 *
 * Task 1 posts ten receives of 100 bytes and one of 0 bytes, then tells
 * task 0 (0 bytes); task 0 sends the ten, two of 100000 bytes (a
 * rendezvous), the 0-byte one and one of 20000 bytes (through task 1's
 * ring across nodes, a rendezvous on one). Task 1 receives the large
 * ones after the 0-byte one, so they were unexpected; the last may
 * arrive before or after its receive. Then one Barrier, two Bcast,
 * one Allreduce and one Ibarrier. Prints "stats: ok" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SMALL 100
#define LARGE 100000
#define MID 20000

static int rank, size;
static char small[10][SMALL], large[2][LARGE], mid[MID];

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2);
    if (rank == 1) {
        MPI_Request r[11];
        for (int i = 0; i < 10; i++)
            MPI_Irecv(small[i], SMALL, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &r[i]);
        MPI_Irecv(NULL, 0, MPI_CHAR, 0, 3, MPI_COMM_WORLD, &r[10]);
        MPI_Send(NULL, 0, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        MPI_Waitall(11, r, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 2; i++)
            MPI_Recv(large[i], LARGE, MPI_CHAR, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(mid, MID, MPI_CHAR, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 10; i++) CHECK(small[i][SMALL - 1] == (char)i);
        CHECK(large[1][LARGE - 1] == 7);
        CHECK(mid[0] == 5 && mid[MID - 1] == 5);
    } else {
        MPI_Request r[2];
        MPI_Recv(NULL, 0, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 10; i++) {
            memset(small[i], i, SMALL);
            MPI_Send(small[i], SMALL, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        }
        memset(large, 7, sizeof large);
        for (int i = 0; i < 2; i++)
            MPI_Isend(large[i], LARGE, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &r[i]);
        MPI_Send(NULL, 0, MPI_CHAR, 1, 3, MPI_COMM_WORLD);
        memset(mid, 5, MID);
        MPI_Send(mid, MID, MPI_CHAR, 1, 4, MPI_COMM_WORLD);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    int v = rank, sum = 0;
    MPI_Request req;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(v == 0);
    v = rank;
    MPI_Bcast(&v, 1, MPI_INT, 1, MPI_COMM_WORLD);
    CHECK(v == 1);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == 1);
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == 0) printf("stats: ok\n");
    MPI_Finalize();
    return 0;
}
