/* Derived datatypes and user-defined operations; prints "dtype: ok N
 * tasks" on rank 0 when every check passed, exits 1 on the first
 * failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

struct particle {
    double x;
    int id;
    char tag;
};

static void queries(void) {
    MPI_Datatype v, s, r, d;
    MPI_Aint lb, ext;
    MPI_Count sz;
    int n, ni, na, nd, comb;
    MPI_Type_vector(3, 2, 4, MPI_INT, &v);
    MPI_Type_size(v, &n);
    CHECK(n == 24);
    MPI_Type_get_extent(v, &lb, &ext);
    CHECK(lb == 0 && ext == 40);
    MPI_Type_create_resized(v, -4, 64, &r);
    MPI_Type_get_extent(r, &lb, &ext);
    CHECK(lb == -4 && ext == 64);
    MPI_Type_get_true_extent(r, &lb, &ext);
    CHECK(lb == 0 && ext == 40);
    MPI_Type_size_x(r, &sz);
    CHECK(sz == 24);
    /* A struct's extent is padded like C's. */
    struct particle p[2];
    int bl[3] = {1, 1, 1};
    MPI_Aint base, disp[3];
    MPI_Datatype types[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
    MPI_Get_address(&p[0], &base);
    MPI_Get_address(&p[0].x, &disp[0]);
    MPI_Get_address(&p[0].id, &disp[1]);
    MPI_Get_address(&p[0].tag, &disp[2]);
    for (int i = 0; i < 3; i++) disp[i] = MPI_Aint_diff(disp[i], base);
    MPI_Type_create_struct(3, bl, disp, types, &s);
    MPI_Type_get_extent(s, &lb, &ext);
    CHECK(lb == 0 && ext == (MPI_Aint)sizeof(struct particle));
    MPI_Type_size(s, &n);
    CHECK(n == 13);
    CHECK(MPI_Aint_add(base, disp[1]) == base + disp[1] && MPI_Aint_diff(base + 8, base) == 8);
    /* Names and envelopes. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Type_get_name(MPI_INT, name, &len);
    CHECK(strcmp(name, "MPI_INT") == 0 && len == 7);
    MPI_Type_set_name(v, "pairs");
    MPI_Type_get_name(v, name, &len);
    CHECK(strcmp(name, "pairs") == 0);
    MPI_Type_get_envelope(v, &ni, &na, &nd, &comb);
    CHECK(ni == 3 && na == 0 && nd == 1 && comb == MPI_COMBINER_VECTOR);
    int ints[3];
    MPI_Aint aints[1];
    MPI_Datatype dts[1];
    MPI_Type_get_contents(v, 3, 0, 1, ints, aints, dts);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && dts[0] == MPI_INT);
    MPI_Type_get_envelope(MPI_DOUBLE, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_NAMED);
    MPI_Type_dup(s, &d);
    MPI_Type_get_envelope(d, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_DUP);
    /* An uncommitted type cannot be sent. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int buf[12] = {0};
    CHECK(MPI_Send(buf, 1, v, MPI_PROC_NULL, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE);
    CHECK(MPI_Type_commit(&v) == MPI_SUCCESS);
    CHECK(MPI_Send(buf, 1, v, MPI_PROC_NULL, 0, MPI_COMM_WORLD) == MPI_SUCCESS);
    MPI_Datatype pre = MPI_INT;
    CHECK(MPI_Type_free(&pre) == MPI_ERR_TYPE);
    CHECK(MPI_Type_commit(&pre) == MPI_SUCCESS);
    /* Bad constructor arguments are refused with a class, not a crash. */
    MPI_Datatype bad;
    CHECK(MPI_Type_contiguous(-1, MPI_INT, &bad) == MPI_ERR_COUNT);
    CHECK(MPI_Type_vector(2, 1, 1, (MPI_Datatype)0x7777, &bad) == MPI_ERR_TYPE);
    CHECK(MPI_Type_vector(1 << 30, 1, 2, MPI_INT, &bad) == MPI_ERR_NO_MEM);
    int dims[2] = {4, 4}, sub[2] = {2, 5}, st0[2] = {0, 0};
    CHECK(MPI_Type_create_subarray(2, dims, sub, st0, MPI_ORDER_C, MPI_INT, &bad) == MPI_ERR_ARG);
    sub[1] = 2;
    CHECK(MPI_Type_create_subarray(2, dims, sub, st0, 99, MPI_INT, &bad) == MPI_ERR_ARG);
    MPI_Aint far[2] = {0, (MPI_Aint)((~(size_t)0) >> 1) - 2};
    int one2[2] = {1, 1};
    CHECK(MPI_Type_create_hindexed(2, one2, far, MPI_INT, &bad) == MPI_ERR_COUNT);
    int pos = 0;
    char small[4];
    CHECK(MPI_Pack(buf, 2, MPI_INT, small, 4, &pos, MPI_COMM_WORLD) == MPI_ERR_TRUNCATE);
    pos = 9;
    CHECK(MPI_Pack(buf, 1, MPI_INT, small, 4, &pos, MPI_COMM_WORLD) == MPI_ERR_ARG);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Type_free(&v);
    CHECK(v == MPI_DATATYPE_NULL);
    MPI_Type_free(&r);
    MPI_Type_free(&s);
    MPI_Type_free(&d);
}

