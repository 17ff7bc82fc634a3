/* The profiling interface: this program is its own tool. It defines
 * MPI_Init, MPI_Send, MPI_Recv and MPI_Allreduce, each counting its calls
 * and handing on to the PMPI_ name. A ring of sends must arrive intact
 * and be counted once each; the library's own traffic (the allreduce's)
 * must not go through the program's MPI_Send. Rank 0 prints
 * "pmpi: ok N tasks" when every check passed. */
#include <mpi.h>
#include <stdio.h>

static long inits, sends, recvs, allreduces;

int MPI_Init(int *argc, char ***argv)
{
    inits++;
    return PMPI_Init(argc, argv);
}

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    sends++;
    return PMPI_Send(buf, count, dt, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    recvs++;
    return PMPI_Recv(buf, count, dt, src, tag, comm, status);
}

int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    allreduces++;
    return PMPI_Allreduce(s, r, count, dt, op, comm);
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int rounds = 10;
    if (size > 1) {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        for (int i = 0; i < rounds; i++) {
            int out = 1000 * rank + i, in = -1;
            if (rank % 2 == 0) {
                MPI_Send(&out, 1, MPI_INT, next, i, MPI_COMM_WORLD);
                MPI_Recv(&in, 1, MPI_INT, prev, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&in, 1, MPI_INT, prev, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&out, 1, MPI_INT, next, i, MPI_COMM_WORLD);
            }
            if (in != 1000 * prev + i)
                errs++;
        }
    }
    long want = size > 1 ? rounds : 0;
    if (inits != 1 || sends != want || recvs != want)
        errs++;
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* The allreduce's own messages went by the library's MPI_Send. */
    if (sends != want || recvs != want || allreduces != 1)
        all++;
    if (all)
        fprintf(stderr, "rank %d: inits %ld sends %ld recvs %ld allreduces %ld errors %d\n", rank,
                inits, sends, recvs, allreduces, errs);
    else if (rank == 0)
        printf("pmpi: ok %d tasks\n", size);
    MPI_Finalize();
    return all != 0;
}
