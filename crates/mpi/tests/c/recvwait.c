/* MPI_Recv that blocks before its message arrives keeps MPI's semantics
 * whatever its first look found: messages already unexpected before
 * those still in the FIFO, wildcards, order per source and tag,
 * synchronous and rendezvous senders, truncation, a receive posted
 * before it, a bad rank reported at once, a message to ourselves; and,
 * under MPI_THREAD_MULTIPLE, several threads sending to one task at once
 * (some synchronous, some rendezvous) keep each one's order, for one
 * receiving thread with MPI_ANY_TAG and for one thread per tag.
 *
 * argv[1]: "threads" for MPI_THREAD_MULTIPLE, otherwise the one-thread
 * semantics; 2 or more tasks. Prints "recvwait: ok <mode>" on rank 0. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define BIG 100000 /* above the eager size: a rendezvous */
#define THREADS 4
#define PER_THREAD 400

static int rank, size;

/* Lets the other task block in MPI_Recv first. */
static void pause_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static void semantics(void) {
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Status st;
    long v = 0;
    int flag, n;
    char *big = malloc(BIG);
    CHECK(big != NULL);

    /* A message already unexpected comes before one still in the FIFO,
     * whatever the wildcards. */
    if (rank == 0) {
        v = 1;
        MPI_Send(&v, 1, MPI_LONG, 1, 1, w);
        MPI_Recv(&v, 1, MPI_LONG, 1, 9, w, &st);
        v = 2;
        MPI_Send(&v, 1, MPI_LONG, 1, 2, w);
        v = 3;
        MPI_Send(&v, 1, MPI_LONG, 1, 1, w);
    } else if (rank == 1) {
        do
            MPI_Iprobe(0, 1, w, &flag, &st);
        while (!flag);
        MPI_Send(&v, 1, MPI_LONG, 0, 9, w);
        pause_ms(30); /* 2 and 3 reach the FIFO, not taken */
        MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &st);
        CHECK(v == 1 && st.MPI_SOURCE == 0 && st.MPI_TAG == 1);
        MPI_Recv(&v, 1, MPI_LONG, 0, MPI_ANY_TAG, w, &st);
        CHECK(v == 2 && st.MPI_TAG == 2);
        MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, 1, w, &st);
        CHECK(v == 3 && st.MPI_TAG == 1);
    }
    MPI_Barrier(w);

    /* Receives that wait before the sender sends: standard, synchronous,
     * rendezvous, synchronous rendezvous; by rank and by wildcard. */
    if (rank == 0) {
        pause_ms(20);
        v = 10;
        MPI_Send(&v, 1, MPI_LONG, 1, 3, w);
        pause_ms(20);
        v = 11;
        MPI_Ssend(&v, 1, MPI_LONG, 1, 4, w);
        pause_ms(20);
        memset(big, 5, BIG);
        MPI_Send(big, BIG, MPI_CHAR, 1, 5, w);
        pause_ms(20);
        memset(big, 6, BIG);
        MPI_Ssend(big, BIG, MPI_CHAR, 1, 6, w);
    } else if (rank == 1) {
        MPI_Recv(&v, 1, MPI_LONG, 0, 3, w, &st);
        CHECK(v == 10 && st.MPI_TAG == 3);
        MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &st);
        CHECK(v == 11 && st.MPI_SOURCE == 0 && st.MPI_TAG == 4);
        MPI_Recv(big, BIG, MPI_CHAR, 0, MPI_ANY_TAG, w, &st);
        MPI_Get_count(&st, MPI_CHAR, &n);
        CHECK(n == BIG && st.MPI_TAG == 5 && big[0] == 5 && big[BIG - 1] == 5);
        MPI_Recv(big, BIG, MPI_CHAR, MPI_ANY_SOURCE, 6, w, &st);
        CHECK(st.MPI_SOURCE == 0 && big[0] == 6 && big[BIG - 1] == 6);
    }
    MPI_Barrier(w);

    /* Truncation of a message that arrives after the receive waits, and
     * a bad rank reported at once rather than waited for. */
    MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN);
    if (rank == 0) {
        pause_ms(20);
        long two[2] = {7, 8};
        MPI_Send(two, 2, MPI_LONG, 1, 7, w);
    } else if (rank == 1) {
        int cls;
        MPI_Error_class(MPI_Recv(&v, 1, MPI_LONG, size, 0, w, &st), &cls);
        CHECK(cls == MPI_ERR_RANK);
        MPI_Error_class(MPI_Recv(&v, 1, MPI_LONG, 0, 7, w, &st), &cls);
        CHECK(cls == MPI_ERR_TRUNCATE && v == 7);
    }
    MPI_Comm_set_errhandler(w, MPI_ERRORS_ARE_FATAL);
    MPI_Barrier(w);

    /* Order by tag while waiting: the receive of tag 2 takes the first
     * tag-2 message, the tag-1 one before it waits for the next. */
    if (rank == 0) {
        pause_ms(20);
        for (v = 0; v < 4; v++) MPI_Send(&v, 1, MPI_LONG, 1, 1 + (int)(v % 2), w);
    } else if (rank == 1) {
        MPI_Recv(&v, 1, MPI_LONG, 0, 2, w, &st);
        CHECK(v == 1);
        MPI_Recv(&v, 1, MPI_LONG, 0, 1, w, &st);
        CHECK(v == 0);
        MPI_Recv(&v, 1, MPI_LONG, 0, MPI_ANY_TAG, w, &st);
        CHECK(v == 2 && st.MPI_TAG == 1);
        MPI_Recv(&v, 1, MPI_LONG, 0, 2, w, &st);
        CHECK(v == 3);
    }
    MPI_Barrier(w);

    /* An MPI_Irecv posted first takes the first message, the waiting
     * MPI_Recv the second. */
    if (rank == 0) {
        pause_ms(20);
        for (v = 20; v < 22; v++) MPI_Send(&v, 1, MPI_LONG, 1, 8, w);
    } else if (rank == 1) {
        long first = -1;
        MPI_Request r;
        MPI_Irecv(&first, 1, MPI_LONG, 0, 8, w, &r);
        MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(first == 20 && v == 21);
    }
    MPI_Barrier(w);

    /* A message to ourselves is not waited for in the FIFO. */
    {
        MPI_Request r;
        long mine = 30 + rank;
        MPI_Isend(&mine, 1, MPI_LONG, rank, 10, w, &r);
        MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, 10, w, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(v == 30 + rank && st.MPI_SOURCE == rank);
    }
    MPI_Barrier(w);

    /* Every other task sends 50 numbered messages to task 0, which takes
     * them with both wildcards: each source's in order. */
    if (rank == 0) {
        int *next = calloc((size_t)size, sizeof(int));
        CHECK(next != NULL);
        for (int i = 0; i < 50 * (size - 1); i++) {
            MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &st);
            CHECK(st.MPI_SOURCE > 0 && v == next[st.MPI_SOURCE]);
            CHECK(st.MPI_TAG == (int)(v % 3));
            next[st.MPI_SOURCE]++;
        }
        free(next);
    } else {
        for (v = 0; v < 50; v++) MPI_Send(&v, 1, MPI_LONG, 0, (int)(v % 3), w);
    }
    free(big);
}