static void packing(void) {
    /* indexed, hindexed, indexed_block, hindexed_block, subarray in both
     * orders, through MPI_Pack. */
    int a[24], out[24], pos, i;
    for (i = 0; i < 24; i++) a[i] = i;
    MPI_Datatype t[6];
    int bl[3] = {2, 1, 3}, dp[3] = {10, 0, 4};
    MPI_Aint hd[3] = {40, 0, 16};
    MPI_Type_indexed(3, bl, dp, MPI_INT, &t[0]);
    MPI_Type_create_hindexed(3, bl, hd, MPI_INT, &t[1]);
    MPI_Type_create_indexed_block(3, 2, dp, MPI_INT, &t[2]);
    MPI_Type_create_hindexed_block(3, 2, hd, MPI_INT, &t[3]);
    int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t[4]);
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &t[5]);
    static const int want[6][6] = {
        {10, 11, 0, 4, 5, 6},  {10, 11, 0, 4, 5, 6}, {10, 11, 0, 1, 4, 5},
        {10, 11, 0, 1, 4, 5},  {8, 9, 10, 14, 15, 16},
        /* Fortran: 4 rows fastest, 6 columns: rows 1-2 of columns 2-4. */
        {9, 10, 13, 14, 17, 18}};
    for (int k = 0; k < 6; k++) {
        int n;
        MPI_Type_commit(&t[k]);
        MPI_Pack_size(1, t[k], MPI_COMM_WORLD, &n);
        CHECK(n >= 24);
        pos = 0;
        MPI_Pack(a, 1, t[k], out, (int)sizeof out, &pos, MPI_COMM_WORLD);
        CHECK(pos == 24);
        for (i = 0; i < 6; i++) CHECK(out[i] == want[k][i]);
        /* Back through MPI_Unpack into a cleared array. */
        int b[24];
        memset(b, -1, sizeof b);
        pos = 0;
        MPI_Unpack(out, 24, &pos, b, 1, t[k], MPI_COMM_WORLD);
        CHECK(pos == 24);
        for (i = 0; i < 6; i++) CHECK(b[want[k][i]] == want[k][i]);
        CHECK(b[k == 4 ? 7 : 23] == -1);
    }
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t[4], &lb, &ext);
    CHECK(lb == 0 && ext == 96);
    for (int k = 0; k < 6; k++) MPI_Type_free(&t[k]);
}

/* Every rank sends to the next and receives from the previous: strided
 * out, contiguous in, at sizes that go eagerly and by rendezvous. */
