/* Intercommunicators: even and odd ranks of the job as two groups;
 * create, test_inter, sizes and groups, point-to-point by remote rank
 * (with MPI_ANY_SOURCE), Barrier, Bcast, Allreduce, Reduce, Gather(v),
 * Scatter(v), Allgather(v), Alltoall(v) and Reduce_scatter(_block) across
 * the groups, Scan refused with MPI_ERR_COMM, a failing leader, dup,
 * merge in both orders, free. Rank 0 prints "inter: ok N tasks" when
 * every check passed (one task: nothing to pair). */
#include <mpi.h>
#include <stdio.h>

static int errs, rank;
#define CHECK_COUNTS
#include "check.h"

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size > 1) {
        int odd = rank % 2, flag, n, lsize, lrank, rsize;
        MPI_Comm half, ic, icdup, merged, merged2;
        MPI_Comm_split(MPI_COMM_WORLD, odd, rank, &half);
        /* Remote leader in MPI_COMM_WORLD: rank 1 for the evens, 0 for the odds. */
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, odd ? 0 : 1, 77, &ic);
        MPI_Comm_test_inter(ic, &flag);
        CHECK(flag);
        MPI_Comm_test_inter(half, &flag);
        CHECK(!flag);
        MPI_Comm_size(ic, &lsize);
        MPI_Comm_rank(ic, &lrank);
        MPI_Comm_remote_size(ic, &rsize);
        int evens = (size + 1) / 2, odds = size / 2;
        CHECK(lsize == (odd ? odds : evens) && rsize == (odd ? evens : odds));
        CHECK(lrank == rank / 2);
        CHECK(MPI_Comm_remote_size(half, &n) == MPI_ERR_COMM);
        MPI_Group rg, wg;
        MPI_Comm_remote_group(ic, &rg);
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        int zero = 0, w;
        MPI_Group_translate_ranks(rg, 1, &zero, wg, &w);
        CHECK(w == (odd ? 0 : 1));
        MPI_Group_free(&rg);
        MPI_Comm_group(ic, &rg);
        MPI_Group_size(rg, &n);
        CHECK(n == lsize);
        MPI_Group_free(&rg);
        MPI_Group_free(&wg);

        /* Point-to-point: local rank r and remote rank r pair up. */
        int pairs = evens < odds ? evens : odds;
        if (lrank < pairs) {
            int got = -1;
            MPI_Status st;
            MPI_Sendrecv(&rank, 1, MPI_INT, lrank, 5, &got, 1, MPI_INT, MPI_ANY_SOURCE, 5, ic, &st);
            CHECK(got == (odd ? rank - 1 : rank + 1));
            CHECK(st.MPI_SOURCE == lrank && st.MPI_TAG == 5);
        }
        /* Every odd task sends to remote (even) rank 0. */
        if (odd) {
            MPI_Send(&rank, 1, MPI_INT, 0, 6, ic);
        } else if (lrank == 0) {
            int sum = 0;
            for (int i = 0; i < odds; i++) {
                int got;
                MPI_Status st;
                MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 6, ic, &st);
                CHECK(got == 2 * st.MPI_SOURCE + 1);
                sum += got;
            }
            CHECK(sum == odds * odds);
        }
        /* Collectives across the groups: Barrier, Bcast, Allreduce, then
         * Reduce, Gather, Scatter, Allgather and Alltoall. */
        CHECK(MPI_Barrier(ic) == MPI_SUCCESS);
        int val = -1;
        if (odd) /* the odd group's local rank 0 (world rank 1) is the root */
            MPI_Bcast(&val, 1, MPI_INT, 0, ic);
        else {
            val = 4242;
            MPI_Bcast(&val, 1, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, ic);
        }
        CHECK(val == 4242);
        /* Each group gets the sum over the other group's world ranks. */
        int mine[2] = {rank, 1}, other[2] = {0, 0};
        MPI_Allreduce(mine, other, 2, MPI_INT, MPI_SUM, ic);
        int want = 0;
        for (int r = odd ? 0 : 1; r < size; r += 2)
            want += r;
        CHECK(other[0] == want && other[1] == rsize);
        int gbuf[64], sbuf[64];
        /* Reduce: world rank 0 (the even group's local 0) gets the sum over
         * the odd group's world ranks. */
        int rsum = -1, oddsum = 0;
        for (int r = 1; r < size; r += 2)
            oddsum += r;
        if (odd)
            CHECK(MPI_Reduce(&rank, NULL, 1, MPI_INT, MPI_SUM, 0, ic) == MPI_SUCCESS);
        else
            CHECK(MPI_Reduce(NULL, &rsum, 1, MPI_INT, MPI_SUM, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL,
                             ic) == MPI_SUCCESS);
        if (!odd && lrank == 0)
            CHECK(rsum == oddsum);
        /* Gather at world rank 1 (the odd group's local 0) of the evens'. */
        if (odd) {
            for (int i = 0; i < 64; i++)
                gbuf[i] = -1;
            CHECK(MPI_Gather(NULL, 0, MPI_INT, gbuf, 1, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL,
                             ic) == MPI_SUCCESS);
            if (lrank == 0)
                for (int i = 0; i < evens; i++)
                    CHECK(gbuf[i] == 2 * i);
        } else {
            CHECK(MPI_Gather(&rank, 1, MPI_INT, NULL, 0, MPI_INT, 0, ic) == MPI_SUCCESS);
        }
        /* Scatter from world rank 0 to the odds: 100 + their local rank. */
        if (!odd) {
            for (int i = 0; i < odds; i++)
                sbuf[i] = 100 + i;
            CHECK(MPI_Scatter(sbuf, 1, MPI_INT, NULL, 0, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL,
                              ic) == MPI_SUCCESS);
        } else {
            int got = -1;
            CHECK(MPI_Scatter(NULL, 0, MPI_INT, &got, 1, MPI_INT, 0, ic) == MPI_SUCCESS);
            CHECK(got == 100 + lrank);
        }
        /* Allgather: each gets the other group's world ranks, in order. */
        CHECK(MPI_Allgather(&rank, 1, MPI_INT, gbuf, 1, MPI_INT, ic) == MPI_SUCCESS);
        for (int i = 0; i < rsize; i++)
            CHECK(gbuf[i] == (odd ? 2 * i : 2 * i + 1));
        /* Alltoall: block j to remote task j says who sent it to whom. */
        for (int j = 0; j < rsize; j++)
            sbuf[j] = 1000 * rank + j;
        CHECK(MPI_Alltoall(sbuf, 1, MPI_INT, gbuf, 1, MPI_INT, ic) == MPI_SUCCESS);
        for (int j = 0; j < rsize; j++)
            CHECK(gbuf[j] == 1000 * (odd ? 2 * j : 2 * j + 1) + lrank);
        /* The v forms: remote task j contributes j + 1 ints (its local
         * rank plus one), placed in reverse order of ranks with a gap. */
        {
            int counts[64], displs[64], mine[64], total = 0, ok = 1;
            for (int j = rsize - 1; j >= 0; j--) {
                counts[j] = j + 1;
                displs[j] = total + 1;
                total += j + 2;
            }
            for (int i = 0; i < lrank + 1; i++)
                mine[i] = 100 * rank + i;
            /* Gatherv at the odd group's local 0 from the evens. */
            if (odd) {
                for (int i = 0; i < 64; i++)
                    gbuf[i] = -1;
                CHECK(MPI_Gatherv(NULL, 0, MPI_INT, gbuf, counts, displs, MPI_INT,
                                  lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, ic) == MPI_SUCCESS);
                if (lrank == 0)
                    for (int j = 0; j < rsize; j++)
                        for (int i = 0; i < j + 1; i++)
                            ok &= gbuf[displs[j] + i] == 100 * (2 * j) + i;
                CHECK(ok);
            } else {
                CHECK(MPI_Gatherv(mine, lrank + 1, MPI_INT, NULL, NULL, NULL, MPI_INT, 0, ic) ==
                      MPI_SUCCESS);
            }
            /* Scatterv from the even group's local 0 to the odds. */
            if (!odd) {
                for (int i = 0; i < 64; i++)
                    sbuf[i] = 7000 + i;
                CHECK(MPI_Scatterv(sbuf, counts, displs, MPI_INT, NULL, 0, MPI_INT,
                                   lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, ic) == MPI_SUCCESS);
            } else {
                int got[64];
                for (int i = 0; i < 64; i++)
                    got[i] = -1;
                /* The root's counts: this task is remote rank lrank there. */
                int cnt = lrank + 1, start = 0;
                for (int j = lsize - 1; j > lrank; j--)
                    start += j + 2;
                CHECK(MPI_Scatterv(NULL, NULL, NULL, MPI_INT, got, cnt, MPI_INT, 0, ic) ==
                      MPI_SUCCESS);
                for (int i = 0; i < cnt; i++)
                    ok &= got[i] == 7000 + start + 1 + i;
                CHECK(ok);
            }
            /* Allgatherv: everyone gets every remote task's ints. */
            for (int i = 0; i < 64; i++)
                gbuf[i] = -1;
            CHECK(MPI_Allgatherv(mine, lrank + 1, MPI_INT, gbuf, counts, displs, MPI_INT, ic) ==
                  MPI_SUCCESS);
            for (int j = 0; j < rsize; j++)
                for (int i = 0; i < j + 1; i++)
                    ok &= gbuf[displs[j] + i] == 100 * (odd ? 2 * j : 2 * j + 1) + i;
            CHECK(ok);
            /* Alltoallv: to remote task j, j + 1 ints saying who and what;
             * from each, lrank + 1 ints. */
            int sc[64], sd[64], rc[64], rd[64], at = 0;
            for (int j = 0; j < rsize; j++) {
                sc[j] = j + 1;
                sd[j] = at;
                for (int i = 0; i < j + 1; i++)
                    sbuf[at + i] = 10000 * rank + 100 * j + i;
                at += j + 1;
                rc[j] = lrank + 1;
                rd[j] = j * (lrank + 1);
            }
            for (int i = 0; i < 64; i++)
                gbuf[i] = -1;
            CHECK(MPI_Alltoallv(sbuf, sc, sd, MPI_INT, gbuf, rc, rd, MPI_INT, ic) == MPI_SUCCESS);
            for (int j = 0; j < rsize; j++)
                for (int i = 0; i < lrank + 1; i++)
                    ok &= gbuf[rd[j] + i] == 10000 * (odd ? 2 * j : 2 * j + 1) + 100 * lrank + i;
            CHECK(ok);
        }
        /* Reduce_scatter: each group gets the other group's sum of 12
         * ints, cut evenly among its tasks. */
        {
            int v[12], got[12], counts[4], c = 12 / lsize, base = 0, ok = 1;
            for (int k = 0; k < 12; k++)
                v[k] = 100 * rank + k;
            for (int i = 0; i < lsize; i++)
                counts[i] = c;
            for (int r = odd ? 0 : 1; r < size; r += 2)
                base += 100 * r;
            CHECK(MPI_Reduce_scatter(v, got, counts, MPI_INT, MPI_SUM, ic) == MPI_SUCCESS);
            for (int i = 0; i < c; i++)
                ok &= got[i] == base + rsize * (lrank * c + i);
            CHECK(ok);
            if (lsize == rsize) {
                for (int i = 0; i < 12; i++)
                    got[i] = -1;
                CHECK(MPI_Reduce_scatter_block(v, got, c, MPI_INT, MPI_SUM, ic) ==
                      MPI_SUCCESS);
                for (int i = 0; i < c; i++)
                    ok &= got[i] == base + rsize * (lrank * c + i);
                CHECK(ok);
            }
            CHECK(MPI_Reduce_scatter(MPI_IN_PLACE, got, counts, MPI_INT, MPI_SUM, ic) ==
                  MPI_ERR_ARG);
        }
        /* Not defined on intercommunicators: a clear error, nothing sent. */
        CHECK(MPI_Scan(&rank, gbuf, 1, MPI_INT, MPI_SUM, ic) == MPI_ERR_COMM);

        /* A duplicate carries its own traffic. */
        MPI_Comm_dup(ic, &icdup);
        MPI_Comm_test_inter(icdup, &flag);
        CHECK(flag);
        if (lrank < pairs) {
            int got = -1;
            MPI_Sendrecv(&lrank, 1, MPI_INT, lrank, 8, &got, 1, MPI_INT, lrank, 8, icdup,
                         MPI_STATUS_IGNORE);
            CHECK(got == lrank);
        }

        /* Merge: evens low (first), then odds; and the other way round. */
        MPI_Intercomm_merge(ic, odd, &merged);
        MPI_Comm_size(merged, &n);
        CHECK(n == size);
        int mrank;
        MPI_Comm_rank(merged, &mrank);
        CHECK(mrank == (odd ? evens + lrank : lrank));
        int sum = 0;
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged);
        CHECK(sum == size * (size - 1) / 2);
        MPI_Intercomm_merge(icdup, !odd, &merged2);
        MPI_Comm_rank(merged2, &mrank);
        CHECK(mrank == (odd ? lrank : odds + lrank));
        MPI_Comm_test_inter(merged2, &flag);
        CHECK(!flag);
        MPI_Barrier(merged2);

        /* A bad remote leader: the leaders fail, the others learn it. */
        MPI_Comm bad = MPI_COMM_NULL;
        int rc = MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, size + 5, 78, &bad);
        CHECK(rc == (lrank == 0 ? MPI_ERR_RANK : MPI_ERR_OTHER) && bad == MPI_COMM_NULL);

        MPI_Comm_free(&merged2);
        MPI_Comm_free(&merged);
        MPI_Comm_free(&icdup);
        MPI_Comm_free(&ic);
        MPI_Comm_free(&half);
        CHECK(ic == MPI_COMM_NULL);
    }
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("inter: ok %d tasks\n", size);
    MPI_Finalize();
    return all != 0;
}
