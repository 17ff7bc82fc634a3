/* Graph topologies: a ring as MPI_Graph_create (dims, get, neighbours,
 * Topo_test), a member past the graph; distributed graphs made
 * adjacent (weighted) and from edges (unweighted); neighbourhood
 * allgather and alltoall on the ring, the distributed graph and a
 * Cartesian grid. Rank 0 prints "graph: ok N tasks" when every check
 * passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs, rank;
#define CHECK_COUNTS
#include "check.h"

int main(int argc, char **argv)
{
    int size, status, n, e;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* A ring of all tasks: node i's neighbours are i-1 and i+1. */
    int *index = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 2 * size);
    for (int i = 0; i < size; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + size - 1) % size;
        edges[2 * i + 1] = (i + 1) % size;
    }
    MPI_Comm ring;
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &ring);
    MPI_Topo_test(ring, &status);
    CHECK(status == MPI_GRAPH);
    MPI_Graphdims_get(ring, &n, &e);
    CHECK(n == size && e == 2 * size);
    int *ix2 = malloc(sizeof(int) * size), *ed2 = malloc(sizeof(int) * 2 * size);
    MPI_Graph_get(ring, size, 2 * size, ix2, ed2);
    for (int i = 0; i < size; i++)
        CHECK(ix2[i] == index[i] && ed2[2 * i] == edges[2 * i]);
    int cnt, nb[2];
    MPI_Graph_neighbors_count(ring, rank, &cnt);
    CHECK(cnt == 2);
    MPI_Graph_neighbors(ring, rank, 2, nb);
    CHECK(nb[0] == (rank + size - 1) % size && nb[1] == (rank + 1) % size);
    CHECK(MPI_Graph_neighbors_count(ring, size, &cnt) == MPI_ERR_RANK);
    CHECK(MPI_Graphdims_get(MPI_COMM_WORLD, &n, &e) == MPI_ERR_TOPOLOGY);
    int got[2] = {-1, -1};
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, ring);
    CHECK(got[0] == nb[0] && got[1] == nb[1]);
    int sendv[2] = {rank * 10, rank * 10 + 1};
    MPI_Neighbor_alltoall(sendv, 1, MPI_INT, got, 1, MPI_INT, ring);
    /* From the left neighbour its block 1 (to its right), from the right
     * its block 0; with one or two tasks both edges join the same pair and
     * match in order. */
    if (size > 2)
        CHECK(got[0] == nb[0] * 10 + 1 && got[1] == nb[1] * 10);
    else
        CHECK(got[0] == nb[0] * 10 && got[1] == nb[0] * 10 + 1);
    MPI_Comm_free(&ring);

    /* A graph smaller than the job. */
    if (size > 1) {
        int ix[1] = {0};
        MPI_Comm small;
        MPI_Graph_create(MPI_COMM_WORLD, 1, ix, NULL, 0, &small);
        CHECK((rank == 0) == (small != MPI_COMM_NULL));
        if (small != MPI_COMM_NULL)
            MPI_Comm_free(&small);
    }
    edges[0] = size; /* out of range */
    CHECK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &ring) == MPI_ERR_RANK);

    /* Distributed graph, adjacent and weighted: i receives from i-1, sends to i+1 and i+2. */
    int src[1] = {(rank + size - 1) % size}, sw[1] = {5};
    int dst[2] = {(rank + 1) % size, (rank + 2) % size}, dw[2] = {6, 7};
    MPI_Comm dg;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, sw, 2, dst, dw, MPI_INFO_NULL, 0, &dg);
    MPI_Topo_test(dg, &status);
    CHECK(status == MPI_DIST_GRAPH);
    int indeg, outdeg, weighted;
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 2 && weighted);
    int s2[1], sw2[1], d2[2], dw2[2];
    MPI_Dist_graph_neighbors(dg, 1, s2, sw2, 2, d2, dw2);
    CHECK(s2[0] == src[0] && sw2[0] == 5 && d2[1] == dst[1] && dw2[1] == 7);
    MPI_Comm_free(&dg);

    /* The same ring from edges, unweighted: task 0 gives every edge i -> i+1. */
    int *srcs = malloc(sizeof(int) * size), *degs = malloc(sizeof(int) * size),
        *dsts = malloc(sizeof(int) * size);
    int ne = rank == 0 ? size : 0;
    for (int i = 0; i < size; i++) {
        srcs[i] = i;
        degs[i] = 1;
        dsts[i] = (i + 1) % size;
    }
    MPI_Dist_graph_create(MPI_COMM_WORLD, ne, srcs, degs, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && !weighted);
    MPI_Dist_graph_neighbors(dg, 1, s2, MPI_UNWEIGHTED, 1, d2, MPI_UNWEIGHTED);
    CHECK(s2[0] == (rank + size - 1) % size && d2[0] == (rank + 1) % size);
    int one = -1;
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, &one, 1, MPI_INT, dg);
    CHECK(one == s2[0]);
    MPI_Comm_free(&dg);

    /* Neighbourhood collectives on a 1-D non-periodic grid. */
    int dims[1] = {size}, periods[1] = {0};
    MPI_Comm line;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &line);
    got[0] = got[1] = -7;
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, line);
    CHECK(got[0] == (rank > 0 ? rank - 1 : -7));
    CHECK(got[1] == (rank < size - 1 ? rank + 1 : -7));
    MPI_Comm_free(&line);
    CHECK(MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD) == MPI_ERR_TOPOLOGY);

    free(index);
    free(edges);
    free(ix2);
    free(ed2);
    free(srcs);
    free(degs);
    free(dsts);
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("graph: ok %d tasks\n", size);
    MPI_Finalize();
    return all != 0;
}
