/* Windows of large nonblocking sends on one node, round after round
 * (see tests/stats.rs): 24 messages of 4 MiB a window, 96 MiB staged at
 * once, more than the library keeps idle. Each message carries its
 * round and index in every byte; the receiver checks them all. Prints
 * "stagingreuse: ok" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define WINDOW 24
#define LEN (4 << 20)
#define ROUNDS 8

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2);
    char *buf = malloc((size_t)WINDOW * LEN);
    CHECK(buf != NULL);
    MPI_Request req[WINDOW];
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < WINDOW; i++) {
            char *b = buf + (size_t)i * LEN;
            if (rank == 0) {
                memset(b, (round * WINDOW + i) & 0xff, LEN);
                MPI_Isend(b, LEN, MPI_CHAR, 1, i, MPI_COMM_WORLD, &req[i]);
            } else {
                MPI_Irecv(b, LEN, MPI_CHAR, 0, i, MPI_COMM_WORLD, &req[i]);
            }
        }
        CHECK(MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
        if (rank == 1) {
            for (int i = 0; i < WINDOW; i++) {
                const char *b = buf + (size_t)i * LEN;
                char want = (char)((round * WINDOW + i) & 0xff);
                for (size_t k = 0; k < LEN; k += 4093) CHECK(b[k] == want);
                CHECK(b[LEN - 1] == want);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
    MPI_Finalize();
    if (rank == 0) printf("stagingreuse: ok\n");
    return 0;
}
