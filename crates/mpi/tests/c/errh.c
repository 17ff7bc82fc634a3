/* The program's own error handlers, classes, codes and strings: a
 * communicator handler and a window handler are called with their
 * object and the class of a failed call, which then returns it;
 * Comm_call_errhandler and Win_call_errhandler reach them too; a freed
 * handler stays on the objects that carry it; handlers of the wrong kind
 * are refused. Rank 0 prints "errh: ok N tasks" when every check passed. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs, rank;
#define CHECK_COUNTS
#include "check.h"

static int comm_calls, comm_code, win_calls, win_code;
static MPI_Comm comm_seen;
static MPI_Win win_seen;

static void on_comm(MPI_Comm *comm, int *code, ...)
{
    comm_calls++;
    comm_code = *code;
    comm_seen = *comm;
}

static void on_win(MPI_Win *win, int *code, ...)
{
    win_calls++;
    win_code = *code;
    win_seen = *win;
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* A communicator handler on a duplicate of MPI_COMM_WORLD. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Errhandler eh, got;
    CHECK(MPI_Comm_create_errhandler(on_comm, &eh) == MPI_SUCCESS);
    CHECK(MPI_Comm_set_errhandler(dup, eh) == MPI_SUCCESS);
    MPI_Comm_get_errhandler(dup, &got);
    CHECK(got == eh);
    int x = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, size + 5, 0, dup);
    CHECK(rc == MPI_ERR_RANK);
    CHECK(comm_calls == 1 && comm_code == MPI_ERR_RANK && comm_seen == dup);
    CHECK(MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER) == MPI_SUCCESS);
    CHECK(comm_calls == 2 && comm_code == MPI_ERR_OTHER);
    /* Freed: the communicator keeps it, nothing else can take it. */
    MPI_Errhandler keep = eh;
    CHECK(MPI_Errhandler_free(&eh) == MPI_SUCCESS && eh == MPI_ERRHANDLER_NULL);
    CHECK(MPI_Send(&x, -1, MPI_INT, 0, 0, dup) == MPI_ERR_COUNT);
    CHECK(comm_calls == 3 && comm_code == MPI_ERR_COUNT);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, keep) == MPI_ERR_ERRHANDLER);

    /* A window handler: called with the window; a communicator handler
     * cannot be set on a window, nor a window handler on a communicator. */
    MPI_Win win;
    int mem[4] = {0};
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Errhandler weh, ceh;
    MPI_Win_create_errhandler(on_win, &weh);
    MPI_Comm_create_errhandler(on_comm, &ceh);
    CHECK(MPI_Win_set_errhandler(win, ceh) == MPI_ERR_ERRHANDLER);
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, weh) == MPI_ERR_ERRHANDLER);
    CHECK(MPI_Win_set_errhandler(win, weh) == MPI_SUCCESS);
    MPI_Win_get_errhandler(win, &got);
    CHECK(got == weh);
    MPI_Win_fence(0, win);
    rc = MPI_Put(&x, 1, MPI_INT, 0, 100, 1, MPI_INT, win);
    CHECK(rc == MPI_ERR_RMA_RANGE);
    CHECK(win_calls == 1 && win_code == MPI_ERR_RMA_RANGE && win_seen == win);
    CHECK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER) == MPI_SUCCESS);
    CHECK(win_calls == 2 && win_code == MPI_ERR_OTHER);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    MPI_Errhandler_free(&weh);
    MPI_Errhandler_free(&ceh);
    CHECK(MPI_Errhandler_free(&ceh) == MPI_ERR_ERRHANDLER);

    /* Overlapping receive blocks of an allgatherv are refused by every
     * task alike, before anything is sent (none is left waiting). */
    {
        int cnt[64], dsp[64], got[128], one = rank;
        CHECK(size <= 64);
        for (int r = 0; r < size; r++) cnt[r] = 1, dsp[r] = r;
        if (size > 1) dsp[size - 1] = 0;
        rc = MPI_Allgatherv(&one, 1, MPI_INT, got, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
        CHECK(size == 1 ? rc == MPI_SUCCESS : rc == MPI_ERR_BUFFER);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* Classes, codes and strings. */
    int *last, flag, cls, code, code2, len;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
    CHECK(flag && *last >= MPI_ERR_LASTCODE);
    CHECK(MPI_Add_error_class(&cls) == MPI_SUCCESS);
    CHECK(cls > MPI_ERR_LASTCODE && *last == cls);
    CHECK(MPI_Add_error_code(cls, &code) == MPI_SUCCESS && code > cls && *last == code);
    CHECK(MPI_Add_error_code(MPI_ERR_TAG, &code2) == MPI_SUCCESS);
    CHECK(MPI_Add_error_code(code, &code2) == MPI_ERR_ARG);
    CHECK(MPI_Add_error_string(code, "the program's own failure") == MPI_SUCCESS);
    CHECK(MPI_Add_error_string(MPI_ERR_TAG, "no") == MPI_ERR_ARG);
    char s[MPI_MAX_ERROR_STRING];
    CHECK(MPI_Error_string(code, s, &len) == MPI_SUCCESS);
    CHECK(strcmp(s, "the program's own failure") == 0 && len == (int)strlen(s));
    CHECK(MPI_Error_string(cls, s, &len) == MPI_SUCCESS && len == 0);
    int c;
    CHECK(MPI_Error_class(code, &c) == MPI_SUCCESS && c == cls);
    CHECK(MPI_Error_class(code2, &c) == MPI_SUCCESS && c == MPI_ERR_TAG);
    CHECK(MPI_Error_class(*last + 1, &c) == MPI_ERR_ARG);
    /* The program raises its own code through its handler. */
    comm_calls = 0;
    CHECK(MPI_Comm_call_errhandler(dup, code) == MPI_SUCCESS);
    CHECK(comm_calls == 1 && comm_code == code);
    MPI_Comm_free(&dup);

    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("errh: ok %d tasks\n", size);
    MPI_Finalize();
    return all != 0;
}
