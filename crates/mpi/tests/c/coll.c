/* Collectives and communicators; prints "coll: ok N tasks" on rank 0
 * when every check passed, exits 1 on the first failure. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

static void reductions(MPI_Comm comm, int r, int n) {
    int i, root;
    for (root = 0; root < n; root++) {
        int v[3] = {r + 1, -r, r % 2}, out[3] = {0, 0, 0};
        MPI_Reduce(v, out, 3, MPI_INT, MPI_SUM, root, comm);
        if (r == root) CHECK(out[0] == n * (n + 1) / 2 && out[1] == -n * (n - 1) / 2);
        double d = r + 0.5, dm = 0;
        MPI_Reduce(&d, &dm, 1, MPI_DOUBLE, MPI_MAX, root, comm);
        if (r == root) CHECK(dm == n - 0.5);
        /* In place at the root. */
        long l = r;
        long lin = r;
        if (r == root)
            MPI_Reduce(MPI_IN_PLACE, &lin, 1, MPI_LONG, MPI_MIN, root, comm);
        else
            MPI_Reduce(&l, NULL, 1, MPI_LONG, MPI_MIN, root, comm);
        if (r == root) CHECK(lin == 0);
    }
    int64_t p = 2, prod = 0;
    MPI_Allreduce(&p, &prod, 1, MPI_INT64_T, MPI_PROD, comm);
    CHECK(prod == (int64_t)1 << n);
    unsigned b = 1u << r, bor = 0, band = 0;
    MPI_Allreduce(&b, &bor, 1, MPI_UNSIGNED, MPI_BOR, comm);
    CHECK(bor == (1u << n) - 1);
    MPI_Allreduce(&b, &band, 1, MPI_UNSIGNED, MPI_BAND, comm);
    CHECK(band == (n == 1 ? 1u : 0u));
    int t = (r == 0), land = -1, lor = -1;
    MPI_Allreduce(&t, &land, 1, MPI_INT, MPI_LAND, comm);
    MPI_Allreduce(&t, &lor, 1, MPI_INT, MPI_LOR, comm);
    CHECK(land == (n == 1) && lor == 1);
    float f[1000];
    for (i = 0; i < 1000; i++) f[i] = (float)(r * i);
    MPI_Allreduce(MPI_IN_PLACE, f, 1000, MPI_FLOAT, MPI_SUM, comm);
    for (i = 0; i < 1000; i++) CHECK(f[i] == (float)(i * n * (n - 1) / 2));
    struct { double v; int i; } in = {(double)(r % 2), r}, best;
    MPI_Allreduce(&in, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
    CHECK(best.v == (n > 1 ? 1.0 : 0.0) && best.i == (n > 1 ? 1 : 0));
    /* Large: rendezvous inside the tree. */
    size_t big = 300000;
    double *x = malloc(big * sizeof *x);
    for (i = 0; i < (int)big; i++) x[i] = 1.0;
    MPI_Allreduce(MPI_IN_PLACE, x, (int)big, MPI_DOUBLE, MPI_SUM, comm);
    CHECK(x[0] == n && x[big - 1] == n);
    free(x);
}

static void movement(MPI_Comm comm, int r, int n) {
    int i, root = n - 1;
    int buf[4] = {0, 0, 0, 0};
    if (r == root) buf[0] = 42, buf[3] = 7;
    MPI_Bcast(buf, 4, MPI_INT, root, comm);
    CHECK(buf[0] == 42 && buf[3] == 7);
    char *big = malloc(100000);
    memset(big, r == 0 ? 'x' : 0, 100000);
    MPI_Bcast(big, 100000, MPI_CHAR, 0, comm);
    CHECK(big[0] == 'x' && big[99999] == 'x');
    free(big);
    int *all = malloc(sizeof(int) * 2 * (size_t)n);
    int mine[2] = {r, r * r};
    MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, 0, comm);
    if (r == 0)
        for (i = 0; i < n; i++) CHECK(all[2 * i] == i && all[2 * i + 1] == i * i);
    /* Gather in place at the root. */
    if (r == 0) {
        for (i = 0; i < 2 * n; i++) all[i] = -1;
        all[0] = 0, all[1] = 0;
        MPI_Gather(MPI_IN_PLACE, 2, MPI_INT, all, 2, MPI_INT, 0, comm);
        for (i = 0; i < n; i++) CHECK(all[2 * i] == i);
    } else {
        MPI_Gather(mine, 2, MPI_INT, NULL, 0, MPI_INT, 0, comm);
    }
    if (r == 0)
        for (i = 0; i < 2 * n; i++) all[i] = 10 * i;
    int got[2] = {-1, -1};
    MPI_Scatter(all, 2, MPI_INT, got, 2, MPI_INT, 0, comm);
    CHECK(got[0] == 20 * r && got[1] == 20 * r + 10);
    for (i = 0; i < 2 * n; i++) all[i] = -1;
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, comm);
    for (i = 0; i < n; i++) CHECK(all[2 * i] == i && all[2 * i + 1] == i * i);
    for (i = 0; i < 2 * n; i++) all[i] = (i / 2 == r) ? r + 100 : -1;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_INT, comm);
    for (i = 0; i < n; i++) CHECK(all[2 * i] == i + 100);
    int *s = malloc(sizeof(int) * (size_t)n), *d = malloc(sizeof(int) * (size_t)n);
    for (i = 0; i < n; i++) s[i] = r * 100 + i;
    MPI_Alltoall(s, 1, MPI_INT, d, 1, MPI_INT, comm);
    for (i = 0; i < n; i++) CHECK(d[i] == i * 100 + r);
    MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INT, s, 1, MPI_INT, comm);
    for (i = 0; i < n; i++) CHECK(s[i] == i * 100 + r);
    free(s);
    free(d);
    free(all);
    MPI_Barrier(comm);
}

