/* All-to-all of blocks above 1 MiB, which a receiver on the same node
 * reads straight from the sender's buffer (see tests/stats.rs for the
 * counts): MPI_Alltoall twice into the same buffers, MPI_Alltoallv with
 * blocks of different lengths and gaps between them (left untouched),
 * in place, and into a strided receive type. Any number of tasks.
 * Prints "alltoallbig: ok N tasks" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Ints per block: just above 1 MiB. */
#define B (262144 + 64)
#define GAP 1000

static int val(int from, int to, int i, int round) {
    return from * 1000003 + to * 7919 + i * 3 + round;
}

int main(int argc, char **argv) {
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t all = (size_t)n * B;
    int *s = malloc(all * sizeof(int)), *r = malloc(all * sizeof(int));
    CHECK(s && r);

    for (int round = 0; round < 2; round++) {
        for (int p = 0; p < n; p++)
            for (int i = 0; i < B; i++) s[(size_t)p * B + i] = val(rank, p, i, round);
        memset(r, 0, all * sizeof(int));
        MPI_Alltoall(s, B, MPI_INT, r, B, MPI_INT, MPI_COMM_WORLD);
        for (int p = 0; p < n; p++)
            for (int i = 0; i < B; i++) CHECK(r[(size_t)p * B + i] == val(p, rank, i, round));
    }

    /* Alltoallv: from task f to task t, B + 16 * (f + t) ints; blocks
     * B + GAP ints apart in both buffers, the receive buffer's gaps
     * untouched. */
    int *sc = malloc(n * sizeof(int)), *sd = malloc(n * sizeof(int));
    int *rc = malloc(n * sizeof(int)), *rd = malloc(n * sizeof(int));
    size_t vall = (size_t)n * (B + GAP);
    int *sv = malloc(vall * sizeof(int)), *rv = malloc(vall * sizeof(int));
    CHECK(sc && sd && rc && rd && sv && rv && 16 * 2 * n < GAP);
    for (int p = 0; p < n; p++) {
        sc[p] = B + 16 * (rank + p);
        sd[p] = p * (B + GAP);
        rc[p] = B + 16 * (p + rank);
        rd[p] = p * (B + GAP);
        for (int i = 0; i < sc[p]; i++) sv[(size_t)sd[p] + i] = val(rank, p, i, 7);
    }
    for (size_t i = 0; i < vall; i++) rv[i] = -1;
    MPI_Alltoallv(sv, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < rc[p]; i++) CHECK(rv[(size_t)rd[p] + i] == val(p, rank, i, 7));
        for (int i = rc[p]; i < B + GAP; i++) CHECK(rv[(size_t)rd[p] + i] == -1);
    }

    /* In place. */
    for (int p = 0; p < n; p++)
        for (int i = 0; i < B; i++) r[(size_t)p * B + i] = val(rank, p, i, 9);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, B, MPI_INT, MPI_COMM_WORLD);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < B; i++) CHECK(r[(size_t)p * B + i] == val(p, rank, i, 9));

    /* Into every other int of the receive buffer. */
    MPI_Datatype every2;
    MPI_Type_vector(B, 1, 2, MPI_INT, &every2);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(MPI_INT, &lb, &ext);
    MPI_Datatype block;
    MPI_Type_create_resized(every2, 0, (MPI_Aint)2 * B * ext, &block);
    MPI_Type_commit(&block);
    int *r2 = malloc(2 * all * sizeof(int));
    CHECK(r2 != NULL);
    for (size_t i = 0; i < 2 * all; i++) r2[i] = -2;
    for (int p = 0; p < n; p++)
        for (int i = 0; i < B; i++) s[(size_t)p * B + i] = val(rank, p, i, 11);
    MPI_Alltoall(s, B, MPI_INT, r2, 1, block, MPI_COMM_WORLD);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < B; i++) {
            CHECK(r2[(size_t)p * 2 * B + 2 * i] == val(p, rank, i, 11));
            CHECK(r2[(size_t)p * 2 * B + 2 * i + 1] == -2);
        }
    MPI_Type_free(&block);
    MPI_Type_free(&every2);

    free(s);
    free(r);
    free(r2);
    free(rv);
    free(sv);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("alltoallbig: ok %d tasks\n", n);
    MPI_Finalize();
    return 0;
}
