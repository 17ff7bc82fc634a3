/* A standard send of a rendezvous message completes once its data is
 * staged (see tests/stats.rs): task 0 sends a large message, then a
 * small one; task 1 receives the small one first. Had MPI_Send waited
 * for the receiver to take the large one, both would wait for ever.
 * Then an MPI_Ssend of a large message, which does wait for its match
 * (task 1 receives it after another small one, sent after the Ssend
 * returned), and a large Isend waited for before its receive is posted.
 * Runs on one node (across nodes a rendezvous send waits for its
 * receiver). Prints "stagedahead: ok" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define LARGE 100000

static char big[3][LARGE];

int main(int argc, char **argv) {
    int rank, size, small = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2);
    if (rank == 0) {
        for (int i = 0; i < 3; i++) memset(big[i], i + 1, LARGE);
        MPI_Send(big[0], LARGE, MPI_CHAR, 1, 2, MPI_COMM_WORLD);
        /* The send buffer is ours again: its data was staged. */
        memset(big[0], 0, LARGE);
        small = 1;
        MPI_Send(&small, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Ssend(big[1], LARGE, MPI_CHAR, 1, 3, MPI_COMM_WORLD);
        small = 2;
        MPI_Send(&small, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Request r;
        MPI_Isend(big[2], LARGE, MPI_CHAR, 1, 4, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        small = 3;
        MPI_Send(&small, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&small, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(small == 1);
        MPI_Recv(big[0], LARGE, MPI_CHAR, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(big[0][0] == 1 && big[0][LARGE - 1] == 1);
        MPI_Recv(big[1], LARGE, MPI_CHAR, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(&small, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(small == 2 && big[1][LARGE - 1] == 2);
        MPI_Recv(&small, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(small == 3);
        MPI_Recv(big[2], LARGE, MPI_CHAR, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(big[2][0] == 3 && big[2][LARGE - 1] == 3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("stagedahead: ok\n");
    MPI_Finalize();
    return 0;
}