/* Task p contributes p + 1 ints of value p; blocks are laid out with a
 * gap of one int, which must stay untouched. */
static void vectors(MPI_Comm comm, int r, int n) {
    int i, p, total = 0;
    int *counts = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n);
    for (p = 0; p < n; p++) {
        counts[p] = p + 1;
        displs[p] = total;
        total += p + 2;
    }
    int *mine = malloc(sizeof(int) * (size_t)(r + 1)), *all = malloc(sizeof(int) * (size_t)total);
    for (i = 0; i <= r; i++) mine[i] = r;
    for (i = 0; i < total; i++) all[i] = -7;
    MPI_Allgatherv(mine, r + 1, MPI_INT, all, counts, displs, MPI_INT, comm);
    for (p = 0; p < n; p++) {
        for (i = 0; i < counts[p]; i++) CHECK(all[displs[p] + i] == p);
        CHECK(all[displs[p] + counts[p]] == -7);
    }
    for (i = 0; i < total; i++) all[i] = -7;
    MPI_Gatherv(mine, r + 1, MPI_INT, all, counts, displs, MPI_INT, n - 1, comm);
    if (r == n - 1)
        for (p = 0; p < n; p++) CHECK(all[displs[p]] == p && all[displs[p] + counts[p]] == -7);
    for (i = 0; i < total; i++) all[i] = 1000 + i;
    for (i = 0; i <= r; i++) mine[i] = -1;
    MPI_Scatterv(all, counts, displs, MPI_INT, mine, r + 1, MPI_INT, 0, comm);
    for (i = 0; i <= r; i++) CHECK(mine[i] == 1000 + displs[r] + i);
    /* Alltoallv: task r sends q+1 ints of value 100r+q to task q. */
    int *sc = malloc(sizeof(int) * (size_t)n), *sd = malloc(sizeof(int) * (size_t)n);
    int *rc = malloc(sizeof(int) * (size_t)n), *rd = malloc(sizeof(int) * (size_t)n);
    int st = 0, rt = 0;
    for (p = 0; p < n; p++) {
        sc[p] = p + 1, sd[p] = st, st += p + 1;
        rc[p] = r + 1, rd[p] = rt, rt += r + 1;
    }
    int *sb = malloc(sizeof(int) * (size_t)st), *rb = malloc(sizeof(int) * (size_t)rt);
    for (p = 0; p < n; p++)
        for (i = 0; i < sc[p]; i++) sb[sd[p] + i] = 100 * r + p;
    MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm);
    for (p = 0; p < n; p++)
        for (i = 0; i < rc[p]; i++) CHECK(rb[rd[p] + i] == 100 * p + r);
    /* Reduce-scatter: task p gets p + 1 sums. */
    int rtotal = n * (n + 1) / 2;
    int *rin = malloc(sizeof(int) * (size_t)rtotal), *rout = malloc(sizeof(int) * (size_t)(r + 1));
    for (i = 0; i < rtotal; i++) rin[i] = i + r;
    MPI_Reduce_scatter(rin, rout, counts, MPI_INT, MPI_SUM, comm);
    int first = r * (r + 1) / 2;
    for (i = 0; i <= r; i++) CHECK(rout[i] == n * (first + i) + n * (n - 1) / 2);
    int blk[2];
    MPI_Reduce_scatter_block(rin, blk, 1, MPI_INT, MPI_MAX, comm);
    CHECK(blk[0] == r + n - 1);
    /* Uneven blocks, the first empty: rank p gets 3 * p longs. */
    int *rc3 = malloc(sizeof(int) * (size_t)n), t3 = 0;
    for (i = 0; i < n; i++) rc3[i] = 3 * i, t3 += 3 * i;
    long *lin = malloc(sizeof(long) * (size_t)(t3 + 1)), lout[3 * 64 + 1];
    for (i = 0; i < t3; i++) lin[i] = (long)i * (r + 1);
    lout[3 * r] = -5;
    if (n <= 64) {
        MPI_Reduce_scatter(lin, lout, rc3, MPI_LONG, MPI_SUM, comm);
        int at = 3 * r * (r - 1) / 2;
        for (i = 0; i < 3 * r; i++) CHECK(lout[i] == (long)(at + i) * n * (n + 1) / 2);
        CHECK(lout[3 * r] == -5);
    }
    free(rc3), free(lin);
    free(rin), free(rout);
    /* Scans. */
    long v = r + 1, pre = -1;
    MPI_Scan(&v, &pre, 1, MPI_LONG, MPI_SUM, comm);
    CHECK(pre == (long)(r + 1) * (r + 2) / 2);
    pre = -1;
    MPI_Exscan(&v, &pre, 1, MPI_LONG, MPI_SUM, comm);
    CHECK(r == 0 ? pre == -1 : pre == (long)r * (r + 1) / 2);
    free(sc), free(sd), free(rc), free(rd), free(sb), free(rb);
    free(counts), free(displs), free(mine), free(all);
}

