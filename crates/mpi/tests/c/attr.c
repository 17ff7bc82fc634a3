/* Names and attributes: predefined names, Comm/Win set_name/get_name;
 * communicator, datatype and window keyvals with copy callbacks at dup
 * and delete callbacks at replace, delete and free; the predefined
 * callbacks; the deprecated MPI-1 calls; the predefined attributes;
 * MPI_COMM_SELF's attributes deleted at the start of MPI_Finalize;
 * errors returned under MPI_ERRORS_RETURN. Rank 0 prints
 * "attr: ok N tasks" when every check passed. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs, rank;
#define CHECK_COUNTS
#include "check.h"

static int copies, deletes, last_deleted;

static int copy_fn(MPI_Comm comm, int key, void *extra, void *in, void *out, int *flag)
{
    (void)comm;
    (void)key;
    CHECK(*(int *)extra == 42);
    copies++;
    *(void **)out = (char *)in + 1; /* the copy sees value + 1 */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm;
    (void)key;
    CHECK(*(int *)extra == 42);
    deletes++;
    last_deleted = (int)(MPI_Aint)val;
    return MPI_SUCCESS;
}

static int type_deletes;
static int type_delete(MPI_Datatype t, int key, void *val, void *extra)
{
    (void)t;
    (void)key;
    (void)val;
    (void)extra;
    type_deletes++;
    return MPI_SUCCESS;
}

static int win_deletes;
static int win_delete(MPI_Win w, int key, void *val, void *extra)
{
    (void)w;
    (void)key;
    (void)extra;
    win_deletes += (int)(MPI_Aint)val;
    return MPI_SUCCESS;
}

static int self_delete(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)key;
    (void)val;
    (void)extra;
    /* Called at MPI_Finalize, before it does anything else. */
    int fin = 1;
    MPI_Finalized(&fin);
    if (comm == MPI_COMM_SELF && rank == 0 && !fin)
        printf("attr: MPI_COMM_SELF attribute deleted at finalize\n");
    return MPI_SUCCESS;
}

static int failing_delete(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm;
    (void)key;
    (void)val;
    (void)extra;
    return MPI_ERR_OTHER;
}

