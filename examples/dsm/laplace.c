/*
 * Jacobi relaxation of the Laplace equation on an N x N grid of doubles
 * (the SCASH-MPI laplace benchmark): the top edge is held at 1.0, the
 * other edges at 0.0, and every interior point becomes the mean of its
 * four neighbours, for ITERS sweeps between two arrays.
 *
 *   laplace [N [ITERS]]          on the shared heap, rows split by task
 *   laplace [N [ITERS]] --seq    the same sweeps in private memory
 *
 * Prints one line from rank 0: the grid, the tasks, a checksum of the
 * final grid's bits (FNV-1a) and the time of the sweeps. The DSM run
 * must print the checksum of the sequential run, bit for bit: every
 * point is computed by the same expression in the same order.
 *
 * Rows are dealt to tasks in whole pages, so under the invalidate
 * protocol every page has one writer. Both grids are placed by block
 * (each task is home of the rows it computes), or as LAPLACE_PLACEMENT
 * says: block, first_touch, cyclic (one page a task in turn) or rank0. Stores are followed by
 * sss_dsm_note_write() for the row unless writes are trapped.
 */
#define _POSIX_C_SOURCE 200809L
#include <sss.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void init_grid(double *g, size_t n) {
    for (size_t j = 0; j < n; j++) {
        g[j] = 1.0;
    }
}

static void sweep_row(const double *src, double *dst, size_t n, size_t i) {
    for (size_t j = 1; j + 1 < n; j++) {
        dst[i * n + j] = 0.25 * (src[(i - 1) * n + j] + src[(i + 1) * n + j] +
                                 src[i * n + j - 1] + src[i * n + j + 1]);
    }
}

static uint64_t checksum(const double *g, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < n * n; k++) {
        uint64_t bits;
        memcpy(&bits, &g[k], sizeof bits);
        for (int b = 0; b < 8; b++) {
            h ^= (bits >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    }
    return h;
}

#define CHECK(call)                                                        \
    do {                                                                   \
        sss_status_t st_ = (call);                                         \
        if (st_ != SSS_OK) {                                               \
            fprintf(stderr, "%s: %s (%s)\n", #call, sss_status_string(st_), \
                    sss_last_error());                                     \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

static int run_seq(size_t n, int iters) {
    double *a = calloc(n * n, sizeof *a), *b = calloc(n * n, sizeof *b);
    if (a == NULL || b == NULL) {
        return 1;
    }
    /* Touched before the clock, as every task touches its rows below. */
    memset(a, 0, n * n * sizeof *a);
    memset(b, 0, n * n * sizeof *b);
    init_grid(a, n);
    init_grid(b, n);
    double t0 = now();
    for (int it = 0; it < iters; it++) {
        for (size_t i = 1; i + 1 < n; i++) {
            sweep_row(a, b, n, i);
        }
        double *t = a;
        a = b;
        b = t;
    }
    double t1 = now();
    printf("LAPLACE n=%zu iters=%d tasks=seq checksum=%016llx time=%.6f\n", n,
           iters, (unsigned long long)checksum(a, n), t1 - t0);
    free(a);
    free(b);
    return 0;
}

int main(int argc, char **argv) {
    size_t n = 1024;
    int iters = 50, seq = 0, pos = 0;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--seq") == 0) {
            seq = 1;
        } else if (pos++ == 0) {
            n = (size_t)strtoul(argv[k], NULL, 10);
        } else {
            iters = atoi(argv[k]);
        }
    }
    if (n < 3 || iters < 0) {
        fprintf(stderr, "usage: laplace [N>=3 [ITERS]] [--seq]\n");
        return 2;
    }
    if (seq) {
        return run_seq(n, iters);
    }
    sss_task_h task;
    sss_dsm_h dsm;
    CHECK(sss_init(&task));
    CHECK(sss_dsm_init(task, SSS_DSM_PROTOCOL_ENV, SSS_DSM_WRITES_ENV, &dsm));
    uint32_t me = sss_task_rank(task), np = sss_task_size(task);
    int trap = sss_dsm_is_trap(dsm);
    size_t bytes = n * n * sizeof(double);
    sss_dsm_placement_t place = SSS_DSM_BLOCK;
    uint32_t param = 0;
    const char *pl = getenv("LAPLACE_PLACEMENT");
    if (pl == NULL || strcmp(pl, "block") == 0) {
        place = SSS_DSM_BLOCK;
    } else if (strcmp(pl, "first_touch") == 0) {
        place = SSS_DSM_FIRST_TOUCH;
    } else if (strcmp(pl, "cyclic") == 0) {
        place = SSS_DSM_CYCLIC;
        param = 1;
    } else if (strcmp(pl, "rank0") == 0) {
        place = SSS_DSM_EXPLICIT;
    } else {
        fprintf(stderr, "LAPLACE_PLACEMENT: block, first_touch, cyclic or rank0\n");
        return 2;
    }
    double *a, *b;
    CHECK(sss_dsm_malloc_all(dsm, bytes, place, param, (void **)&a));
    CHECK(sss_dsm_malloc_all(dsm, bytes, place, param, (void **)&b));
    /* Rows in units of whole pages (or one row when a row spans pages). */
    size_t row_bytes = n * sizeof(double);
    size_t unit = row_bytes >= 4096 ? 1 : 4096 / row_bytes;
    size_t units = (n + unit - 1) / unit;
    size_t lo = (units * me / np) * unit, hi = (units * (me + 1) / np) * unit;
    if (hi > n) {
        hi = n;
    }
    /* Each task first touches its own rows of both grids before the clock
     * (the home's pages are populated then, and first_touch places them),
     * as a program for a NUMA machine or another DSM would. */
    if (hi > lo) {
        memset(&a[lo * n], 0, (hi - lo) * row_bytes);
        memset(&b[lo * n], 0, (hi - lo) * row_bytes);
        if (!trap) {
            CHECK(sss_dsm_note_write(dsm, &a[lo * n], (hi - lo) * row_bytes));
            CHECK(sss_dsm_note_write(dsm, &b[lo * n], (hi - lo) * row_bytes));
        }
    }
    if (me == 0) {
        init_grid(a, n);
        init_grid(b, n);
        if (!trap) {
            CHECK(sss_dsm_note_write(dsm, a, row_bytes));
            CHECK(sss_dsm_note_write(dsm, b, row_bytes));
        }
    }
    CHECK(sss_dsm_barrier(dsm));
    double t0 = now();
    for (int it = 0; it < iters; it++) {
        for (size_t i = lo < 1 ? 1 : lo; i < hi && i + 1 < n; i++) {
            sweep_row(a, b, n, i);
            if (!trap) {
                CHECK(sss_dsm_note_write(dsm, &b[i * n + 1],
                                         (n - 2) * sizeof(double)));
            }
        }
        CHECK(sss_dsm_barrier(dsm));
        double *t = a;
        a = b;
        b = t;
    }
    double t1 = now();
    if (me == 0) {
        printf("LAPLACE n=%zu iters=%d tasks=%u checksum=%016llx time=%.6f\n",
               n, iters, np, (unsigned long long)checksum(a, n), t1 - t0);
        fflush(stdout);
    }
    CHECK(sss_dsm_finalize(dsm));
    CHECK(sss_finalize(task));
    return 0;
}
