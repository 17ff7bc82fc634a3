/* A put is complete at its target once the origin's flush or fence
 * returns: a third task told afterwards reads the new value there.
 * Rank 0 puts into the last rank's window (on the other node when tasks
 * are placed in blocks over two), completes, and tells rank 1 (on its
 * own node: told at once), which reads the last rank's window. Run with
 * loss injected (SSS_FAULT_DROP) so that puts are resent. Needs 3 tasks
 * or more; prints "rmaflush: ok N tasks". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 200

static void fail(const char *what, long round, long got, long want) {
    fprintf(stderr, "rmaflush: %s round %ld: read %ld, want at least %ld\n", what, round, got,
            want);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 3) {
        if (me == 0) fprintf(stderr, "rmaflush: needs 3 tasks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int target = n - 1, reader = 1;
    long *base;
    MPI_Win win;
    MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    base[0] = base[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    /* Passive target: MPI_Win_flush, then a message to the reader. */
    MPI_Win_lock_all(0, win);
    for (long r = 1; r <= ROUNDS; r++) {
        if (me == 0) {
            MPI_Put(&r, 1, MPI_LONG, target, 0, 1, MPI_LONG, win);
            MPI_Win_flush(target, win);
            MPI_Send(&r, 1, MPI_LONG, reader, 0, MPI_COMM_WORLD);
        } else if (me == reader) {
            long told, got = -1;
            MPI_Recv(&told, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Get(&got, 1, MPI_LONG, target, 0, 1, MPI_LONG, win);
            MPI_Win_flush(target, win);
            /* Rank 0 may be rounds ahead; never behind what it told. */
            if (got < told || got > ROUNDS) fail("flush", r, got, told);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Active target: the put's epoch ends with MPI_Win_fence; the reader
     * gets in the next one. */
    MPI_Win_fence(0, win);
    for (long r = 1; r <= ROUNDS; r++) {
        if (me == 0) MPI_Put(&r, 1, MPI_LONG, target, 1, 1, MPI_LONG, win);
        MPI_Win_fence(0, win);
        long got = -1;
        if (me == reader) MPI_Get(&got, 1, MPI_LONG, target, 1, 1, MPI_LONG, win);
        MPI_Win_fence(0, win);
        if (me == reader && got != r) fail("fence", r, got, r);
    }
    MPI_Win_free(&win);
    if (me == 0) printf("rmaflush: ok %d tasks\n", n);
    MPI_Finalize();
    return 0;
}
