/* Buffered, ready, persistent and matched-probe point-to-point, the
 * some/any completion calls; prints "p2pmore: ok N tasks" on rank 0
 * when every check passed, exits 1 on the first failure. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

#define BIG 50000

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, i;
    MPI_Status st;

    /* Buffered sends: both return before the receive is posted; a
     * message beyond what is left of the attached buffer is refused (a
     * message to oneself is delivered at once and frees its space). */
    int bufsize = 2 * (BIG * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *att = malloc((size_t)bufsize);
    MPI_Buffer_attach(att, bufsize);
    int *big = malloc(sizeof(int) * (BIG + 200)), *got = malloc(sizeof(int) * BIG);
    for (i = 0; i < BIG; i++) big[i] = rank * BIG + i;
    MPI_Request r;
    MPI_Bsend(big, BIG, MPI_INT, next, 1, MPI_COMM_WORLD);
    MPI_Ibsend(big, 10, MPI_INT, next, 2, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size > 1) CHECK(MPI_Bsend(big, BIG + 200, MPI_INT, next, 3, MPI_COMM_WORLD) == MPI_ERR_BUFFER);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    /* Nobody receives before every task has checked: a receive of the
     * first message frees its space in the sender's buffer. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Recv(got, 10, MPI_INT, prev, 2, MPI_COMM_WORLD, &st);
    CHECK(got[9] == prev * BIG + 9);
    MPI_Recv(got, BIG, MPI_INT, prev, 1, MPI_COMM_WORLD, &st);
    CHECK(got[0] == prev * BIG && got[BIG - 1] == prev * BIG + BIG - 1);
    void *back;
    int backsize;
    MPI_Buffer_detach(&back, &backsize);
    CHECK(back == att && backsize == bufsize);
    free(att);

    /* Ready sends after a barrier that orders them behind the receive. */
    MPI_Irecv(got, 4, MPI_INT, prev, 4, MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Rsend(big, 4, MPI_INT, next, 4, MPI_COMM_WORLD);
    MPI_Wait(&r, &st);
    CHECK(got[3] == prev * BIG + 3);
    MPI_Request rr;
    MPI_Irecv(got, BIG, MPI_INT, prev, 5, MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Irsend(big, BIG, MPI_INT, next, 5, MPI_COMM_WORLD, &rr);
    MPI_Wait(&rr, MPI_STATUS_IGNORE);
    MPI_Wait(&r, &st);
    CHECK(got[BIG - 1] == prev * BIG + BIG - 1);

    /* Persistent requests, reused with new data each round; the
     * handles stay valid and inactive after completion. */
    int sv[3], rv[3];
    MPI_Request pr[4];
    MPI_Send_init(sv, 3, MPI_INT, next, 6, MPI_COMM_WORLD, &pr[0]);
    MPI_Recv_init(rv, 3, MPI_INT, prev, 6, MPI_COMM_WORLD, &pr[1]);
    MPI_Ssend_init(big, BIG, MPI_INT, next, 7, MPI_COMM_WORLD, &pr[2]);
    MPI_Recv_init(got, BIG, MPI_INT, prev, 7, MPI_COMM_WORLD, &pr[3]);
    for (int round = 0; round < 3; round++) {
        for (i = 0; i < 3; i++) sv[i] = rank * 100 + round * 10 + i;
        big[0] = round;
        MPI_Startall(4, pr);
        MPI_Waitall(4, pr, MPI_STATUSES_IGNORE);
        for (i = 0; i < 3; i++) CHECK(rv[i] == prev * 100 + round * 10 + i);
        CHECK(got[0] == round && got[1] == prev * BIG + 1);
        CHECK(pr[0] != MPI_REQUEST_NULL);
    }
    /* Waiting on an inactive persistent request returns at once. */
    MPI_Wait(&pr[0], &st);
    CHECK(pr[0] != MPI_REQUEST_NULL && st.MPI_SOURCE == MPI_ANY_SOURCE);
    MPI_Start(&pr[1]);
    MPI_Start(&pr[0]);
    int flag = 0;
    while (!flag) MPI_Test(&pr[1], &flag, &st);
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 6 && pr[1] != MPI_REQUEST_NULL);
    MPI_Wait(&pr[0], MPI_STATUS_IGNORE);
    /* A persistent send keeps working after its datatype is freed. */
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_INT, &two);
    MPI_Type_commit(&two);
    MPI_Send_init(sv, 1, two, next, 14, MPI_COMM_WORLD, &rr);
    MPI_Type_free(&two);
    sv[0] = rank, sv[1] = -rank;
    MPI_Start(&rr);
    MPI_Recv(rv, 2, MPI_INT, prev, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&rr, MPI_STATUS_IGNORE);
    CHECK(rv[0] == prev && rv[1] == -prev);
    MPI_Request_free(&rr);
    MPI_Bsend_init(sv, 1, MPI_INT, next, 8, MPI_COMM_WORLD, &rr);
    MPI_Rsend_init(sv, 1, MPI_INT, next, 9, MPI_COMM_WORLD, &r);
    MPI_Request_free(&rr);
    MPI_Request_free(&r);
    for (i = 0; i < 4; i++) {
        MPI_Request_free(&pr[i]);
        CHECK(pr[i] == MPI_REQUEST_NULL);
    }

    /* Sendrecv_replace around the ring, small and large. */
    int v[2] = {rank, -rank};
    MPI_Sendrecv_replace(v, 2, MPI_INT, next, 10, prev, 10, MPI_COMM_WORLD, &st);
    CHECK(v[0] == prev && v[1] == -prev && st.MPI_SOURCE == prev);
    for (i = 0; i < BIG; i++) big[i] = rank + i;
    MPI_Sendrecv_replace(big, BIG, MPI_INT, next, 11, prev, 11, MPI_COMM_WORLD, &st);
    CHECK(big[0] == prev && big[BIG - 1] == prev + BIG - 1);

    /* Matched probes: the message is received only through its handle,
     * even when a plain receive of the same source and tag comes first. */
    int a = rank, b = rank + 1000;
    MPI_Send(&a, 1, MPI_INT, next, 12, MPI_COMM_WORLD);
    MPI_Send(&b, 1, MPI_INT, next, 12, MPI_COMM_WORLD);
    MPI_Message msg;
    MPI_Mprobe(prev, 12, MPI_COMM_WORLD, &msg, &st);
    int cnt;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 1 && st.MPI_SOURCE == prev);
    int x = -1, y = -1;
    MPI_Recv(&y, 1, MPI_INT, prev, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Mrecv(&x, 1, MPI_INT, &msg, &st);
    CHECK(x == prev && y == prev + 1000 && msg == MPI_MESSAGE_NULL);
    MPI_Isend(big, BIG, MPI_INT, next, 13, MPI_COMM_WORLD, &rr);
    flag = 0;
    while (!flag) MPI_Improbe(MPI_ANY_SOURCE, 13, MPI_COMM_WORLD, &flag, &msg, &st);
    MPI_Imrecv(got, BIG, MPI_INT, &msg, &r);
    MPI_Wait(&r, &st);
    MPI_Wait(&rr, MPI_STATUS_IGNORE);
    /* The sender's buffer holds what its own predecessor sent it. */
    CHECK(st.MPI_SOURCE == prev && got[BIG - 1] == (prev + size - 1) % size + BIG - 1);
    MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &msg, &st);
    CHECK(flag && msg == MPI_MESSAGE_NO_PROC);
    MPI_Mrecv(NULL, 0, MPI_INT, &msg, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL);

    /* Waitsome, Testsome, Testany, Request_get_status. */
    MPI_Request q[3];
    int vals[3], idx[3], out;
    for (i = 0; i < 3; i++) MPI_Irecv(&vals[i], 1, MPI_INT, prev, 20 + i, MPI_COMM_WORLD, &q[i]);
    int s1 = rank * 7;
    MPI_Send(&s1, 1, MPI_INT, next, 21, MPI_COMM_WORLD);
    MPI_Waitsome(3, q, &out, idx, MPI_STATUSES_IGNORE);
    CHECK(out == 1 && idx[0] == 1 && q[1] == MPI_REQUEST_NULL && vals[1] == prev * 7);
    /* Nobody sends the next tag before everybody checked this one. */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(&s1, 1, MPI_INT, next, 22, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Request_get_status(q[2], &flag, &st);
    CHECK(st.MPI_TAG == 22 && q[2] != MPI_REQUEST_NULL);
    MPI_Testsome(3, q, &out, idx, MPI_STATUSES_IGNORE);
    CHECK(out == 1 && idx[0] == 2 && q[2] == MPI_REQUEST_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(&s1, 1, MPI_INT, next, 20, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Testany(3, q, &idx[0], &flag, &st);
    CHECK(idx[0] == 0 && st.MPI_TAG == 20 && vals[0] == prev * 7);
    MPI_Testany(3, q, &idx[0], &flag, &st);
    CHECK(flag && idx[0] == MPI_UNDEFINED);
    MPI_Waitsome(3, q, &out, idx, MPI_STATUSES_IGNORE);
    CHECK(out == MPI_UNDEFINED);
    MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st);
    CHECK(flag);

    free(big);
    free(got);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("p2pmore: ok %d tasks\n", size);
    MPI_Finalize();
    return 0;
}
