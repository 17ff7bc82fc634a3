/* Cartesian topologies: a balanced grid from Dims_create, coordinates and
 * ranks that agree, a halo exchange with Cart_shift (periodic in one
 * dimension, edges in the other), rows from Cart_sub, and the members
 * past the grid. Rank 0 prints "topo: ok N tasks" when every check
 * passed. */
#include <mpi.h>
#include <stdio.h>

static int errs;
#define CHECK_COUNTS
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int dims[2] = {0, 0}, periods[2] = {0, 1};
    CHECK(MPI_Dims_create(size, 2, dims) == MPI_SUCCESS);
    CHECK(dims[0] * dims[1] == size && dims[0] >= dims[1]);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    int status, nd, me, coords[2], d2[2], p2[2], c2[2], back;
    MPI_Topo_test(grid, &status);
    CHECK(status == MPI_CART);
    MPI_Topo_test(MPI_COMM_WORLD, &status);
    CHECK(status == MPI_UNDEFINED);
    MPI_Cartdim_get(grid, &nd);
    CHECK(nd == 2);
    MPI_Comm_rank(grid, &me);
    MPI_Cart_coords(grid, me, 2, coords);
    MPI_Cart_rank(grid, coords, &back);
    CHECK(back == me && me == coords[0] * dims[1] + coords[1]);
    MPI_Cart_get(grid, 2, d2, p2, c2);
    CHECK(d2[0] == dims[0] && d2[1] == dims[1] && p2[0] == 0 && p2[1] == 1);
    CHECK(c2[0] == coords[0] && c2[1] == coords[1]);

    /* Halo exchange along both dimensions. */
    for (int dir = 0; dir < 2; dir++) {
        int src, dst, got = -7;
        MPI_Cart_shift(grid, dir, 1, &src, &dst);
        MPI_Sendrecv(&me, 1, MPI_INT, dst, 5, &got, 1, MPI_INT, src, 5, grid, MPI_STATUS_IGNORE);
        if (src == MPI_PROC_NULL) {
            CHECK(dir == 0 && coords[0] == 0 && got == -7);
        } else {
            CHECK(got == src);
            int sc[2];
            MPI_Cart_coords(grid, src, 2, sc);
            if (dir == 0)
                CHECK(sc[0] == coords[0] - 1 && sc[1] == coords[1]);
            else
                CHECK(sc[0] == coords[0] && sc[1] == (coords[1] + dims[1] - 1) % dims[1]);
        }
    }

    /* Rows: keep dimension 1. */
    int keep[2] = {0, 1}, rsize, rrank, sum = 0;
    MPI_Comm row;
    MPI_Cart_sub(grid, keep, &row);
    MPI_Comm_size(row, &rsize);
    MPI_Comm_rank(row, &rrank);
    CHECK(rsize == dims[1] && rrank == coords[1]);
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, row);
    int first = coords[0] * dims[1];
    CHECK(sum == dims[1] * first + dims[1] * (dims[1] - 1) / 2);
    MPI_Comm_free(&row);
    MPI_Comm_free(&grid);

    /* A grid smaller than the job: the others get MPI_COMM_NULL. */
    int one[1] = {size > 1 ? size - 1 : 1}, per[1] = {1};
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, one, per, 0, &ring);
    CHECK((rank < one[0]) == (ring != MPI_COMM_NULL));
    if (ring != MPI_COMM_NULL)
        MPI_Comm_free(&ring);

    int total = 0;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf("topo: ok %d tasks\n", size);
        else
            printf("topo: %d errors\n", total);
    }
    MPI_Finalize();
    return 0;
}
