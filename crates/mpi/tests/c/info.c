/* MPI_Info: set/get/get_string/get_valuelen/nkeys/nthkey/delete/dup/free,
 * MPI_INFO_ENV, bounds on keys and values; hints on communicators and
 * windows; Comm_split_type (shared: the tasks of one node; undefined);
 * Comm_dup_with_info, Comm_idup. Rank 0 prints "info: ok N tasks" when
 * every check passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs, rank;
#define CHECK_COUNTS
#include "check.h"

int main(int argc, char **argv)
{
    int size, flag, len, n;
    char key[MPI_MAX_INFO_KEY], val[MPI_MAX_INFO_VAL];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Info info, copy;
    MPI_Info_create(&info);
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 0);
    MPI_Info_set(info, "alpha", "one");
    MPI_Info_set(info, "beta", "two-two");
    MPI_Info_set(info, "alpha", "uno"); /* replaces */
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 2);
    MPI_Info_get_nthkey(info, 0, key);
    CHECK(strcmp(key, "alpha") == 0);
    MPI_Info_get_nthkey(info, 1, key);
    CHECK(strcmp(key, "beta") == 0);
    CHECK(MPI_Info_get_nthkey(info, 2, key) == MPI_ERR_ARG);
    MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && strcmp(val, "uno") == 0);
    MPI_Info_get(info, "beta", 3, val, &flag); /* cut to 3 characters */
    CHECK(flag && strcmp(val, "two") == 0);
    MPI_Info_get(info, "gamma", 10, val, &flag);
    CHECK(!flag);
    MPI_Info_get_valuelen(info, "beta", &len, &flag);
    CHECK(flag && len == 7);
    int buflen = 0;
    MPI_Info_get_string(info, "beta", &buflen, val, &flag);
    CHECK(flag && buflen == 8);
    buflen = sizeof val;
    MPI_Info_get_string(info, "beta", &buflen, val, &flag);
    CHECK(flag && buflen == 8 && strcmp(val, "two-two") == 0);
    MPI_Info_dup(info, &copy);
    MPI_Info_delete(info, "alpha");
    CHECK(MPI_Info_delete(info, "alpha") == MPI_ERR_INFO_NOKEY);
    MPI_Info_get_nkeys(info, &n);
    CHECK(n == 1);
    MPI_Info_get_nkeys(copy, &n);
    CHECK(n == 2);

    /* Bounds. */
    char *big = malloc(MPI_MAX_INFO_VAL + 10);
    memset(big, 'k', MPI_MAX_INFO_VAL + 9);
    big[MPI_MAX_INFO_KEY] = 0;
    CHECK(MPI_Info_set(info, big, "v") == MPI_ERR_INFO_KEY);
    big[MPI_MAX_INFO_KEY] = 'k';
    big[MPI_MAX_INFO_VAL + 9] = 0;
    CHECK(MPI_Info_set(info, "k", big) == MPI_ERR_INFO_VALUE);
    big[MPI_MAX_INFO_VAL - 1] = 0;
    CHECK(MPI_Info_set(info, "k", big) == MPI_SUCCESS);
    big[MPI_MAX_INFO_KEY - 1] = 0;
    CHECK(MPI_Info_set(info, big, "v") == MPI_SUCCESS);
    CHECK(MPI_Info_set(info, "", "v") == MPI_ERR_INFO_KEY);
    free(big);
    MPI_Info_free(&info);
    CHECK(info == MPI_INFO_NULL);
    CHECK(MPI_Info_set(info, "a", "b") == MPI_ERR_INFO);

    /* MPI_INFO_ENV. */
    MPI_Info_get(MPI_INFO_ENV, "command", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && strstr(val, "info") != NULL);
    MPI_Info_get_string(MPI_INFO_ENV, "maxprocs", &(int){sizeof val}, val, &flag);
    CHECK(flag && atoi(val) == size);
    CHECK(MPI_Info_set(MPI_INFO_ENV, "a", "b") == MPI_ERR_INFO);

    /* Hints on communicators. */
    MPI_Comm dup, dup2;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, copy, &dup);
    MPI_Info used;
    MPI_Comm_get_info(dup, &used);
    MPI_Info_get(used, "alpha", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && strcmp(val, "uno") == 0);
    MPI_Info_free(&used);
    MPI_Comm_set_info(dup, MPI_INFO_NULL);
    MPI_Comm_get_info(dup, &used);
    MPI_Info_get_nkeys(used, &n);
    CHECK(n == 0);
    MPI_Info_free(&used);
    MPI_Request req;
    MPI_Comm_idup(dup, &dup2, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(req == MPI_REQUEST_NULL);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup2);
    CHECK(sum == size * (size - 1) / 2);
    MPI_Comm_free(&dup2);
    MPI_Comm_free(&dup);

    /* Windows take and keep info. */
    int wbuf[2];
    MPI_Win win;
    MPI_Win_create(wbuf, sizeof wbuf, sizeof(int), copy, MPI_COMM_WORLD, &win);
    MPI_Win_set_info(win, copy);
    MPI_Win_get_info(win, &used);
    MPI_Info_get_nkeys(used, &n);
    CHECK(n == 2);
    MPI_Info_free(&used);
    MPI_Win_free(&win);
    MPI_Info_free(&copy);

    /* Split by node: tasks on one node, ordered by key (reversed). */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, size - rank, MPI_INFO_NULL, &node);
    int nsize, nrank;
    MPI_Comm_size(node, &nsize);
    MPI_Comm_rank(node, &nrank);
    char me[MPI_MAX_PROCESSOR_NAME];
    int host_ok = 1;
    (void)me;
    /* Every member of `node` shares our node: its sum of world ranks
     * matches a count by the ranks' own nodes. */
    int *ranks = malloc(sizeof(int) * nsize);
    MPI_Allgather(&rank, 1, MPI_INT, ranks, 1, MPI_INT, node);
    for (int i = 1; i < nsize; i++)
        CHECK(ranks[i] < ranks[i - 1]); /* reversed by key */
    CHECK(ranks[nrank] == rank);
    free(ranks);
    /* Over all nodes, the sizes add up to the job. */
    int lead = nrank == 0 ? nsize : 0, total = 0;
    MPI_Allreduce(&lead, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == size && host_ok);
    MPI_Comm_free(&node);
    MPI_Comm none;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &none);
    CHECK(none == MPI_COMM_NULL);
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &none) == MPI_ERR_ARG);
    /* Print how many nodes, for the driver. */
    int nodes = nrank == 0, allnodes = 0;
    MPI_Allreduce(&nodes, &allnodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("info: ok %d tasks (%d nodes)\n", size, allnodes);
    MPI_Finalize();
    return all != 0;
}
