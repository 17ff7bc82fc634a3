/* Ring pass, barrier and pair ping-pong under Open MPI, the baseline of
 * `sss bench sswait`: ring ROUNDS laps of a token, then ROUNDS/4
 * MPI_Barrier calls, then every pair of ranks (0-1, 2-3, ...) ping-pongs
 * ROUNDS 8-byte messages at once; rank 0 prints "ring mpi N US_PER_HOP",
 * "barrier mpi N US_PER_BARRIER" and "pairs mpi N US_PER_ROUND_TRIP". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long rounds = argc > 1 ? atol(argv[1]) : 1000;
    long token = 0;
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long r = 1; r <= rounds; r++) {
        if (me == 0) {
            token = r;
            MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
        }
    }
    double ring = (MPI_Wtime() - t0) * 1e6 / (double)(rounds * n);
    long brounds = rounds / 4 > 0 ? rounds / 4 : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long b = 0; b < brounds; b++) MPI_Barrier(MPI_COMM_WORLD);
    double bar = (MPI_Wtime() - t0) * 1e6 / (double)brounds;
    int mate = me ^ 1;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (mate < n) {
        for (long r = 1; r <= rounds; r++) {
            if (me % 2 == 0) {
                token = r;
                MPI_Send(&token, 1, MPI_LONG, mate, 1, MPI_COMM_WORLD);
                MPI_Recv(&token, 1, MPI_LONG, mate, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&token, 1, MPI_LONG, mate, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&token, 1, MPI_LONG, mate, 1, MPI_COMM_WORLD);
            }
        }
    }
    /* Until every pair is done: one pair alone on the CPUs is fast. */
    MPI_Barrier(MPI_COMM_WORLD);
    double pairs = (MPI_Wtime() - t0) * 1e6 / (double)rounds;
    if (me == 0) {
        printf("ring mpi %d %.2f\n", n, ring);
        printf("barrier mpi %d %.2f\n", n, bar);
        printf("pairs mpi %d %.2f\n", n, pairs);
    }
    MPI_Finalize();
    return 0;
}
