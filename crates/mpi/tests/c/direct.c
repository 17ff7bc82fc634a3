/* Receives posted before their message, written straight into by the
 * sender (crates/mpi/src/engine/direct.rs), must keep MPI's matching:
 * ping-pongs, windows of receives, receives that overlap in what they
 * match (tags, MPI_ANY_TAG, small ones between large ones), messages
 * that pass their receive's notice on the way, cancels that race the
 * message, synchronous sends, truncation, and (3 tasks) MPI_ANY_SOURCE
 * receives before specific ones. Rank 0 (and 2) send, rank 1 receives.
 * Every byte is checked. Prints "direct: ok N tasks" on rank 0. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int rank, size;

static void pause_us(long us) {
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

/* Byte i of message `seed`. */
static unsigned char pat(int seed, size_t i) { return (unsigned char)(seed * 31 + i * 7 + (i >> 9)); }

static void fill(unsigned char *b, size_t n, int seed) {
    for (size_t i = 0; i < n; i++) b[i] = pat(seed, i);
}

static int same(const unsigned char *b, size_t n, int seed) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(seed, i)) return 0;
    return 1;
}

static void ready(int to) { MPI_Send(NULL, 0, MPI_BYTE, to, 999, MPI_COMM_WORLD); }
static void wait_ready(int from) {
    MPI_Recv(NULL, 0, MPI_BYTE, from, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void pingpong(unsigned char *buf) {
    static const size_t sizes[] = {20000, 65536, 100000, 1 << 20};
    for (int s = 0; s < 4; s++) {
        size_t n = sizes[s];
        for (int r = 0; r < 20; r++) {
            int seed = s * 100 + r;
            if (rank == 0) {
                fill(buf, n, seed);
                MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                memset(buf, 0, n);
                MPI_Recv(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(same(buf, n, seed + 1));
            } else if (rank == 1) {
                MPI_Status st;
                int count;
                memset(buf, 0, n);
                MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK(count == (int)n && st.MPI_SOURCE == 0 && st.MPI_TAG == 1);
                CHECK(same(buf, n, seed));
                fill(buf, n, seed + 1);
                MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
    }
}

/* A window of receives with one tag; message i shorter than the last. */
static void window(unsigned char *buf, int w, size_t cap, int tag) {
    MPI_Request rq[64];
    if (rank == 1) {
        memset(buf, 0, (size_t)w * cap);
        for (int i = 0; i < w; i++)
            MPI_Irecv(buf + (size_t)i * cap, (int)cap, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &rq[i]);
        ready(0);
        MPI_Status st[64];
        MPI_Waitall(w, rq, st);
        for (int i = 0; i < w; i++) {
            int count;
            MPI_Get_count(&st[i], MPI_BYTE, &count);
            CHECK(count == (int)(cap - (size_t)i * 100));
            CHECK(same(buf + (size_t)i * cap, cap - (size_t)i * 100, tag + i));
        }
    } else if (rank == 0) {
        wait_ready(1);
        for (int i = 0; i < w; i++) {
            size_t n = cap - (size_t)i * 100;
            fill(buf + (size_t)i * cap, n, tag + i);
            MPI_Isend(buf + (size_t)i * cap, (int)n, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &rq[i]);
        }
        MPI_Waitall(w, rq, MPI_STATUSES_IGNORE);
    }
}

/* Receives overlapping in what they match; `handshake`: the sender waits
 * until all are posted (else it races their notices). */
static void overlap(unsigned char *buf, int handshake, int round) {
    enum { CAP = 50000 };
    static const int tags[5] = {10, -1, 11, 11, 12};
    static const int caps[5] = {CAP, CAP, 100, CAP, CAP};
    /* Sent in this order: tag, length; and which receive takes it. */
    static const int mtag[5] = {11, 11, 11, 10, 12};
    static const int mlen[5] = {50, 80, 30000, 40000, 45000};
    static const int goes[5] = {1, 2, 3, 0, 4};
    if (rank == 1) {
        MPI_Request rq[5];
        MPI_Status st[5];
        memset(buf, 0, 5 * CAP);
        if (!handshake && round % 3 == 1) pause_us(200);
        for (int i = 0; i < 5; i++)
            MPI_Irecv(buf + i * CAP, caps[i], MPI_BYTE, 0, tags[i] < 0 ? MPI_ANY_TAG : tags[i],
                      MPI_COMM_WORLD, &rq[i]);
        if (handshake) ready(0);
        MPI_Waitall(5, rq, st);
        for (int m = 0; m < 5; m++) {
            int r = goes[m], count;
            MPI_Get_count(&st[r], MPI_BYTE, &count);
            CHECK(count == mlen[m] && st[r].MPI_TAG == mtag[m]);
            CHECK(same(buf + r * CAP, (size_t)mlen[m], 1000 + round * 5 + m));
        }
    } else if (rank == 0) {
        if (handshake) wait_ready(1);
        if (!handshake && round % 3 == 2) pause_us(200);
        for (int m = 0; m < 5; m++) {
            fill(buf + m * CAP, (size_t)mlen[m], 1000 + round * 5 + m);
            MPI_Send(buf + m * CAP, mlen[m], MPI_BYTE, 1, mtag[m], MPI_COMM_WORLD);
        }
    }
}

/* Cancels: one no message matches, one racing its message. */
static void cancels(unsigned char *buf, int round) {
    enum { CAP = 50000 };
    if (rank == 1) {
        MPI_Request rq;
        MPI_Status st;
        int flag;
        MPI_Irecv(buf, CAP, MPI_BYTE, 0, 20, MPI_COMM_WORLD, &rq);
        MPI_Cancel(&rq);
        MPI_Wait(&rq, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag);
        memset(buf, 0, CAP);
        MPI_Irecv(buf, CAP, MPI_BYTE, 0, 21, MPI_COMM_WORLD, &rq);
        ready(0);
        if (round % 2) pause_us(100);
        MPI_Cancel(&rq);
        MPI_Wait(&rq, &st);
        MPI_Test_cancelled(&st, &flag);
        if (flag) {
            /* Not lost: still there for the next receive. */
            MPI_Recv(buf, CAP, MPI_BYTE, 0, 21, MPI_COMM_WORLD, &st);
        }
        int count;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == 30000 && same(buf, 30000, 2000 + round));
    } else if (rank == 0) {
        wait_ready(1);
        fill(buf, 30000, 2000 + round);
        MPI_Send(buf, 30000, MPI_BYTE, 1, 21, MPI_COMM_WORLD);
    }
}

static void ssend_and_truncate(unsigned char *buf) {
    enum { CAP = 50000 };
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 1) {
        MPI_Request rq[2];
        MPI_Status st[2];
        MPI_Irecv(buf, CAP, MPI_BYTE, 0, 30, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(buf + CAP, 20000, MPI_BYTE, 0, 31, MPI_COMM_WORLD, &rq[1]);
        ready(0);
        int rc = MPI_Waitall(2, rq, st);
        CHECK(rc == MPI_ERR_IN_STATUS);
        CHECK(st[0].MPI_ERROR == MPI_SUCCESS && same(buf, 40000, 3000));
        int cls;
        MPI_Error_class(st[1].MPI_ERROR, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE);
    } else if (rank == 0) {
        wait_ready(1);
        fill(buf, 40000, 3000);
        CHECK(MPI_Ssend(buf, 40000, MPI_BYTE, 1, 30, MPI_COMM_WORLD) == MPI_SUCCESS);
        fill(buf, 30000, 3001);
        MPI_Send(buf, 30000, MPI_BYTE, 1, 31, MPI_COMM_WORLD);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* A stream the receiver takes with blocking receives, late and early. */
static void stream(unsigned char *buf) {
    enum { N = 200, LEN = 20000 };
    if (rank == 0) {
        for (int i = 0; i < N; i++) {
            fill(buf, LEN, 4000 + i);
            MPI_Send(buf, LEN, MPI_BYTE, 1, 60, MPI_COMM_WORLD);
        }
    } else if (rank == 1) {
        for (int i = 0; i < N; i++) {
            if (i % 7 == 3) pause_us(300);
            memset(buf, 0, LEN);
            MPI_Recv(buf, LEN, MPI_BYTE, 0, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(same(buf, LEN, 4000 + i));
        }
    }
}

/* 3 tasks: a receive from anyone before specific ones. */
static void any_source(unsigned char *buf) {
    enum { CAP = 50000 };
    if (rank == 1) {
        MPI_Request rq[3];
        MPI_Status st[3];
        MPI_Irecv(buf, CAP, MPI_BYTE, MPI_ANY_SOURCE, 50, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(buf + CAP, CAP, MPI_BYTE, 0, 50, MPI_COMM_WORLD, &rq[1]);
        MPI_Irecv(buf + 2 * CAP, CAP, MPI_BYTE, 2, 51, MPI_COMM_WORLD, &rq[2]);
        ready(0);
        ready(2);
        MPI_Waitall(3, rq, st);
        CHECK(st[0].MPI_SOURCE == 0 && same(buf, 30000, 5000));
        CHECK(st[1].MPI_SOURCE == 0 && same(buf + CAP, 31000, 5001));
        CHECK(st[2].MPI_SOURCE == 2 && same(buf + 2 * CAP, 32000, 5002));
    } else {
        wait_ready(1);
        if (rank == 0) {
            fill(buf, 30000, 5000);
            MPI_Send(buf, 30000, MPI_BYTE, 1, 50, MPI_COMM_WORLD);
            fill(buf, 31000, 5001);
            MPI_Send(buf, 31000, MPI_BYTE, 1, 50, MPI_COMM_WORLD);
        } else {
            fill(buf, 32000, 5002);
            MPI_Send(buf, 32000, MPI_BYTE, 1, 51, MPI_COMM_WORLD);
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    unsigned char *buf = malloc(64 * 40000 + (2 << 20));
    CHECK(buf != NULL);
    /* The windows first: their 84 receives are noticed before any
     * message is sent, and nothing has yet cost the notices' score
     * (the ping-pong's race and lose). */
    window(buf, 16, 40000, 100);
    window(buf, 4, 300000, 200);
    window(buf, 64, 16000, 300);
    MPI_Barrier(MPI_COMM_WORLD);
    pingpong(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < 30; r++) {
        overlap(buf, r % 2 == 0, r);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    for (int r = 0; r < 20; r++) cancels(buf, r);
    MPI_Barrier(MPI_COMM_WORLD);
    ssend_and_truncate(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    stream(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (size >= 3) any_source(buf);
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    if (rank == 0) printf("direct: ok %d tasks\n", size);
    MPI_Finalize();
    return 0;
}
