/* Under MPI_THREAD_MULTIPLE, two threads per task each loop over an
 * Iallreduce on its own communicator while rank 0's thread blocks in a
 * receive that rank 1's thread sends only once its collective completed:
 * the collectives progress inside the receive, whichever thread waits.
 * Prints "nbcthreads: ok N tasks" on rank 0. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;

static void *worker(void *arg) {
    MPI_Comm c = *(MPI_Comm *)arg;
    for (int k = 0; k < 50; k++) {
        int s = rank + 1, r = -1, tok = k;
        MPI_Request q;
        MPI_Iallreduce(&s, &r, 1, MPI_INT, MPI_SUM, c, &q);
        if (rank == 0) {
            MPI_Recv(&tok, 1, MPI_INT, 1, 9, c, MPI_STATUS_IGNORE);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else {
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            if (rank == 1) MPI_Send(&tok, 1, MPI_INT, 0, 9, c);
        }
        if (r != size * (size + 1) / 2 || tok != k) {
            fprintf(stderr, "rank %d: sum %d, token %d at %d\n", rank, r, tok, k);
            exit(1);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE) exit(1);
    MPI_Comm c[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &c[1]);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, &c[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    MPI_Comm_free(&c[0]);
    MPI_Comm_free(&c[1]);
    if (rank == 0) printf("nbcthreads: ok %d tasks\n", size);
    MPI_Finalize();
    return 0;
}
