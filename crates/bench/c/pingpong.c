/* Open MPI baseline for `sss bench`: ping-pong round trip and streaming
 * bandwidth between ranks 0 and 1, the same shapes as the MBCF items.
 * Usage: pingpong ITERS WARMUP BW_BYTES BW_MAX_OPS RTT_SIZES BW_SIZES
 * (sizes comma-separated). Rank 0 prints "rtt SIZE USEC" and
 * "bw SIZE MBPS" lines. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXBUF (1 << 20)
/* Chunks of a round-trip item, as plan::CHUNKS in crates/bench. */
#define CHUNKS 5

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_sizes(const char *s, long *out, int max) {
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        out[n++] = atol(t);
    free(copy);
    return n;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 7 || size != 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 pingpong ITERS WARMUP BW_BYTES BW_MAX_OPS RTT_SIZES BW_SIZES\n");
        MPI_Finalize();
        return 2;
    }
    long iters = atol(argv[1]), warmup = atol(argv[2]);
    long bw_bytes = atol(argv[3]), bw_max = atol(argv[4]);
    long rtt[64], bw[64];
    int nrtt = parse_sizes(argv[5], rtt, 64), nbw = parse_sizes(argv[6], bw, 64);
    char *buf = calloc(MAXBUF, 1), *rbuf = calloc(MAXBUF, 1);
    int peer = 1 - rank;

    for (int k = 0; k < nrtt; k++) {
        int n = (int)rtt[k];
        MPI_Barrier(MPI_COMM_WORLD);
        /* As the bench's own items: CHUNKS chunks, the median chunk's mean. */
        long per = iters / CHUNKS > 0 ? iters / CHUNKS : 1;
        double means[CHUNKS];
        for (long c = -1; c < CHUNKS; c++) {
            long rounds = c < 0 ? warmup : per;
            double t0 = MPI_Wtime();
            for (long i = 0; i < rounds; i++) {
                if (rank == 0) {
                    MPI_Send(buf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rbuf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                }
            }
            if (c >= 0) means[c] = (MPI_Wtime() - t0) * 1e6 / per;
        }
        qsort(means, CHUNKS, sizeof means[0], cmp_double);
        if (rank == 0) printf("rtt %d %.4f\n", n, means[CHUNKS / 2]);
    }
    for (int k = 0; k < nbw; k++) {
        long n = bw[k] > MAXBUF ? MAXBUF : bw[k];
        long ops = bw_bytes / (n > 0 ? n : 1);
        if (ops < 16) ops = 16;
        if (ops > bw_max && bw_max >= 16) ops = bw_max;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        /* Stream, then one ack: the same shape as the TCP and MBCF items. */
        for (long i = 0; i < ops; i++) {
            if (rank == 0)
                MPI_Send(buf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
            else
                MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (rank == 0)
            MPI_Recv(rbuf, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(buf, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
        if (rank == 0) printf("bw %ld %.4f\n", n, (double)ops * n / (MPI_Wtime() - t0) / 1e6);
    }
    fflush(stdout);
    free(buf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
