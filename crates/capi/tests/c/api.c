/*
 * api.c — behaviour of the C API in a job of one task: every operation on
 * the task's own segments, every error status the caller can provoke,
 * and the output-only-on-success rule. Run by tests/c_api.rs, once with
 * the default transports and once with SSS_TRANSPORT=udp (operations to
 * oneself then go through the progress thread). GNU C (statement
 * expressions), unlike the examples.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <sss.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Issues an operation with a request and returns the request's status. */
#define WAITED(call_with_req)                                                    \
    ({                                                                           \
        sss_request_h req_ = NULL;                                               \
        sss_status_t s_ = (call_with_req);                                       \
        if (s_ == SSS_OK) {                                                      \
            s_ = sss_request_wait(req_);                                         \
            sss_request_free(req_);                                              \
        }                                                                        \
        s_;                                                                      \
    })

struct handler_state {
    uint64_t calls;
    uint32_t from;
    char payload[32];
    size_t len;
    sss_status_t barrier_status;
    sss_status_t finalize_status;
    sss_status_t write_status;
};

static void handler(void *arg, sss_task_h task, uint32_t from, const void *payload,
                    size_t len)
{
    struct handler_state *h = arg;
    h->from = from;
    h->len = len;
    memcpy(h->payload, payload, len < sizeof h->payload ? len : sizeof h->payload);
    h->barrier_status = sss_barrier(task);
    h->finalize_status = sss_finalize(task);
    h->write_status = sss_task_rank(task) == 0 ? SSS_OK : SSS_ERR_INTERNAL;
    __atomic_fetch_add(&h->calls, 1, __ATOMIC_RELEASE);
}

