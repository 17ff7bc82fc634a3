/* Groups and communicators made from them; prints "group: ok N tasks"
 * on rank 0 when every check passed, exits 1 on the first failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static int rank, size;

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Group world, evens, odds, rev, u, in, d, g;
    int n, r, cmp, i;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_size(world, &n);
    MPI_Group_rank(world, &r);
    CHECK(n == size && r == rank);
    /* Evens by range, odds by exclusion. */
    int range[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(world, 1, range, &evens);
    MPI_Group_range_excl(world, 1, range, &odds);
    MPI_Group_size(evens, &n);
    CHECK(n == (size + 1) / 2);
    MPI_Group_rank(odds, &r);
    CHECK(r == (rank % 2 ? rank / 2 : MPI_UNDEFINED));
    /* Reversed by incl; translate ranks. */
    int *ranks = malloc(sizeof(int) * (size_t)size), *out = malloc(sizeof(int) * (size_t)size);
    for (i = 0; i < size; i++) ranks[i] = size - 1 - i;
    MPI_Group_incl(world, size, ranks, &rev);
    MPI_Group_translate_ranks(rev, size, ranks, world, out);
    for (i = 0; i < size; i++) CHECK(out[i] == i);
    int pn[2] = {0, MPI_PROC_NULL}, po[2];
    MPI_Group_translate_ranks(world, 2 > size ? 1 : 2, pn, odds, po);
    CHECK(po[0] == MPI_UNDEFINED);
    if (size > 1) CHECK(po[1] == MPI_PROC_NULL);
    MPI_Group_compare(world, rev, &cmp);
    CHECK(cmp == (size == 1 ? MPI_IDENT : MPI_SIMILAR));
    MPI_Group_compare(world, world, &cmp);
    CHECK(cmp == MPI_IDENT);
    /* Set operations. */
    MPI_Group_union(odds, evens, &u);
    MPI_Group_size(u, &n);
    CHECK(n == size);
    MPI_Group_compare(u, world, &cmp);
    /* Odds first, then evens: the same members in another order. */
    CHECK(cmp == (size == 1 ? MPI_IDENT : MPI_SIMILAR));
    MPI_Group_intersection(odds, evens, &in);
    CHECK(in == MPI_GROUP_EMPTY);
    MPI_Group_difference(world, odds, &d);
    MPI_Group_compare(d, evens, &cmp);
    CHECK(cmp == MPI_IDENT);
    MPI_Group_size(MPI_GROUP_EMPTY, &n);
    CHECK(n == 0);
    MPI_Group_excl(world, 1, ranks, &g);
    MPI_Group_size(g, &n);
    CHECK(n == size - 1);
    MPI_Group_free(&g);
    CHECK(g == MPI_GROUP_NULL);
    /* Errors are reported. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int bad[2] = {0, 0};
    CHECK(MPI_Group_incl(world, 2, bad, &g) == MPI_ERR_RANK);
    bad[0] = size;
    CHECK(MPI_Group_incl(world, 1, bad, &g) == MPI_ERR_RANK);
    CHECK(MPI_Group_size((MPI_Group)0x12345, &n) == MPI_ERR_GROUP);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    /* Comm_create: everybody calls, the evens get a communicator. */
    MPI_Comm ce, cr, cg;
    MPI_Comm_create(MPI_COMM_WORLD, evens, &ce);
    if (rank % 2) {
        CHECK(ce == MPI_COMM_NULL);
    } else {
        int er, es, sum = 0;
        MPI_Comm_rank(ce, &er);
        MPI_Comm_size(ce, &es);
        CHECK(er == rank / 2 && es == (size + 1) / 2);
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, ce);
        int want = 0;
        for (i = 0; i < size; i += 2) want += i;
        CHECK(sum == want);
        MPI_Comm_free(&ce);
    }
    /* Reversed order: ranks follow the group. */
    MPI_Comm_create(MPI_COMM_WORLD, rev, &cr);
    MPI_Comm_rank(cr, &r);
    CHECK(r == size - 1 - rank);
    int v = rank, got = -1;
    MPI_Bcast(rank == size - 1 ? &v : &got, 1, MPI_INT, 0, cr);
    CHECK((rank == size - 1 ? v : got) == size - 1);
    MPI_Comm_free(&cr);
    /* Comm_create_group: only the odds call it. */
    if (rank % 2) {
        MPI_Comm_create_group(MPI_COMM_WORLD, odds, 7, &cg);
        int s = 0, one = 1;
        MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, cg);
        CHECK(s == size / 2);
        MPI_Comm_rank(cg, &r);
        CHECK(r == rank / 2);
        MPI_Comm_free(&cg);
    }
    /* The empty group gives MPI_COMM_NULL everywhere. */
    MPI_Comm ne;
    MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &ne);
    CHECK(ne == MPI_COMM_NULL);
    MPI_Group_free(&evens);
    MPI_Group_free(&odds);
    MPI_Group_free(&rev);
    MPI_Group_free(&u);
    MPI_Group_free(&d);
    MPI_Group_free(&world);
    free(ranks);
    free(out);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("group: ok %d tasks\n", size);
    MPI_Finalize();
    return 0;
}
