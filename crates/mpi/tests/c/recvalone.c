/* MPI_Recv posted without a request (the library's place for a blocking
 * receive posted alone) keeps MPI's semantics: order, wildcards, probe,
 * truncation, synchronous and rendezvous senders, non-contiguous types,
 * receives posted before it on the same or another communicator.
 *
 * argv[1]:
 *   "counts"   ranks 0 and 1: 0 sends ten messages (tag 1) and one more
 *              (tag 2); 1 probes for the last, so all eleven are here,
 *              then receives them in order. SSS_STATS=json then counts,
 *              on task 1, 11 blocking receives in 11 looks and no
 *              request on either task (tests/stats.rs).
 *   "pingpong" ranks 0 and 1: 1000 round trips of MPI_Send/MPI_Recv, no
 *              request on either task.
 *   "exchange" ranks 0 and 1: 1000 MPI_Sendrecv of 8 bytes each way, then
 *              one of 1 and 100000 bytes (a rendezvous: requests), one
 *              with MPI_PROC_NULL both ways, 1000 MPI_Sendrecv_replace
 *              of 8 bytes and one of a strided type: none but the
 *              rendezvous one makes a request. Then 1000 MPI_Allreduce
 *              of one long between the two: one request each (the
 *              receive), none for the send.
 *   otherwise  the semantics, on 2 or more tasks (ranks past 1 idle).
 * Prints "recvalone: ok <mode>" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define BIG 100000 /* above the eager size: a rendezvous */

static int rank, size;

