/* Small calls: Is_thread_main, Alloc_mem/Free_mem, Reduce_local with a
 * predefined and a user operation, the Fortran 90 kinds. Rank 0 prints
 * "misc: ok N tasks" when every check passed. */
#include <mpi.h>
#include <stdio.h>

static int errs, rank;
#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "rank %d: check failed at line %d: %s\n", rank,   \
                    __LINE__, #c);                                             \
            errs++;                                                            \
        }                                                                      \
    } while (0)

static void minus(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] = ((int *)in)[i] - ((int *)inout)[i];
}

int main(int argc, char **argv)
{
    int size, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Is_thread_main(&flag);
    CHECK(flag);

    double *mem = NULL;
    MPI_Alloc_mem(1000 * sizeof(double), MPI_INFO_NULL, &mem);
    CHECK(mem != NULL);
    for (int i = 0; i < 1000; i++)
        mem[i] = i;
    MPI_Win win;
    MPI_Win_create(mem, 1000 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_free(&win);
    MPI_Free_mem(mem);
    CHECK(MPI_Alloc_mem(-1, MPI_INFO_NULL, &mem) == MPI_ERR_SIZE);

    int a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    MPI_Reduce_local(a, b, 3, MPI_INT, MPI_SUM);
    CHECK(b[0] == 11 && b[1] == 22 && b[2] == 33);
    MPI_Op op;
    MPI_Op_create(minus, 0, &op);
    MPI_Reduce_local(a, b, 3, MPI_INT, op);
    CHECK(b[0] == -10 && b[2] == -30);
    MPI_Op_free(&op);
    CHECK(MPI_Reduce_local(a, b, 3, MPI_INT, MPI_OP_NULL) == MPI_ERR_OP);

    MPI_Datatype t;
    int sz;
    MPI_Type_create_f90_real(6, MPI_UNDEFINED, &t);
    MPI_Type_size(t, &sz);
    CHECK(t == MPI_REAL4 && sz == 4);
    MPI_Type_create_f90_real(15, 300, &t);
    CHECK(t == MPI_REAL8);
    MPI_Type_create_f90_complex(15, MPI_UNDEFINED, &t);
    CHECK(t == MPI_COMPLEX16);
    MPI_Type_create_f90_integer(9, &t);
    CHECK(t == MPI_INTEGER4);
    CHECK(MPI_Type_create_f90_integer(40, &t) == MPI_ERR_ARG);
    double x = rank, y = 0;
    MPI_Type_create_f90_real(15, MPI_UNDEFINED, &t);
    MPI_Allreduce(&x, &y, 1, t, MPI_SUM, MPI_COMM_WORLD);
    CHECK(y == size * (size - 1) / 2);

    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("misc: ok %d tasks\n", size);
    MPI_Finalize();
    return all != 0;
}