static void ring(void) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int counts[3] = {3, 1000, 100000};
    for (int c = 0; c < 3; c++) {
        int n = counts[c];
        int *src = malloc(sizeof(int) * 2 * (size_t)n);
        int *dst = malloc(sizeof(int) * (size_t)n);
        int *back = malloc(sizeof(int) * 2 * (size_t)n);
        for (int i = 0; i < 2 * n; i++) src[i] = (i % 2) ? -1 : rank * 1000000 + i / 2;
        MPI_Datatype every2;
        MPI_Type_vector(n, 1, 2, MPI_INT, &every2);
        MPI_Type_commit(&every2);
        MPI_Request rq[2];
        MPI_Status st;
        MPI_Irecv(dst, n, MPI_INT, prev, c, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(src, 1, every2, next, c, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        for (int i = 0; i < n; i++) CHECK(dst[i] == prev * 1000000 + i);
        /* Contiguous out, strided in (blocking). */
        for (int i = 0; i < 2 * n; i++) back[i] = -7;
        MPI_Sendrecv(dst, n, MPI_INT, prev, 10 + c, back, 1, every2, next, 10 + c, MPI_COMM_WORLD, &st);
        for (int i = 0; i < n; i++) CHECK(back[2 * i] == rank * 1000000 + i && back[2 * i + 1] == -7);
        int cnt, el;
        MPI_Get_count(&st, every2, &cnt);
        MPI_Get_elements(&st, every2, &el);
        CHECK(cnt == 1 && el == n);
        MPI_Type_free(&every2);
        free(src);
        free(dst);
        free(back);
    }
    /* Structs with padding, partial receive: Get_elements counts basic
     * elements. */
    struct particle p[3], q[3];
    MPI_Datatype pt;
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {0, 8, 12};
    MPI_Datatype types[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
    MPI_Type_create_struct(3, bl, disp, types, &pt);
    MPI_Type_commit(&pt);
    for (int i = 0; i < 3; i++) p[i] = (struct particle){rank + i * 0.5, rank * 10 + i, (char)('a' + i)};
    memset(q, 0, sizeof q);
    MPI_Status st;
    MPI_Sendrecv(p, 2, pt, next, 20, q, 3, pt, prev, 20, MPI_COMM_WORLD, &st);
    CHECK(q[1].x == prev + 0.5 && q[1].id == prev * 10 + 1 && q[1].tag == 'b' && q[2].id == 0);
    int cnt, el;
    MPI_Get_count(&st, pt, &cnt);
    MPI_Get_elements(&st, pt, &el);
    CHECK(cnt == 2 && el == 6);
    MPI_Type_free(&pt);
    /* MPI_PACKED on the wire. */
    char packed[64];
    int pos = 0, v[2] = {rank, -rank};
    double dv = rank * 2.5;
    MPI_Pack(v, 2, MPI_INT, packed, 64, &pos, MPI_COMM_WORLD);
    MPI_Pack(&dv, 1, MPI_DOUBLE, packed, 64, &pos, MPI_COMM_WORLD);
    char in[64];
    MPI_Sendrecv(packed, pos, MPI_PACKED, next, 21, in, 64, MPI_PACKED, prev, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int w[2];
    double dw;
    pos = 0;
    MPI_Unpack(in, 64, &pos, w, 2, MPI_INT, MPI_COMM_WORLD);
    MPI_Unpack(in, 64, &pos, &dw, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    CHECK(w[0] == prev && w[1] == -prev && dw == prev * 2.5);
}

/* A matrix of size x 4 doubles; a column is a resized vector, so
 * columns gather and scatter like elements. */
static void collectives(void) {
    int n = size, i, j;
    MPI_Datatype col, colr, three;
    MPI_Type_vector(n, 1, 4, MPI_DOUBLE, &col);
    MPI_Type_create_resized(col, 0, sizeof(double), &colr);
    MPI_Type_commit(&colr);
    MPI_Type_contiguous(3, MPI_DOUBLE, &three);
    MPI_Type_commit(&three);
    double *m = malloc(sizeof(double) * 4 * (size_t)n);
    double mine[64];
    /* Bcast of a column of the root's matrix. */
    for (i = 0; i < 4 * n; i++) m[i] = rank == 0 ? i : -1;
    MPI_Bcast(m + 1, 1, colr, 0, MPI_COMM_WORLD);
    for (i = 0; i < n; i++) CHECK(m[4 * i + 1] == 4 * i + 1 && m[4 * i] == (rank == 0 ? 4 * i : -1));
    /* Gather: task r's n values become column r (r < 4). */
    for (i = 0; i < n; i++) mine[i] = rank * 100 + i;
    if (n <= 4) {
        for (i = 0; i < 4 * n; i++) m[i] = -1;
        MPI_Gather(mine, n, MPI_DOUBLE, m, 1, colr, 0, MPI_COMM_WORLD);
        if (rank == 0)
            for (i = 0; i < n; i++)
                for (j = 0; j < 4; j++) CHECK(m[4 * i + j] == (j < n ? j * 100 + i : -1));
        /* Scatter back: column r to task r. */
        double got[64];
        MPI_Scatter(m, 1, colr, got, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        for (i = 0; i < n; i++) CHECK(got[i] == rank * 100 + i);
        /* Allgather into columns everywhere. */
        for (i = 0; i < 4 * n; i++) m[i] = -1;
        MPI_Allgather(mine, n, MPI_DOUBLE, m, 1, colr, MPI_COMM_WORLD);
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) CHECK(m[4 * i + j] == j * 100 + i);
        /* Alltoall of single columns: task r sends its column p to p. */
        double *a = malloc(sizeof(double) * 4 * (size_t)n), *b = malloc(sizeof(double) * 4 * (size_t)n);
        for (i = 0; i < 4 * n; i++) a[i] = rank * 1000 + i, b[i] = -1;
        MPI_Alltoall(a, 1, colr, b, 1, colr, MPI_COMM_WORLD);
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) CHECK(b[4 * i + j] == j * 1000 + 4 * i + rank);
        /* Allgatherv and Gatherv with the same columns. */
        int cnts[4], dsp[4];
        for (i = 0; i < n; i++) cnts[i] = 1, dsp[i] = n - 1 - i;
        for (i = 0; i < 4 * n; i++) b[i] = -1;
        MPI_Allgatherv(mine, n, MPI_DOUBLE, b, cnts, dsp, colr, MPI_COMM_WORLD);
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) CHECK(b[4 * i + (n - 1 - j)] == j * 100 + i);
        for (i = 0; i < 4 * n; i++) b[i] = -1;
        MPI_Alltoallv(a, cnts, dsp, colr, b, cnts, dsp, colr, MPI_COMM_WORLD);
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++)
                CHECK(b[4 * i + (n - 1 - j)] == j * 1000 + 4 * i + (n - 1 - rank));
        /* Gatherv and Scatterv of columns, in reverse order. */
        for (i = 0; i < 4 * n; i++) b[i] = -1;
        MPI_Gatherv(mine, n, MPI_DOUBLE, b, cnts, dsp, colr, 0, MPI_COMM_WORLD);
        if (rank == 0)
            for (i = 0; i < n; i++)
                for (j = 0; j < n; j++) CHECK(b[4 * i + (n - 1 - j)] == j * 100 + i);
        double back[64];
        MPI_Scatterv(b, cnts, dsp, colr, back, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        for (i = 0; i < n; i++) CHECK(back[i] == rank * 100 + i);
        free(a);
        free(b);
    }
    /* Alltoallw: task r sends p+1 ints to task p from byte 64 * p;
     * from an odd task it receives into every other int. */
    {
        MPI_Datatype gap;
        MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &gap);
        MPI_Type_commit(&gap);
        int sb[64], rbuf[64], sc[4], sd[4], rc[4], rd[4];
        MPI_Datatype st[4], rt[4];
        for (i = 0; i < 64; i++) sb[i] = rank * 1000 + i, rbuf[i] = -1;
        for (j = 0; j < n && n <= 4; j++) {
            sc[j] = j + 1, sd[j] = 64 * j, st[j] = MPI_INT;
            rc[j] = rank + 1, rd[j] = 64 * j, rt[j] = j % 2 ? gap : MPI_INT;
        }
        if (n <= 4) {
            MPI_Alltoallw(sb, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD);
            for (j = 0; j < n; j++)
                for (i = 0; i <= rank; i++) {
                    int at = 16 * j + (j % 2 ? 2 * i : i);
                    CHECK(rbuf[at] == j * 1000 + 16 * rank + i);
                    if (j % 2) CHECK(rbuf[at + 1] == -1);
                }
            MPI_Request w;
            for (i = 0; i < 64; i++) rbuf[i] = -1;
            MPI_Ialltoallw(sb, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD, &w);
            MPI_Wait(&w, MPI_STATUS_IGNORE);
            CHECK(rbuf[16 * (n - 1) + ((n - 1) % 2 ? 2 * rank : rank)] == (n - 1) * 1000 + 16 * rank + rank);
        }
        MPI_Type_free(&gap);
    }
    /* A large strided broadcast: rendezvous inside the tree. */
    {
        int big = 200000;
        MPI_Datatype every3;
        MPI_Type_vector(big, 1, 3, MPI_INT, &every3);
        MPI_Type_commit(&every3);
        int *x = malloc(sizeof(int) * 3 * (size_t)big);
        for (i = 0; i < 3 * big; i++) x[i] = rank == n - 1 ? i : -1;
        MPI_Bcast(x, 1, every3, n - 1, MPI_COMM_WORLD);
        for (i = 0; i < 3 * big; i++) CHECK(x[i] == (i % 3 == 0 || rank == n - 1 ? i : -1));
        free(x);
        MPI_Type_free(&every3);
    }
    /* Predefined operations on a type of one predefined type. */
    double v[6] = {rank, 1, 2 * rank, 3, 4, 5}, s[6];
    MPI_Allreduce(v, s, 2, three, MPI_SUM, MPI_COMM_WORLD);
    CHECK(s[0] == n * (n - 1) / 2.0 && s[1] == n && s[2] == n * (n - 1.0) && s[5] == 5.0 * n);
    for (int root = 0; root < n; root++) {
        double r[6] = {0};
        MPI_Reduce(v, r, 1, three, MPI_MAX, root, MPI_COMM_WORLD);
        if (rank == root) CHECK(r[0] == n - 1 && r[1] == 1 && r[2] == 2 * (n - 1) && r[3] == 0);
    }
    MPI_Scan(v, s, 1, three, MPI_SUM, MPI_COMM_WORLD);
    CHECK(s[0] == rank * (rank + 1) / 2.0 && s[1] == rank + 1);
    /* MPI_INT pairs as MPI_2INT-like: MINLOC on a contiguous of MPI_2INT. */
    MPI_Datatype two2;
    MPI_Type_contiguous(2, MPI_2INT, &two2);
    MPI_Type_commit(&two2);
    int pr[4] = {rank % 2, rank, 10 - rank, rank}, best[4];
    MPI_Allreduce(pr, best, 1, two2, MPI_MINLOC, MPI_COMM_WORLD);
    CHECK(best[0] == 0 && best[1] == 0 && best[2] == 10 - (n - 1) && best[3] == n - 1);
    MPI_Type_free(&two2);
    /* A mixed struct has no predefined operation. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype pt;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(2, bl, disp, types, &pt);
    MPI_Type_commit(&pt);
    struct { double d; int i; } x = {1, 2}, y;
    CHECK(MPI_Allreduce(&x, &y, 1, pt, MPI_SUM, MPI_COMM_WORLD) == MPI_ERR_OP);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Type_free(&pt);
    MPI_Type_free(&colr);
    MPI_Type_free(&col);
    MPI_Type_free(&three);
    free(m);
}

/* 2x2 integer matrices, multiplied: not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    long *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        long c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                     a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

static void mat_of(int r, long *m) {
    m[0] = r + 1, m[1] = 1, m[2] = 1, m[3] = 0;
}

static void product(int from, int to, long *out) {
    long p[4] = {1, 0, 0, 1}, m[4];
    for (int r = from; r < to; r++) {
        long q[4];
        mat_of(r, m);
        memcpy(q, m, sizeof q);
        int one = 1;
        matmul(p, q, &one, NULL);
        memcpy(p, q, sizeof p);
    }
    memcpy(out, p, sizeof p);
}

static int calls;
/* Sum of the first element of every vector block (the others untouched
 * and seen in the type's layout). */
static void strided_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int *a = in, *b = inout;
    calls++;
    MPI_Aint lb, ext;
    MPI_Type_get_extent(*dt, &lb, &ext);
    for (int k = 0; k < *len; k++) {
        int *x = (int *)((char *)a + k * ext), *y = (int *)((char *)b + k * ext);
        y[0] += x[0];
        y[2] += x[2];
    }
}

static void user_ops(void) {
    MPI_Op mm, ss;
    int comm;
    MPI_Op_create(matmul, 0, &mm);
    MPI_Op_commutative(mm, &comm);
    CHECK(comm == 0);
    MPI_Op_commutative(MPI_SUM, &comm);
    CHECK(comm == 1);
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_LONG, &mat);
    MPI_Type_commit(&mat);
    long mine[8], got[8], want[4];
    mat_of(rank, mine);
    mat_of(rank, mine + 4);
    for (int root = 0; root < size; root++) {
        memset(got, 0, sizeof got);
        MPI_Reduce(mine, got, 2, mat, mm, root, MPI_COMM_WORLD);
        if (rank == root) {
            product(0, size, want);
            CHECK(memcmp(got, want, sizeof want) == 0 && memcmp(got + 4, want, sizeof want) == 0);
        }
    }
    MPI_Allreduce(mine, got, 1, mat, mm, MPI_COMM_WORLD);
    product(0, size, want);
    CHECK(memcmp(got, want, sizeof want) == 0);
    MPI_Scan(mine, got, 1, mat, mm, MPI_COMM_WORLD);
    product(0, rank + 1, want);
    CHECK(memcmp(got, want, sizeof want) == 0);
    got[0] = -99;
    MPI_Exscan(mine, got, 1, mat, mm, MPI_COMM_WORLD);
    if (rank > 0) {
        product(0, rank, want);
        CHECK(memcmp(got, want, sizeof want) == 0);
    } else {
        CHECK(got[0] == -99);
    }
    long *all = malloc(sizeof(long) * 4 * (size_t)size), blk[4];
    for (int p = 0; p < size; p++) mat_of(rank + p, all + 4 * p);
    MPI_Reduce_scatter_block(all, blk, 1, mat, mm, MPI_COMM_WORLD);
    {
        long p[4] = {1, 0, 0, 1};
        for (int r = 0; r < size; r++) {
            long q[4];
            int one = 1;
            mat_of(r + rank, q);
            matmul(p, q, &one, NULL);
            memcpy(p, q, sizeof p);
        }
        CHECK(memcmp(blk, p, sizeof p) == 0);
    }
    int *cnts = malloc(sizeof(int) * (size_t)size);
    for (int p = 0; p < size; p++) cnts[p] = 1;
    MPI_Reduce_scatter(all, blk, cnts, mat, mm, MPI_COMM_WORLD);
    free(cnts);
    free(all);
    MPI_Op_free(&mm);
    CHECK(mm == MPI_OP_NULL);
    /* A commutative user operation on a strided type: the function sees
     * the type's own layout. */
    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_commit(&v);
    MPI_Op_create(strided_sum, 1, &ss);
    int a[4] = {rank, -5, 10 * rank, -6}, b[4] = {-1, -1, -1, -1};
    MPI_Allreduce(a, b, 1, v, ss, MPI_COMM_WORLD);
    CHECK(b[0] == size * (size - 1) / 2 && b[2] == 10 * size * (size - 1) / 2 && b[1] == -1 && b[3] == -1);
    /* Task 0 combines at least once whenever there are two tasks. */
    CHECK(size == 1 || rank != 0 || calls > 0);
    MPI_Op_free(&ss);
    MPI_Type_free(&v);
    MPI_Type_free(&mat);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    queries();
    packing();
    ring();
    collectives();
    user_ops();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("dtype: ok %d tasks\n", size);
    MPI_Finalize();
    return 0;
}
