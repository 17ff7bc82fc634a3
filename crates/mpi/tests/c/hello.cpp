// The header from C++, linked statically or not: rank 0 prints
// "hello: N tasks, sum R" after an Allreduce of the ranks.
#include <mpi.h>
#include <cstdio>

int main(int argc, char **argv) {
    int rank = 0, size = 0, sum = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("hello: %d tasks, sum %d\n", size, sum);
    return MPI_Finalize();
}