int main(void)
{
    /* Statuses. */
    EXPECT(strcmp(sss_status_string(SSS_OK), "success") == 0);
    EXPECT(strcmp(sss_status_string(SSS_ERR_FIFO_FULL), "FIFO queue full, message not stored") == 0);
    EXPECT(strcmp(sss_status_string((sss_status_t)12345), "unknown status") == 0);
    EXPECT(strncmp(sss_version(), "0.", 2) == 0);
    EXPECT_ST(sss_init(NULL), SSS_ERR_INVALID_PARAM);
    EXPECT(strstr(sss_last_error(), "task_p") != NULL);

    sss_task_h t;
    OK(sss_init(&t));
    sss_task_h t2 = NULL;
    EXPECT_ST(sss_init(&t2), SSS_ERR_INVALID_PARAM);
    EXPECT(t2 == NULL); /* outputs untouched on failure */
    EXPECT(sss_task_rank(t) == 0 && sss_task_size(t) == 1 && sss_task_job(t) != 0);
    EXPECT(sss_task_rank(NULL) == UINT32_MAX && sss_task_size(NULL) == 0);

    /* Segments. */
    sss_seg_h seg, ro, noatomic, bad = NULL;
    OK(sss_seg_alloc(t, 4096, SSS_PERM_ALL, &seg));
    OK(sss_seg_alloc(t, 64, SSS_PERM_READ, &ro));
    OK(sss_seg_alloc(t, 64, SSS_PERM_READ | SSS_PERM_WRITE, &noatomic));
    EXPECT_ST(sss_seg_alloc(t, 64, 8, &bad), SSS_ERR_INVALID_PARAM);
    EXPECT(bad == NULL);
    sss_seg_info_t info, all[1], roinfo, nainfo;
    OK(sss_seg_info(seg, &info));
    OK(sss_seg_info(ro, &roinfo));
    OK(sss_seg_info(noatomic, &nainfo));
    EXPECT(info.rank == 0 && info.len == 4096 && info.perm == SSS_PERM_ALL && info.key != 0);
    EXPECT((void *)(uintptr_t)info.base == sss_seg_ptr(seg));
    EXPECT(sss_seg_ptr(NULL) == NULL);
    OK(sss_seg_exchange(t, seg, all));
    EXPECT(memcmp(&all[0], &info, sizeof info) == 0);
    char *base = sss_seg_ptr(seg);

    /* WRITE and READ with requests. */
    sss_op_params_t sr;
    memset(&sr, 0, sizeof sr);
    sr.field_mask = SSS_OP_PARAM_FIELD_FLAGS;
    sr.flags = SSS_OP_FLAG_STATUS_RETURN;
    const char hello[] = "hello, segment";
    EXPECT_ST(WAITED(sss_write(t, sss_seg_raddr(&info, 100), hello, sizeof hello, &sr, &req_)), SSS_OK);
    EXPECT(memcmp(base + 100, hello, sizeof hello) == 0);
    char back[sizeof hello];
    memset(back, 0, sizeof back);
    EXPECT_ST(WAITED(sss_read(t, sss_seg_raddr(&info, 100), sizeof back, NULL, back, &req_)), SSS_OK);
    EXPECT(memcmp(back, hello, sizeof hello) == 0);
    /* A request stays complete, with its status, until freed. */
    sss_request_h req;
    OK(sss_write(t, sss_seg_raddr(&info, 200), hello, 4, NULL, &req));
    OK(sss_request_wait(req));
    OK(sss_request_test(req));
    OK(sss_request_test(req));
    sss_request_free(req);
    sss_request_free(NULL);

    /* Notify: data first, then the counter at offset 0. */
    sss_op_params_t nt;
    memset(&nt, 0, sizeof nt);
    nt.field_mask = SSS_OP_PARAM_FIELD_FLAGS | SSS_OP_PARAM_FIELD_NOTIFY_KEY |
                    SSS_OP_PARAM_FIELD_NOTIFY_ADDR | SSS_OP_PARAM_FIELD_NOTIFY_ADDEND;
    nt.flags = SSS_OP_FLAG_NOTIFY;
    nt.notify_key = info.key;
    nt.notify_addr = info.base;
    nt.notify_addend = 1;
    OK(sss_write(t, sss_seg_raddr(&info, 300), hello, sizeof hello, &nt, NULL));
    OK(sss_wait_u64(t, (const uint64_t *)base, SSS_CMP_GE, 1));
    EXPECT(memcmp(base + 300, hello, sizeof hello) == 0);

    /* A local completion counter instead of a request. */
    uint64_t done = 0;
    sss_op_params_t ct;
    memset(&ct, 0, sizeof ct);
    ct.field_mask = SSS_OP_PARAM_FIELD_COUNTER;
    ct.counter = &done;
    OK(sss_write(t, sss_seg_raddr(&info, 400), hello, 5, &ct, NULL));
    OK(sss_write(t, sss_seg_raddr(&info, 500), hello, 5, &ct, NULL));
    OK(sss_wait_u64(t, &done, SSS_CMP_EQ, 2));
    uint64_t rb = 0;
    OK(sss_read(t, sss_seg_raddr(&info, 400), 5, &ct, &rb, NULL));
    OK(sss_wait_u64(t, &done, SSS_CMP_EQ, 3));
    EXPECT(memcmp(&rb, hello, 5) == 0);

    /* Atomics at offset 8. */
    sss_raddr_t word = sss_seg_raddr(&info, 8);
    uint64_t old = 77;
    EXPECT_ST(WAITED(sss_fetch_add(t, word, 5, NULL, &old, &req_)), SSS_OK);
    EXPECT(old == 0);
    EXPECT_ST(WAITED(sss_swap(t, word, 9, NULL, &old, &req_)), SSS_OK);
    EXPECT(old == 5);
    EXPECT_ST(WAITED(sss_cas(t, word, 9, 11, NULL, &old, &req_)), SSS_OK);
    EXPECT(old == 9);
    EXPECT_ST(WAITED(sss_cas(t, word, 9, 13, NULL, &old, &req_)), SSS_OK);
    EXPECT(old == 11);
    uint64_t w;
    memcpy(&w, base + 8, sizeof w);
    EXPECT(w == 11);
    OK(sss_fetch_add(t, word, 1, &ct, NULL, NULL)); /* result discarded */
    OK(sss_wait_u64(t, &done, SSS_CMP_EQ, 4));
    memcpy(&w, base + 8, sizeof w);
    EXPECT(w == 12);

    /* Remote errors come back through the request; results stay untouched. */
    sss_raddr_t badkey = sss_seg_raddr(&info, 100);
    badkey.key ^= 1;
    EXPECT_ST(WAITED(sss_write(t, badkey, hello, 4, &sr, &req_)), SSS_ERR_BAD_KEY);
    EXPECT_ST(WAITED(sss_write(t, sss_seg_raddr(&info, 4094), hello, 8, &sr, &req_)), SSS_ERR_OUT_OF_BOUNDS);
    EXPECT_ST(WAITED(sss_write(t, sss_seg_raddr(&roinfo, 0), hello, 8, &sr, &req_)), SSS_ERR_NO_PERMISSION);
    old = 77;
    EXPECT_ST(WAITED(sss_fetch_add(t, sss_seg_raddr(&nainfo, 0), 1, NULL, &old, &req_)), SSS_ERR_NO_PERMISSION);
    EXPECT(old == 77);
    EXPECT_ST(WAITED(sss_fetch_add(t, sss_seg_raddr(&info, 12), 1, NULL, &old, &req_)), SSS_ERR_MISALIGNED);
    EXPECT(old == 77);
    char untouched[4] = {1, 2, 3, 4};
    EXPECT_ST(WAITED(sss_read(t, badkey, 4, NULL, untouched, &req_)), SSS_ERR_BAD_KEY);
    EXPECT(untouched[0] == 1 && untouched[3] == 4);
    EXPECT_ST(sss_write(t, sss_seg_raddr(&info, 0), hello, 4, NULL, NULL), SSS_OK);
    sss_raddr_t nobody = sss_seg_raddr(&info, 0);
    nobody.rank = 5;
    EXPECT_ST(sss_write(t, nobody, hello, 4, NULL, NULL), SSS_ERR_NO_SUCH_TASK);
    EXPECT_ST(sss_fence(t, 5), SSS_ERR_NO_SUCH_TASK);

    /* Errors of operations nobody holds a request for reach fence/quiet,
     * once each; a counter is bumped on failure too. */
    OK(sss_quiet(t));
    OK(sss_write(t, badkey, hello, 4, NULL, NULL));
    EXPECT_ST(sss_quiet(t), SSS_ERR_BAD_KEY);
    OK(sss_quiet(t));
    OK(sss_fetch_add(t, sss_seg_raddr(&info, 12), 1, &ct, NULL, NULL));
    OK(sss_wait_u64(t, &done, SSS_CMP_EQ, 5));
    EXPECT_ST(sss_fence(t, 0), SSS_ERR_MISALIGNED);
    OK(sss_fence(t, 0));
    /* ... and so does a request freed before it was waited for. */
    OK(sss_read(t, badkey, 4, NULL, untouched, &req));
    sss_request_free(req);
    EXPECT_ST(sss_quiet(t), SSS_ERR_BAD_KEY);

    /* Local argument checks. */
    sss_op_params_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = SSS_OP_PARAM_FIELD_FLAGS | SSS_OP_PARAM_FIELD_COUNTER;
    p.flags = 1u << 7;
    EXPECT_ST(sss_write(t, word, hello, 4, &p, NULL), SSS_ERR_INVALID_PARAM);
    p.flags = SSS_OP_FLAG_NOTIFY;
    EXPECT_ST(sss_fetch_add(t, word, 1, &p, NULL, NULL), SSS_ERR_INVALID_PARAM);
    p.flags = 0;
    p.counter = (uint64_t *)(base + 1);
    EXPECT_ST(sss_write(t, word, hello, 4, &p, NULL), SSS_ERR_INVALID_PARAM);
    EXPECT_ST(sss_fetch_add(t, word, 1, NULL, (uint64_t *)(base + 4), NULL), SSS_ERR_INVALID_PARAM);
    EXPECT_ST(sss_write(t, word, NULL, 4, NULL, NULL), SSS_ERR_INVALID_PARAM);
    OK(sss_write(t, word, NULL, 0, NULL, NULL));
    EXPECT_ST(sss_write(NULL, word, hello, 4, NULL, NULL), SSS_ERR_INVALID_PARAM);
    EXPECT_ST(sss_read(t, word, 4, NULL, NULL, NULL), SSS_ERR_INVALID_PARAM);
    EXPECT_ST(sss_wait_u64(t, &done, (sss_cmp_t)9, 0), SSS_ERR_INVALID_PARAM);
    EXPECT_ST(sss_wait_u64(t, (const uint64_t *)(base + 4), SSS_CMP_EQ, 0), SSS_ERR_INVALID_PARAM);
    uint64_t never = 0;
    EXPECT_ST(sss_wait_u64_timeout(t, &never, SSS_CMP_EQ, 1, 2000), SSS_ERR_TIMED_OUT);
    OK(sss_wait_u64_timeout(t, &never, SSS_CMP_EQ, 0, 0));
    /* SS-Wait and IDM reading. */
    OK(sss_sswait_u64(t, &never, SSS_CMP_EQ, 0, 0));
    EXPECT_ST(sss_sswait_u64(t, &never, SSS_CMP_EQ, 0, 99), SSS_ERR_NO_SUCH_TASK);
    sss_progress_bump(t);
    {
        sss_node_info_t ni;
        ni.field_mask = SSS_NODE_INFO_FIELD_ALL;
        EXPECT_ST(sss_idm_node(t, "no-such-node", &ni), SSS_ERR_NO_MESSAGE);
        EXPECT_ST(sss_idm_node(t, NULL, &ni), SSS_ERR_INVALID_PARAM);
        EXPECT(sss_idm_task_state(t, 0) <= SSS_TASK_GONE);
        EXPECT(sss_idm_task_state(NULL, 0) == SSS_TASK_UNKNOWN);
    }
    EXPECT_ST(sss_seg_info(NULL, &info), SSS_ERR_INVALID_PARAM);
    EXPECT_ST(sss_seg_info(seg, NULL), SSS_ERR_INVALID_PARAM);

    /* FIFO: back-pressure, truncation, order, sender. */
    EXPECT(sss_fifo_bytes(3, 16) == 0);
    EXPECT(sss_fifo_bytes(4, 32) > 4 * 32);
    sss_seg_h fseg;
    sss_fifo_h fifo, nofifo = NULL;
    OK(sss_seg_alloc(t, sss_fifo_bytes(4, 32), SSS_PERM_WRITE, &fseg));
    EXPECT_ST(sss_fifo_create(t, fseg, 8, 4, 32, &nofifo), SSS_ERR_INVALID_PARAM);
    EXPECT(nofifo == NULL);
    OK(sss_fifo_create(t, fseg, 0, 4, 32, &fifo));
    sss_raddr_t q;
    OK(sss_fifo_addr(fifo, &q));
    char buf[64];
    size_t len = 999;
    uint32_t from = 999;
    EXPECT_ST(sss_fifo_pop(fifo, buf, sizeof buf, &len, &from), SSS_ERR_NO_MESSAGE);
    EXPECT(len == 999 && from == 999);
    for (int i = 0; i < 4; i++) {
        char m[16];
        snprintf(m, sizeof m, "message %d", i);
        EXPECT_ST(WAITED(sss_fifo_push(t, q, m, strlen(m) + 1, &sr, &req_)), SSS_OK);
    }
    EXPECT_ST(WAITED(sss_fifo_push(t, q, "x", 2, &sr, &req_)), SSS_ERR_FIFO_FULL);
    EXPECT_ST(WAITED(sss_fifo_push(t, q, buf, 33, &sr, &req_)), SSS_ERR_TOO_LARGE);
    EXPECT_ST(sss_fifo_pop(fifo, buf, 2, &len, &from), SSS_ERR_TRUNCATED);
    EXPECT(len == 999);
    OK(sss_fifo_pop(fifo, buf, sizeof buf, &len, &from));
    EXPECT(len == 10 && from == 0 && strcmp(buf, "message 0") == 0);
    OK(sss_fifo_wait_pop(t, fifo, buf, sizeof buf, &len, NULL));
    EXPECT(strcmp(buf, "message 1") == 0);
    OK(sss_fifo_pop(fifo, buf, sizeof buf, &len, &from));
    OK(sss_fifo_pop(fifo, buf, sizeof buf, &len, &from));
    EXPECT(strcmp(buf, "message 3") == 0);
    EXPECT_ST(sss_fifo_pop(fifo, buf, sizeof buf, &len, &from), SSS_ERR_NO_MESSAGE);
    /* A full queue refused without status return: fence/quiet report it. */
    for (int i = 0; i < 5; i++)
        OK(sss_fifo_push(t, q, "y", 2, NULL, NULL));
    EXPECT_ST(sss_quiet(t), SSS_ERR_FIFO_FULL);

    /* Signals. */
    EXPECT_ST(WAITED(sss_signal(t, 0, 7, "a", 1, &sr, &req_)), SSS_ERR_NO_SUCH_HANDLER);
    EXPECT_ST(sss_signal_set_handler(t, 3, NULL, NULL), SSS_ERR_INVALID_PARAM);
    static struct handler_state hs;
    OK(sss_signal_set_handler(t, 3, handler, &hs));
    OK(sss_signal(t, 0, 3, "ping!", 5, NULL, NULL));
    OK(sss_wait_u64_timeout(t, &hs.calls, SSS_CMP_GE, 1, 10000000));
    EXPECT(hs.from == 0 && hs.len == 5 && memcmp(hs.payload, "ping!", 5) == 0);
    EXPECT(hs.barrier_status == SSS_ERR_IN_HANDLER);
    EXPECT(hs.finalize_status == SSS_ERR_INVALID_PARAM);
    EXPECT(hs.write_status == SSS_OK);

    /* Registered memory. */
    static uint64_t area[16];
    sss_seg_h reg;
    sss_seg_info_t rinfo;
    EXPECT_ST(sss_seg_register(t, NULL, 64, SSS_PERM_ALL, &reg), SSS_ERR_INVALID_PARAM);
    {
        /* Unmapped or read-only memory is refused at registration, not
         * found out by a peer's WRITE that kills this task. */
        long pg = sysconf(_SC_PAGESIZE);
        char *m = mmap(NULL, 2 * pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT(m != MAP_FAILED);
        EXPECT_ST(sss_seg_register(t, m, pg, SSS_PERM_ALL, &reg), SSS_ERR_INVALID_PARAM);
        OK(sss_seg_register(t, m, pg, SSS_PERM_READ, &reg));
        OK(sss_seg_free(t, reg));
        munmap(m + pg, pg);
        EXPECT_ST(sss_seg_register(t, m, 2 * pg, SSS_PERM_READ, &reg), SSS_ERR_INVALID_PARAM);
        munmap(m, pg);
    }
    OK(sss_seg_register(t, area, sizeof area, SSS_PERM_ALL, &reg));
    OK(sss_seg_info(reg, &rinfo));
    EXPECT(rinfo.base == (uint64_t)(uintptr_t)area && rinfo.len == sizeof area);
    uint64_t v = 0x1122334455667788u;
    EXPECT_ST(WAITED(sss_write(t, sss_seg_raddr(&rinfo, 16), &v, 8, &sr, &req_)), SSS_OK);
    EXPECT(area[2] == v);
    EXPECT_ST(WAITED(sss_fetch_add(t, sss_seg_raddr(&rinfo, 16), 1, NULL, &old, &req_)), SSS_OK);
    EXPECT(old == v && area[2] == v + 1);
    OK(sss_seg_free(t, reg));
    EXPECT_ST(WAITED(sss_write(t, sss_seg_raddr(&rinfo, 16), &v, 8, &sr, &req_)), SSS_ERR_BAD_KEY);

    /* Collectives and multicast in a job of one. */
    uint64_t mine = 42, gathered = 0;
    OK(sss_allgather(t, &mine, sizeof mine, &gathered));
    EXPECT(gathered == 42);
    OK(sss_barrier(t));
    sss_seg_h mseg;
    sss_seg_info_t minfo;
    OK(sss_seg_alloc_shared_key(t, 256, SSS_PERM_WRITE, &mseg));
    OK(sss_seg_info(mseg, &minfo));
    uint32_t members[1] = {0};
    OK(sss_group_create(t, 1, members, 1));
    EXPECT_ST(sss_group_create(t, 2, members, 0), SSS_ERR_INVALID_PARAM);
    /* The caller's own copy is written before sss_multicast returns. (Not
     * waited for: with no other member the runtime completes the request
     * only on the next unrelated progress; multicast.c covers the rest.) */
    OK(sss_multicast(t, 1, minfo.key, 16, hello, sizeof hello, &req));
    sss_request_free(req);
    EXPECT(memcmp((char *)sss_seg_ptr(mseg) + 16, hello, sizeof hello) == 0);
    EXPECT_ST(sss_multicast(t, 9, minfo.key, 16, hello, 4, NULL), SSS_ERR_NO_SUCH_GROUP);

    sss_stats_t stats;
    stats.field_mask = SSS_STATS_FIELD_ALL;
    OK(sss_task_stats(t, &stats));
    EXPECT(stats.applied > 0 && stats.rejected > 0);

    OK(sss_quiet(t));
    OK(sss_fifo_destroy(fifo));
    OK(sss_seg_free(t, fseg));
    OK(sss_seg_free(t, mseg));
    OK(sss_seg_free(t, seg));
    OK(sss_seg_free(t, ro));
    OK(sss_seg_free(t, noatomic));
    OK(sss_finalize(t));
    EXPECT_ST(sss_finalize(NULL), SSS_ERR_INVALID_PARAM);

    if (failures)
        printf("api: %d of %d checks failed\n", failures, checks);
    else
        printf("api: all %d checks passed\n", checks);
    return failures != 0;
}
