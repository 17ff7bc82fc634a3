/* The sessions model alone (no MPI_Init): process sets, groups from
 * them, communicators from groups with an error handler, pset info,
 * errors returned on a bad name. Rank 0 prints "session: ok N tasks"
 * when every check passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs, rank;
#define CHECK_COUNTS
#include "check.h"

int main(void)
{
    MPI_Session s, s2;
    int n, len, flag;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2);
    MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n);
    CHECK(n == 2);
    char names[2][MPI_MAX_PSET_NAME_LEN];
    for (int i = 0; i < n; i++) {
        len = 0;
        MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL);
        CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN);
        MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, names[i]);
        CHECK((int)strlen(names[i]) == len - 1);
    }
    CHECK(strcmp(names[0], "mpi://WORLD") == 0 && strcmp(names[1], "mpi://SELF") == 0);
    CHECK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 2, &len, names[0]) == MPI_ERR_ARG);

    MPI_Group world, self;
    MPI_Group_from_session_pset(s, "mpi://WORLD", &world);
    MPI_Group_from_session_pset(s2, "mpi://SELF", &self);
    CHECK(MPI_Group_from_session_pset(s, "mpi://NOWHERE", &self) == MPI_ERR_ARG);
    int size;
    MPI_Group_size(world, &size);
    MPI_Group_rank(world, &rank);
    MPI_Info pinfo;
    char val[MPI_MAX_INFO_VAL];
    MPI_Session_get_pset_info(s, "mpi://WORLD", &pinfo);
    MPI_Info_get(pinfo, "mpi_size", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && atoi(val) == size);
    MPI_Info_free(&pinfo);

    MPI_Comm comm, one;
    MPI_Comm_create_from_group(world, "org.example.test", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm);
    int crank, csize, sum = 0;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    CHECK(crank == rank && csize == size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    CHECK(sum == size * (size - 1) / 2);
    /* The handler given is the communicator's. */
    CHECK(MPI_Send(&rank, 1, MPI_INT, size, 0, comm) == MPI_ERR_RANK);
    MPI_Comm_create_from_group(self, "org.example.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &one);
    MPI_Comm_size(one, &csize);
    CHECK(csize == 1);
    MPI_Comm_free(&one);
    MPI_Group_free(&self);
    MPI_Group_free(&world);

    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, comm);
    if (rank == 0 && all == 0)
        printf("session: ok %d tasks\n", size);
    MPI_Comm_free(&comm);
    MPI_Session_finalize(&s2);
    CHECK(s2 == MPI_SESSION_NULL);
    MPI_Session_finalize(&s);
    return all != 0;
}