struct arg {
    int id;
};

/* Sends PER_THREAD numbered messages to task 1 with its own tag; every
 * 50th synchronous, every 100th (from 7) a rendezvous. */
static void *sender(void *p) {
    int id = ((struct arg *)p)->id;
    long *buf = calloc(BIG / sizeof(long), sizeof(long));
    CHECK(buf != NULL);
    for (long i = 0; i < PER_THREAD; i++) {
        buf[0] = i;
        if (i % 100 == 7)
            MPI_Send(buf, BIG / (int)sizeof(long), MPI_LONG, 1, id, MPI_COMM_WORLD);
        else if (i % 50 == 3)
            MPI_Ssend(buf, 1, MPI_LONG, 1, id, MPI_COMM_WORLD);
        else
            MPI_Send(buf, 1, MPI_LONG, 1, id, MPI_COMM_WORLD);
    }
    free(buf);
    return NULL;
}

/* Receives its tag's PER_THREAD messages from task 0, in order. */
static void *receiver(void *p) {
    int id = ((struct arg *)p)->id;
    long *buf = calloc(BIG / sizeof(long), sizeof(long));
    CHECK(buf != NULL);
    for (long i = 0; i < PER_THREAD; i++) {
        MPI_Status st;
        MPI_Recv(buf, BIG / (int)sizeof(long), MPI_LONG, 0, id, MPI_COMM_WORLD, &st);
        CHECK(buf[0] == i && st.MPI_TAG == id);
    }
    free(buf);
    return NULL;
}

static void run_threads(void *(*f)(void *)) {
    pthread_t t[THREADS];
    struct arg a[THREADS];
    for (int i = 0; i < THREADS; i++) {
        a[i].id = i;
        CHECK(pthread_create(&t[i], NULL, f, &a[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
}

static void threads(void) {
    /* Concurrent senders, one receiving thread with MPI_ANY_TAG: each
     * sender's messages in its order. */
    if (rank == 0) {
        run_threads(sender);
    } else if (rank == 1) {
        long *buf = calloc(BIG / sizeof(long), sizeof(long));
        long next[THREADS] = {0};
        CHECK(buf != NULL);
        for (int i = 0; i < THREADS * PER_THREAD; i++) {
            MPI_Status st;
            MPI_Recv(buf, BIG / (int)sizeof(long), MPI_LONG, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_TAG >= 0 && st.MPI_TAG < THREADS);
            CHECK(buf[0] == next[st.MPI_TAG]);
            next[st.MPI_TAG]++;
        }
        free(buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Concurrent senders and concurrent receivers, one per tag. */
    if (rank == 0)
        run_threads(sender);
    else if (rank == 1)
        run_threads(receiver);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "semantics";
    int multiple = strcmp(mode, "threads") == 0;
    int provided;
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                    &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    if (multiple) {
        CHECK(provided == MPI_THREAD_MULTIPLE);
        threads();
    } else {
        semantics();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("recvwait: ok %s\n", mode);
    MPI_Finalize();
    return 0;
}