static void counts(void) {
    long v;
    MPI_Status st;
    if (rank == 0) {
        for (long i = 0; i < 10; i++) MPI_Send(&i, 1, MPI_LONG, 1, 1, MPI_COMM_WORLD);
        v = 99;
        MPI_Send(&v, 1, MPI_LONG, 1, 2, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Probe(0, 2, MPI_COMM_WORLD, &st);
        for (long i = 0; i < 10; i++) {
            MPI_Recv(&v, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD, &st);
            CHECK(v == i && st.MPI_SOURCE == 0 && st.MPI_TAG == 1);
        }
        MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        CHECK(v == 99 && st.MPI_SOURCE == 0 && st.MPI_TAG == 2);
    }
}

static void pingpong(void) {
    char b[8] = {0};
    for (int i = 0; i < 1000; i++) {
        if (rank == 0) {
            b[0] = (char)i;
            MPI_Send(b, 8, MPI_CHAR, 1, 5, MPI_COMM_WORLD);
            MPI_Recv(b, 8, MPI_CHAR, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(b[0] == (char)(i + 1));
        } else if (rank == 1) {
            MPI_Recv(b, 8, MPI_CHAR, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(b[0] == (char)i);
            b[0]++;
            MPI_Send(b, 8, MPI_CHAR, 0, 5, MPI_COMM_WORLD);
        }
    }
}

static void exchange(void) {
    long mine, got;
    MPI_Status st;
    int other = 1 - rank;
    for (long i = 0; i < 1000; i++) {
        mine = rank * 1000000 + i;
        MPI_Sendrecv(&mine, 1, MPI_LONG, other, 7, &got, 1, MPI_LONG, other, 7, MPI_COMM_WORLD, &st);
        CHECK(got == other * 1000000 + i && st.MPI_SOURCE == other && st.MPI_TAG == 7);
    }
    static char big[BIG];
    char one = (char)rank;
    memset(big, 0, BIG);
    if (rank == 0)
        MPI_Sendrecv(&one, 1, MPI_CHAR, 1, 8, big, BIG, MPI_CHAR, 1, 8, MPI_COMM_WORLD, &st);
    else {
        memset(big, 'x', BIG);
        MPI_Sendrecv(big, BIG, MPI_CHAR, 0, 8, &one, 1, MPI_CHAR, 0, 8, MPI_COMM_WORLD, &st);
    }
    int n;
    MPI_Get_count(&st, MPI_CHAR, &n);
    CHECK(rank == 0 ? n == BIG && big[0] == 'x' && big[BIG - 1] == 'x' : n == 1 && one == 0);
    MPI_Sendrecv(&mine, 1, MPI_LONG, MPI_PROC_NULL, 9, &got, 1, MPI_LONG, MPI_PROC_NULL, 9, MPI_COMM_WORLD,
                 &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL);
    for (long i = 0; i < 1000; i++) {
        long v = rank * 1000000 + i;
        MPI_Sendrecv_replace(&v, 1, MPI_LONG, other, 10, other, 10, MPI_COMM_WORLD, &st);
        CHECK(v == other * 1000000 + i && st.MPI_SOURCE == other && st.MPI_TAG == 10);
    }
    int sv[4] = {rank, -1, rank + 10, -1};
    MPI_Datatype every2;
    MPI_Type_vector(2, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    MPI_Sendrecv_replace(sv, 1, every2, other, 11, other, 11, MPI_COMM_WORLD, &st);
    CHECK(sv[0] == other && sv[2] == other + 10 && sv[1] == -1 && sv[3] == -1);
    MPI_Type_free(&every2);
    MPI_Comm two;
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &two);
    for (long i = 0; i < 1000; i++) {
        mine = i + rank;
        MPI_Allreduce(&mine, &got, 1, MPI_LONG, MPI_SUM, two);
        CHECK(got == 2 * i + 1);
    }
    MPI_Comm_free(&two);
}

/* Rank 1 tells rank 0 it is about to block in a receive. */
static void go(void) { MPI_Send(NULL, 0, MPI_CHAR, 0, 100, MPI_COMM_WORLD); }
static void wait_go(void) {
    MPI_Recv(NULL, 0, MPI_CHAR, 1, 100, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void semantics(void) {
    MPI_Status st;
    int n, v[4];
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static char big[BIG], big2[BIG];
    if (rank == 0) {
        /* 1. Non-overtaking, wildcards, a probe between. */
        wait_go();
        for (int i = 0; i < 20; i++) MPI_Send(&i, 1, MPI_INT, 1, i % 3, MPI_COMM_WORLD);
        /* 2. Truncation, posted first and unexpected. */
        wait_go();
        int t[4] = {1, 2, 3, 4};
        MPI_Send(t, 4, MPI_INT, 1, 7, MPI_COMM_WORLD);
        MPI_Send(t, 4, MPI_INT, 1, 8, MPI_COMM_WORLD);
        /* 3. A synchronous send into a blocking receive. */
        wait_go();
        MPI_Ssend(t, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
        /* 4. A rendezvous into a blocking receive, then one unexpected. */
        memset(big, 3, BIG);
        wait_go();
        MPI_Send(big, BIG, MPI_CHAR, 1, 10, MPI_COMM_WORLD);
        memset(big, 4, BIG);
        MPI_Send(big, BIG, MPI_CHAR, 1, 11, MPI_COMM_WORLD);
        /* 5. Irecv posted first on the same communicator takes the first
         * message; one on another communicator does not change the order. */
        wait_go();
        for (int i = 0; i < 2; i++) MPI_Send(&i, 1, MPI_INT, 1, 12, MPI_COMM_WORLD);
        n = 50;
        MPI_Send(&n, 1, MPI_INT, 1, 13, MPI_COMM_WORLD);
        n = 60;
        MPI_Send(&n, 1, MPI_INT, 1, 13, dup);
        /* 6. A non-contiguous receive type. */
        int w[6] = {10, 11, 12, 13, 14, 15};
        wait_go();
        MPI_Send(w, 3, MPI_INT, 1, 14, MPI_COMM_WORLD);
        /* 7. A zero-byte message. */
        MPI_Send(NULL, 0, MPI_INT, 1, 15, MPI_COMM_WORLD);
    } else if (rank == 1) {
        /* 1 */
        go();
        int got;
        for (int i = 0; i < 20; i++) {
            int tag = i < 10 ? i % 3 : MPI_ANY_TAG;
            if (i == 12) {
                MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                CHECK(st.MPI_SOURCE == 0);
            }
            MPI_Recv(&got, 1, MPI_INT, i % 2 ? MPI_ANY_SOURCE : 0, tag, MPI_COMM_WORLD, &st);
            /* One sender's messages match in the order sent: the first
             * ten by tag, the rest in any tag's order. */
            CHECK(got == i && st.MPI_SOURCE == 0 && st.MPI_TAG == i % 3);
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(n == 1);
        }
        /* 2 */
        go();
        v[0] = v[1] = -1;
        int rc = MPI_Recv(v, 2, MPI_INT, 0, 7, MPI_COMM_WORLD, &st);
        CHECK(rc == MPI_ERR_TRUNCATE);
        CHECK(v[0] == 1 && v[1] == 2);
        MPI_Probe(0, 8, MPI_COMM_WORLD, &st);
        rc = MPI_Recv(v, 3, MPI_INT, 0, 8, MPI_COMM_WORLD, &st);
        CHECK(rc == MPI_ERR_TRUNCATE && v[2] == 3);
        /* 3 */
        go();
        MPI_Recv(v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, &st);
        CHECK(v[0] == 1);
        /* 4 */
        go();
        MPI_Recv(big2, BIG, MPI_CHAR, 0, 10, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_CHAR, &n);
        CHECK(n == BIG && big2[0] == 3 && big2[BIG - 1] == 3 && st.MPI_TAG == 10);
        MPI_Probe(0, 11, MPI_COMM_WORLD, &st);
        MPI_Recv(big2, BIG, MPI_CHAR, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &st);
        CHECK(big2[0] == 4 && big2[BIG - 1] == 4 && st.MPI_SOURCE == 0);
        /* 5 */
        MPI_Request r[2];
        int a = -1, b = -1;
        MPI_Irecv(&a, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(&b, 1, MPI_INT, 0, 13, dup, &r[1]);
        go();
        MPI_Recv(&got, 1, MPI_INT, 0, 12, MPI_COMM_WORLD, &st);
        CHECK(got == 1);
        MPI_Recv(&got, 1, MPI_INT, 0, 13, MPI_COMM_WORLD, &st);
        CHECK(got == 50);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        CHECK(a == 0 && b == 60);
        /* 6 */
        int w[6] = {0};
        MPI_Datatype every_other;
        MPI_Type_vector(3, 1, 2, MPI_INT, &every_other);
        MPI_Type_commit(&every_other);
        go();
        MPI_Recv(w, 1, every_other, 0, 14, MPI_COMM_WORLD, &st);
        CHECK(w[0] == 10 && w[1] == 0 && w[2] == 11 && w[3] == 0 && w[4] == 12);
        MPI_Type_free(&every_other);
        /* 7 */
        MPI_Recv(NULL, 0, MPI_INT, 0, 15, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(n == 0 && st.MPI_TAG == 15);
    }
    /* MPI_PROC_NULL. */
    v[0] = 5;
    CHECK(MPI_Recv(v, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && n == 0 && v[0] == 5);
    /* Bad arguments fail with their class, and the next receive works. */
    CHECK(MPI_Recv(v, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &st) == MPI_ERR_RANK);
    CHECK(MPI_Recv(v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &st) == MPI_ERR_TAG);
    CHECK(MPI_Recv(v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &st) == MPI_ERR_COUNT);
    CHECK(MPI_Recv(NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &st) == MPI_ERR_BUFFER);
    MPI_Comm_free(&dup);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "semantics";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    if (strcmp(mode, "counts") == 0)
        counts();
    else if (strcmp(mode, "pingpong") == 0)
        pingpong();
    else if (strcmp(mode, "exchange") == 0) {
        if (rank < 2) exchange();
        else {
            MPI_Comm none;
            MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, rank, &none);
        }
    }
    else
        semantics();
    if (rank == 0) printf("recvalone: ok %s\n", mode);
    MPI_Finalize();
    return 0;
}