int main(int argc, char **argv)
{
    int size, len, flag;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Names. */
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14);
    MPI_Comm_get_name(MPI_COMM_SELF, name, &len);
    CHECK(strcmp(name, "MPI_COMM_SELF") == 0);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_get_name(dup, name, &len);
    CHECK(len == 0 && name[0] == 0);
    MPI_Comm_set_name(dup, "my communicator");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "my communicator") == 0 && len == 15);
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    MPI_Comm_set_name(dup, longname);
    MPI_Comm_get_name(dup, name, &len);
    CHECK(len == MPI_MAX_OBJECT_NAME - 1 && strlen(name) == (size_t)len);
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_set_name(t, "pair");
    MPI_Type_get_name(t, name, &len);
    CHECK(strcmp(name, "pair") == 0);
    MPI_Type_get_name(MPI_DOUBLE, name, &len);
    CHECK(strcmp(name, "MPI_DOUBLE") == 0);
    CHECK(MPI_Comm_set_name(MPI_COMM_NULL, "x") == MPI_ERR_COMM);

    /* Predefined attributes. */
    int *ip;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ip, &flag);
    CHECK(flag && *ip >= 32767);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &ip, &flag);
    CHECK(flag && *ip == size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &ip, &flag);
    CHECK(flag && (*ip == 0 || *ip == 1));
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &ip, &flag);
    CHECK(flag && *ip == MPI_PROC_NULL);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &ip, &flag);
    CHECK(flag);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &ip, &flag);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &ip, &flag);
    CHECK(flag && *ip >= MPI_ERR_LASTCODE - MPI_ERR_LASTCODE);
    MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &ip, &flag);
    CHECK(flag && *ip >= 32767);

    /* Communicator keyvals: copy at dup, delete at replace/delete/free. */
    int extra = 42, key, key2, nocopy;
    void *v;
    MPI_Comm_create_keyval(copy_fn, delete_fn, &key, &extra);
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &key2, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &nocopy, NULL);
    CHECK(key != key2 && key != MPI_KEYVAL_INVALID);
    MPI_Comm_get_attr(dup, key, &v, &flag);
    CHECK(!flag);
    MPI_Comm_set_attr(dup, key, (void *)(MPI_Aint)100);
    MPI_Comm_set_attr(dup, key2, (void *)(MPI_Aint)7);
    MPI_Comm_set_attr(dup, nocopy, (void *)(MPI_Aint)8);
    MPI_Comm_get_attr(dup, key, &v, &flag);
    CHECK(flag && v == (void *)(MPI_Aint)100);
    MPI_Comm_set_attr(dup, key, (void *)(MPI_Aint)101); /* replaces: deletes 100 */
    CHECK(deletes == 1 && last_deleted == 100);
    MPI_Comm dup2;
    MPI_Comm_dup(dup, &dup2);
    CHECK(copies == 1);
    MPI_Comm_get_attr(dup2, key, &v, &flag);
    CHECK(flag && v == (void *)(MPI_Aint)102);
    MPI_Comm_get_attr(dup2, key2, &v, &flag);
    CHECK(flag && v == (void *)(MPI_Aint)7);
    MPI_Comm_get_attr(dup2, nocopy, &v, &flag);
    CHECK(!flag);
    MPI_Comm_get_name(dup2, name, &len);
    CHECK(len == 0); /* names are not copied */
    MPI_Comm_delete_attr(dup2, key);
    CHECK(deletes == 2 && last_deleted == 102);
    CHECK(MPI_Comm_delete_attr(dup2, key) == MPI_ERR_KEYVAL);
    MPI_Comm_free(&dup2);
    CHECK(deletes == 2 && dup2 == MPI_COMM_NULL);
    /* A freed keyval still deletes the values set with it. */
    MPI_Comm_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID);
    MPI_Comm_free(&dup);
    CHECK(deletes == 3 && last_deleted == 101);
    CHECK(MPI_Comm_set_attr(MPI_COMM_WORLD, 123456, NULL) == MPI_ERR_KEYVAL);
    MPI_Comm_get_attr(MPI_COMM_WORLD, 123456, &v, &flag); /* never a keyval: absent */
    CHECK(!flag);
    MPI_Comm_free_keyval(&key2);
    MPI_Comm_free_keyval(&nocopy);

    /* A delete callback's error is the call's. */
    int bad;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, failing_delete, &bad, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, bad, NULL);
    CHECK(MPI_Comm_delete_attr(MPI_COMM_WORLD, bad) == MPI_ERR_OTHER);
    MPI_Comm_free_keyval(&bad);

    /* Deprecated MPI-1 attribute calls. */
    int old;
    MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &old, NULL);
    MPI_Attr_put(MPI_COMM_WORLD, old, (void *)(MPI_Aint)5);
    MPI_Attr_get(MPI_COMM_WORLD, old, &v, &flag);
    CHECK(flag && v == (void *)(MPI_Aint)5);
    MPI_Attr_delete(MPI_COMM_WORLD, old);
    MPI_Attr_get(MPI_COMM_WORLD, old, &v, &flag);
    CHECK(!flag);
    MPI_Keyval_free(&old);

    /* Datatype keyvals. */
    int tkey;
    MPI_Type_create_keyval(MPI_TYPE_DUP_FN, type_delete, &tkey, NULL);
    MPI_Type_set_attr(t, tkey, (void *)(MPI_Aint)9);
    MPI_Datatype t2;
    MPI_Type_dup(t, &t2);
    MPI_Type_get_attr(t2, tkey, &v, &flag);
    CHECK(flag && v == (void *)(MPI_Aint)9);
    int ck;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ck, NULL);
    CHECK(MPI_Type_get_attr(t, ck, &v, &flag) == MPI_ERR_KEYVAL); /* a communicator's */
    MPI_Comm_free_keyval(&ck);
    MPI_Type_free(&t2);
    MPI_Type_free(&t);
    CHECK(type_deletes == 2);
    MPI_Type_delete_attr(MPI_INT, tkey); /* not set: an error */
    MPI_Type_free_keyval(&tkey);

    /* Window keyvals and names. */
    int buf[4], wkey;
    MPI_Win win;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_name(win, name, &len);
    CHECK(len == 0);
    MPI_Win_set_name(win, "window");
    MPI_Win_get_name(win, name, &len);
    CHECK(strcmp(name, "window") == 0);
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_delete, &wkey, NULL);
    MPI_Win_set_attr(win, wkey, (void *)(MPI_Aint)3);
    MPI_Win_get_attr(win, wkey, &v, &flag);
    CHECK(flag && v == (void *)(MPI_Aint)3);
    void *base;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(flag && base == buf);
    MPI_Win_free(&win);
    CHECK(win_deletes == 3);
    MPI_Win_free_keyval(&wkey);

    int selfkey;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &selfkey, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, selfkey, NULL);

    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("attr: ok %d tasks\n", size);
    fflush(stdout);
    MPI_Finalize();
    return all != 0;
}
