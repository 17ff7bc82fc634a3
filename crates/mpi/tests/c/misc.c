/* Small calls: Is_thread_main, Alloc_mem/Free_mem, Reduce_local with a
 * predefined and a user operation, the Fortran 90 kinds and
 * Type_match_size, statuses set by the program, Cart_map/Graph_map,
 * Pcontrol. Rank 0 prints
 * "misc: ok N tasks" when every check passed. */
#include <mpi.h>
#include <stdio.h>

static int errs, rank;
#define CHECK_COUNTS
#include "check.h"

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

    /* Statuses a program fills (generalized requests, layered libraries). */
    MPI_Status st;
    MPI_Datatype pair;
    int blens[2] = {1, 1}, cnt;
    MPI_Aint displs[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(2, blens, displs, types, &pair);
    MPI_Type_commit(&pair);
    CHECK(MPI_Status_set_elements(&st, pair, 5) == MPI_SUCCESS);
    MPI_Get_elements(&st, pair, &cnt);
    CHECK(cnt == 5);
    MPI_Get_count(&st, pair, &cnt);
    CHECK(cnt == MPI_UNDEFINED);
    MPI_Status_set_elements(&st, pair, 6);
    MPI_Get_count(&st, pair, &cnt);
    CHECK(cnt == 3);
    MPI_Count big;
    CHECK(MPI_Status_set_elements_x(&st, MPI_INT, (MPI_Count)3 << 32) == MPI_SUCCESS);
    MPI_Get_elements_x(&st, MPI_INT, &big);
    CHECK(big == (MPI_Count)3 << 32);
    CHECK(MPI_Status_set_elements(&st, MPI_INT, -1) == MPI_ERR_COUNT);
    MPI_Status_set_cancelled(&st, 1);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag);
    MPI_Status_set_cancelled(&st, 0);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag);
    MPI_Type_free(&pair);
    int v;
    MPI_Status_set_source(&st, 3);
    MPI_Status_set_tag(&st, 44);
    MPI_Status_set_error(&st, MPI_ERR_TAG);
    MPI_Status_get_source(&st, &v);
    CHECK(v == 3 && st.MPI_SOURCE == 3);
    MPI_Status_get_tag(&st, &v);
    CHECK(v == 44);
    MPI_Status_get_error(&st, &v);
    CHECK(v == MPI_ERR_TAG);

    /* Fortran types by class and size; topology maps without reordering. */
    MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t);
    CHECK(t == MPI_REAL8);
    MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &t);
    CHECK(t == MPI_INTEGER4);
    MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &t);
    CHECK(t == MPI_COMPLEX16);
    CHECK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 3, &t) == MPI_ERR_ARG);
    int dims[2] = {1, 1}, periods[2] = {0, 0}, nr;
    CHECK(MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &nr) == MPI_SUCCESS);
    CHECK(nr == (rank == 0 ? 0 : MPI_UNDEFINED));
    dims[0] = size;
    MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &nr);
    CHECK(nr == rank);
    dims[0] = size + 1;
    CHECK(MPI_Cart_map(MPI_COMM_WORLD, 2, dims, periods, &nr) == MPI_ERR_DIMS);
    int index[1] = {0}, edges[1] = {0};
    MPI_Graph_map(MPI_COMM_WORLD, 1, index, edges, &nr);
    CHECK(nr == (rank == 0 ? 0 : MPI_UNDEFINED));
    CHECK(MPI_Pcontrol(1) == MPI_SUCCESS && MPI_Pcontrol(0, "ignored") == MPI_SUCCESS);

    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("misc: ok %d tasks\n", size);
    MPI_Finalize();
    return all != 0;
}
