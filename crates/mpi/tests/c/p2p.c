/* Point-to-point and environment checks; prints "p2p: ok N tasks" on
 * rank 0 when every check passed, exits 1 on the first failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int rank, size;

static void ordering_and_wildcards(void) {
    /* Every rank sends 20 tagged messages to rank 0; rank 0 receives them
     * with wildcards and checks per-sender order. */
    int i, v;
    MPI_Status st;
    if (rank != 0) {
        for (i = 0; i < 20; i++) {
            v = rank * 1000 + i;
            MPI_Send(&v, 1, MPI_INT, 0, i % 3, MPI_COMM_WORLD);
        }
        return;
    }
    int *next = calloc((size_t)size, sizeof(int));
    for (i = 0; i < 20 * (size - 1); i++) {
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < size);
        CHECK(v == st.MPI_SOURCE * 1000 + next[st.MPI_SOURCE]);
        CHECK(st.MPI_TAG == next[st.MPI_SOURCE] % 3);
        next[st.MPI_SOURCE]++;
    }
    free(next);
}

static void tag_selection(void) {
    /* Tag 2 received before tag 1 although sent after it. */
    int a = 11, b = 22, x = 0, y = 0;
    if (size < 2 || rank > 1) return;
    if (rank == 1) {
        MPI_Send(&a, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        MPI_Send(&b, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    } else {
        MPI_Status st;
        MPI_Recv(&y, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, &st);
        MPI_Recv(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &st);
        CHECK(x == 11 && y == 22);
    }
}

static void sizes(void) {
    /* Eager and rendezvous sizes, nonblocking both ways, with a ring. */
    static const int lens[] = {0, 1, 8191, 8192, 8193, 65536, 1 << 20, 3 << 20};
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    size_t k, j;
    for (k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        int n = lens[k];
        unsigned char *s = malloc((size_t)n + 1), *r = malloc((size_t)n + 1);
        for (j = 0; j < (size_t)n; j++) s[j] = (unsigned char)(j * 7 + rank);
        MPI_Request rq[2];
        MPI_Status st[2];
        MPI_Irecv(r, n, MPI_BYTE, from, 5, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(s, n, MPI_BYTE, to, 5, MPI_COMM_WORLD, &rq[1]);
        CHECK(MPI_Waitall(2, rq, st) == MPI_SUCCESS);
        CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL);
        int cnt = -1;
        MPI_Get_count(&st[0], MPI_BYTE, &cnt);
        CHECK(cnt == n && st[0].MPI_SOURCE == from && st[0].MPI_TAG == 5);
        for (j = 0; j < (size_t)n; j++) CHECK(r[j] == (unsigned char)(j * 7 + from));
        free(s);
        free(r);
    }
}

static void ssend_probe_sendrecv(void) {
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    double d[3] = {rank, rank + 0.5, -1}, e[3];
    MPI_Status st;
    int flag = 0, cnt = 0;
    /* Sendrecv around the ring. */
    MPI_Sendrecv(d, 3, MPI_DOUBLE, to, 9, e, 3, MPI_DOUBLE, from, 9, MPI_COMM_WORLD, &st);
    CHECK(e[0] == from && e[1] == from + 0.5 && st.MPI_SOURCE == from);
    /* Ssend to the next (nonblocking receive posted first), probe. */
    MPI_Request rq;
    MPI_Irecv(e, 3, MPI_DOUBLE, from, 10, MPI_COMM_WORLD, &rq);
    if (size > 1) {
        MPI_Ssend(d, 3, MPI_DOUBLE, to, 10, MPI_COMM_WORLD);
    } else {
        MPI_Send(d, 3, MPI_DOUBLE, to, 10, MPI_COMM_WORLD);
    }
    MPI_Wait(&rq, &st);
    CHECK(e[2] == -1 && st.MPI_TAG == 10);
    MPI_Send(d, 2, MPI_DOUBLE, to, 11, MPI_COMM_WORLD);
    MPI_Probe(from, 11, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_DOUBLE, &cnt);
    CHECK(cnt == 2);
    MPI_Get_count(&st, MPI_INT64_T, &cnt);
    CHECK(cnt == 2);
    MPI_Get_count(&st, MPI_C_LONG_DOUBLE_COMPLEX, &cnt);
    CHECK(cnt == MPI_UNDEFINED);
    MPI_Iprobe(from, 11, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag == 1);
    MPI_Recv(e, 3, MPI_DOUBLE, from, 11, MPI_COMM_WORLD, &st);
    MPI_Iprobe(from, 11, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    CHECK(flag == 0);
    /* Test and Waitany. */
    MPI_Request two[2];
    int x = rank, y = -1, idx = -1;
    MPI_Irecv(&y, 1, MPI_INT, from, 12, MPI_COMM_WORLD, &two[0]);
    two[1] = MPI_REQUEST_NULL;
    MPI_Send(&x, 1, MPI_INT, to, 12, MPI_COMM_WORLD);
    MPI_Waitany(2, two, &idx, &st);
    CHECK(idx == 0 && y == from && two[0] == MPI_REQUEST_NULL);
    MPI_Waitany(2, two, &idx, &st);
    CHECK(idx == MPI_UNDEFINED);
    MPI_Irecv(&y, 1, MPI_INT, from, 13, MPI_COMM_WORLD, &rq);
    MPI_Send(&x, 1, MPI_INT, to, 13, MPI_COMM_WORLD);
    do {
        MPI_Test(&rq, &flag, &st);
    } while (!flag);
    CHECK(rq == MPI_REQUEST_NULL && y == from);
    /* A freed send still arrives; a freed receive still fills its buffer. */
    int fz = -1;
    MPI_Isend(&x, 1, MPI_INT, to, 14, MPI_COMM_WORLD, &rq);
    MPI_Request_free(&rq);
    CHECK(rq == MPI_REQUEST_NULL);
    MPI_Recv(&y, 1, MPI_INT, from, 14, MPI_COMM_WORLD, &st);
    CHECK(y == from);
    MPI_Irecv(&fz, 1, MPI_INT, from, 15, MPI_COMM_WORLD, &rq);
    MPI_Request_free(&rq);
    MPI_Send(&x, 1, MPI_INT, to, 15, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    while (fz != from) MPI_Iprobe(from, 15, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    /* Attributes. */
    int *ub = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    CHECK(flag == 1 && ub != NULL && *ub >= 32767);
    int *usize = NULL;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);
    CHECK(flag == 1 && *usize == size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, 12345, &ub, &flag);
    CHECK(flag == 0);
    /* PROC_NULL. */
    MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
    MPI_Recv(&y, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL);
    /* Cancel an unmatched receive. */
    MPI_Irecv(&y, 1, MPI_INT, from, 99, MPI_COMM_WORLD, &rq);
    MPI_Cancel(&rq);
    MPI_Wait(&rq, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag == 1);
}

/* Messages around every protocol's limits (eager, a receiver's ring over
 * udp, rendezvous), more than a ring holds at once, first unexpected,
 * then into receives posted first, then synchronous: each arrives whole
 * and in its sender's order. */
#define MIX 24
static const int mix[] = {100,   8000,  9000,  20000, 65536, 65537,
                          30000, 8192,  16384, 64000, 1,     70000};
#define NMIX ((int)(sizeof mix / sizeof mix[0]))
static unsigned char pattern(int from, int i, int k) {
    return (unsigned char)(from * 31 + i * 7 + k * 13);
}
static void check_one(unsigned char *b, MPI_Status *st, int from, int i, int round) {
    int len = mix[i % NMIX], got, k;
    MPI_Get_count(st, MPI_BYTE, &got);
    CHECK(got == len && st->MPI_TAG == 50 + i % 4 && st->MPI_SOURCE == from);
    for (k = 0; k < len; k++) CHECK(b[k] == pattern(from, i + round, k));
}
static void mid_sizes(void) {
    int i, k, from, senders = size - 1;
    unsigned char *buf = malloc((size_t)MIX * (size_t)(senders + 1) * 70000);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)MIX * (size_t)(senders + 1));
    MPI_Status st;
#define AT(f, i) (buf + ((size_t)(f) * MIX + (size_t)(i)) * 70000)
    for (int round = 0; round < 3; round++) {
        if (rank != 0) {
            /* Round 1: rank 0 posted its receives before the barrier. */
            if (round == 1) MPI_Barrier(MPI_COMM_WORLD);
            for (i = 0; i < MIX; i++) {
                int len = mix[i % NMIX];
                for (k = 0; k < len; k++) AT(0, i)[k] = pattern(rank, i + round, k);
                if (round == 2)
                    MPI_Issend(AT(0, i), len, MPI_BYTE, 0, 50 + i % 4, MPI_COMM_WORLD, &rq[i]);
                else
                    MPI_Isend(AT(0, i), len, MPI_BYTE, 0, 50 + i % 4, MPI_COMM_WORLD, &rq[i]);
            }
            /* Round 0: rank 0 receives only after everything was sent. */
            if (round == 0) MPI_Barrier(MPI_COMM_WORLD);
            MPI_Waitall(MIX, rq, MPI_STATUSES_IGNORE);
            continue;
        }
        if (round == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            for (from = 1; from < size; from++)
                for (i = 0; i < MIX; i++) {
                    int got;
                    MPI_Probe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                    MPI_Get_count(&st, MPI_BYTE, &got);
                    CHECK(got == mix[i % NMIX] && st.MPI_TAG == 50 + i % 4);
                    MPI_Recv(AT(from, i), mix[i % NMIX], MPI_BYTE, from, st.MPI_TAG,
                             MPI_COMM_WORLD, &st);
                    check_one(AT(from, i), &st, from, i, 0);
                }
            continue;
        }
        for (from = 1; from < size; from++)
            for (i = 0; i < MIX; i++)
                MPI_Irecv(AT(from, i), 70000, MPI_BYTE, from, MPI_ANY_TAG, MPI_COMM_WORLD,
                          &rq[from * MIX + i]);
        if (round == 1) MPI_Barrier(MPI_COMM_WORLD);
        for (from = 1; from < size; from++)
            for (i = 0; i < MIX; i++) {
                MPI_Wait(&rq[from * MIX + i], &st);
                check_one(AT(from, i), &st, from, i, round);
            }
    }
#undef AT
    free(rq);
    free(buf);
}

static void errors(void) {
    int x = 1, y[2], rc, len, cls;
    char msg[MPI_MAX_ERROR_STRING];
    MPI_Status st;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_RANK);
    rc = MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TAG);
    rc = MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_COUNT);
    rc = MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TYPE);
    rc = MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
    CHECK(rc == MPI_ERR_COMM);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM);
    MPI_Error_string(MPI_ERR_TRUNCATE, msg, &len);
    CHECK(len > 0 && strstr(msg, "truncated") != NULL);
    /* Truncation: 2 ints into a buffer of 1. */
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    y[0] = y[1] = 7;
    MPI_Request rq;
    MPI_Irecv(y, 1, MPI_INT, from, 20, MPI_COMM_WORLD, &rq);
    int two[2] = {5, 6};
    MPI_Send(two, 2, MPI_INT, to, 20, MPI_COMM_WORLD);
    rc = MPI_Wait(&rq, &st);
    CHECK(rc == MPI_ERR_TRUNCATE && y[0] == 5 && y[1] == 7);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    int provided = -1, flag = 0, v, sv, len;
    char name[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Initialized(&flag);
    if (flag) return 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Initialized(&flag);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(flag == 1 && provided == MPI_THREAD_MULTIPLE);
    MPI_Get_version(&v, &sv);
    CHECK(v == 3 && sv == 1);
    MPI_Get_processor_name(name, &len);
    CHECK(len > 0 && (int)strlen(name) == len);
    MPI_Get_library_version(lib, &len);
    CHECK(strstr(lib, "MBCF") != NULL);
    double t0 = MPI_Wtime();
    CHECK(MPI_Wtick() > 0 && MPI_Wtime() >= t0);
    int r1, s1;
    MPI_Comm_rank(MPI_COMM_SELF, &r1);
    MPI_Comm_size(MPI_COMM_SELF, &s1);
    CHECK(r1 == 0 && s1 == 1);
    ordering_and_wildcards();
    /* Nothing of the next tests may match the wildcards above. */
    MPI_Barrier(MPI_COMM_WORLD);
    tag_selection();
    sizes();
    ssend_probe_sendrecv();
    MPI_Barrier(MPI_COMM_WORLD);
    mid_sizes();
    errors();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("p2p: ok %d tasks\n", size);
    MPI_Finalize();
    MPI_Finalized(&flag);
    CHECK(flag == 1);
    return 0;
}
