/* Ends a job early: `abort` has the last rank call MPI_Abort(7) while
 * the others block in MPI_Recv; `fatal` has rank 0 send to a rank past
 * the job under MPI_ERRORS_ARE_FATAL. Either way the job must end with
 * that status, never hang. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "abort") == 0) {
        if (rank == size - 1) {
            MPI_Abort(MPI_COMM_WORLD, 7);
        } else {
            MPI_Recv(&x, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else {
        if (rank == 0) {
            MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    printf("abort: not reached\n");
    MPI_Finalize();
    return 0;
}
