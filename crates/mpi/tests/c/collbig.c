/* Collectives of large vectors (see tests/c_programs.rs): allreduce with
 * a predefined and a non-commutative user operation, reduce to every
 * root, broadcast from every root, gather, scatter and allgather (in
 * place too) and allgatherv of uneven blocks with gaps, each checked
 * element by element. Large enough to go by
 * rendezvous, on any number of tasks (recursive doubling on powers of
 * two, the other algorithms otherwise). Prints "collbig: ok N tasks" on
 * rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define N (96 * 1024) /* ints: 384 KiB */

static int rank, size;

/* (a, b) pairs compose as affine maps x -> a x + b: not commutative. */
static void affine(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        int a = x[2 * i] * y[2 * i], b = x[2 * i + 1] * y[2 * i] + y[2 * i + 1];
        y[2 * i] = a, y[2 * i + 1] = b;
    }
}

static int value(int r, int i) { return r * 1000003 + i; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *in = malloc(sizeof(int) * 2 * N), *out = malloc(sizeof(int) * 2 * N);
    int *all = malloc(sizeof(int) * (size_t)N * size);
    CHECK(in && out && all);

    for (int i = 0; i < N; i++) in[i] = value(rank, i);
    MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i += 7) {
        long long want = 0;
        for (int r = 0; r < size; r++) want += value(r, i);
        CHECK(out[i] == (int)want);
    }

    /* The composition of every task's map, in rank order. */
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op aff;
    MPI_Op_create(affine, 0, &aff);
    for (int i = 0; i < N; i++) in[2 * i] = (rank + i) % 5 + 1, in[2 * i + 1] = rank - i % 3;
    MPI_Allreduce(in, out, N, pair, aff, MPI_COMM_WORLD);
    for (int root = 0; root < size; root++) {
        int *red = malloc(sizeof(int) * 2 * N);
        MPI_Reduce(in, red, N, pair, aff, root, MPI_COMM_WORLD);
        for (int i = 0; i < N; i += 5) {
            int a = 1, b = 0;
            for (int r = 0; r < size; r++) {
                int ra = (r + i) % 5 + 1, rb = r - i % 3;
                b = ra * b + rb, a = ra * a; /* task r's map after the others' */
            }
            CHECK(out[2 * i] == a && out[2 * i + 1] == b);
            if (rank == root) CHECK(red[2 * i] == a && red[2 * i + 1] == b);
        }
        free(red);
    }

    for (int root = 0; root < size; root++) {
        for (int i = 0; i < N; i++) out[i] = rank == root ? value(root, i) : -1;
        MPI_Bcast(out, N, MPI_INT, root, MPI_COMM_WORLD);
        for (int i = 0; i < N; i += 3) CHECK(out[i] == value(root, i));
    }

    int chunk = N / 4;
    for (int i = 0; i < chunk; i++) in[i] = value(rank, i);
    memset(all, 0xff, sizeof(int) * (size_t)N * size);
    MPI_Gather(in, chunk, MPI_INT, all, chunk, MPI_INT, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < chunk; i += 3) CHECK(all[r * chunk + i] == value(r, i));
    for (int i = 0; i < chunk * size; i++) all[i] = value(i / chunk, i % chunk) + 1;
    MPI_Scatter(all, chunk, MPI_INT, out, chunk, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < chunk; i += 3) CHECK(out[i] == value(rank, i) + 1);

    memset(all, 0xff, sizeof(int) * (size_t)N * size);
    MPI_Allgather(in, chunk, MPI_INT, all, chunk, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < chunk; i += 3) CHECK(all[r * chunk + i] == value(r, i));
    memset(all, 0xff, sizeof(int) * (size_t)N * size);
    for (int i = 0; i < chunk; i++) all[rank * chunk + i] = value(rank, i) + 2;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, chunk, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < chunk; i += 3) CHECK(all[r * chunk + i] == value(r, i) + 2);

    /* Allgatherv: uneven blocks with gaps between them (left as they
     * were), task 1's block empty. */
    {
        int *cnt = malloc(sizeof(int) * size), *dsp = malloc(sizeof(int) * size), at = 0;
        CHECK(cnt && dsp);
        for (int r = 0; r < size; r++) {
            cnt[r] = r == 1 ? 0 : chunk / (r + 1);
            dsp[r] = at + 3;
            at += cnt[r] + 3;
        }
        CHECK(at <= N * size);
        for (int i = 0; i < at; i++) all[i] = -7;
        for (int i = 0; i < cnt[rank]; i++) in[i] = value(rank, i) + 3;
        MPI_Allgatherv(in, cnt[rank], MPI_INT, all, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < cnt[r]; i += 3) CHECK(all[dsp[r] + i] == value(r, i) + 3);
            for (int g = 1; g <= 3; g++) CHECK(all[dsp[r] - g] == -7);
        }
        free(cnt), free(dsp);
    }

    MPI_Op_free(&aff);
    MPI_Type_free(&pair);
    free(in), free(out), free(all);
    MPI_Finalize();
    if (rank == 0) printf("collbig: ok %d tasks\n", size);
    return 0;
}