/* All-to-all of blocks too large to go eagerly (a rendezvous each,
 * received straight into the receive buffer): block q of task r holds
 * BIG ints of value 1000r+q+i. Alltoallv leaves a gap of one int after
 * every block, which must stay untouched; then in place. */
#define BIG 20000
static void big_exchange(MPI_Comm comm, int r, int n) {
    int i, p;
    size_t all = (size_t)n * BIG;
    int *s = malloc(sizeof(int) * all), *d = malloc(sizeof(int) * (all + (size_t)n));
    for (p = 0; p < n; p++)
        for (i = 0; i < BIG; i++) s[(size_t)p * BIG + i] = 1000 * r + p + i;
    MPI_Alltoall(s, BIG, MPI_INT, d, BIG, MPI_INT, comm);
    for (p = 0; p < n; p++)
        for (i = 0; i < BIG; i += 997) CHECK(d[(size_t)p * BIG + i] == 1000 * p + r + i);
    int *c = malloc(sizeof(int) * (size_t)n), *sd = malloc(sizeof(int) * (size_t)n);
    int *rd = malloc(sizeof(int) * (size_t)n);
    for (p = 0; p < n; p++) c[p] = BIG, sd[p] = p * BIG, rd[p] = p * (BIG + 1);
    for (i = 0; i < (int)all + n; i++) d[i] = -7;
    MPI_Alltoallv(s, c, sd, MPI_INT, d, c, rd, MPI_INT, comm);
    for (p = 0; p < n; p++) {
        CHECK(d[rd[p]] == 1000 * p + r && d[rd[p] + BIG - 1] == 1000 * p + r + BIG - 1);
        CHECK(d[rd[p] + BIG] == -7);
    }
    MPI_Alltoall(MPI_IN_PLACE, BIG, MPI_INT, s, BIG, MPI_INT, comm);
    for (p = 0; p < n; p++) CHECK(s[(size_t)p * BIG + 5] == 1000 * p + r + 5);
    free(s), free(d), free(c), free(sd), free(rd);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int k = 0; k < 20; k++) MPI_Barrier(MPI_COMM_WORLD);
    reductions(MPI_COMM_WORLD, rank, size);
    movement(MPI_COMM_WORLD, rank, size);
    vectors(MPI_COMM_WORLD, rank, size);
    big_exchange(MPI_COMM_WORLD, rank, size);
    vectors(MPI_COMM_SELF, 0, 1);
    reductions(MPI_COMM_SELF, 0, 1);
    movement(MPI_COMM_SELF, 0, 1);
    /* Dup: same ranks, separate traffic. */
    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int r2, n2, x = rank, y = -1;
    MPI_Comm_rank(dup, &r2);
    CHECK(r2 == rank);
    int cmp = 0;
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &cmp);
    CHECK(cmp == MPI_IDENT);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &cmp);
    CHECK(cmp == MPI_CONGRUENT);
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &cmp);
    CHECK(cmp == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL));
    MPI_Request rq;
    MPI_Irecv(&y, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq);
    MPI_Send(&x, 1, MPI_INT, (rank + 1) % size, 0, dup);
    int z = -1;
    MPI_Recv(&z, 1, MPI_INT, MPI_ANY_SOURCE, 0, dup, MPI_STATUS_IGNORE);
    CHECK(z == (rank + size - 1) % size);
    MPI_Send(&x, 1, MPI_INT, (rank + 1) % size, 3, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(y == z);
    reductions(dup, rank, size);
    /* Split by parity, ordered by descending world rank. */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    MPI_Comm_rank(half, &r2);
    MPI_Comm_size(half, &n2);
    CHECK(n2 == (size + 1 - rank % 2) / 2);
    CHECK(r2 == (n2 - 1) - rank / 2);
    reductions(half, r2, n2);
    movement(half, r2, n2);
    vectors(half, r2, n2);
    MPI_Comm none;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &none);
    CHECK((rank == 0) == (none != MPI_COMM_NULL));
    if (none != MPI_COMM_NULL) MPI_Comm_free(&none);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    CHECK(dup == MPI_COMM_NULL);
    /* Errors: bad root and op under MPI_ERRORS_RETURN. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD) == MPI_ERR_ROOT);
    CHECK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD) == MPI_ERR_OP);
    CHECK(MPI_Comm_free(&dup) == MPI_ERR_COMM);
    if (rank == 0) printf("coll: ok %d tasks\n", size);
    MPI_Finalize();
    return 0;
}
