/*
 * field_mask.c — the growth rule of the masked structs (sss_op_params_t,
 * sss_stats_t, sss_node_info_t, sss_dsm_stats_t) on a job of one task.
 *
 * A caller built against an older header, whose structs ended earlier,
 * sets only the bits it knows: the library must neither read nor write
 * past those fields. Such old structs are placed so that they end exactly
 * at a PROT_NONE page, where any stray access crashes the program.
 * Full-size structs are filled with a canary byte to show that fields
 * whose bits are unset are neither written (outputs) nor read (inputs),
 * and that unknown bits are refused with nothing written.
 *
 * Prints "field_mask: all N checks passed" and exits 0 when all held.
 */
#define _GNU_SOURCE
#include <sss.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

#define CANARY 0xa5
#define CANARY64 UINT64_C(0xa5a5a5a5a5a5a5a5)

/* The structs as a caller built against a shorter header declared them. */
struct old_params {
    uint64_t field_mask;
    uint32_t flags;
    uint32_t reserved;
};

struct old_stats {
    uint64_t field_mask;
    uint64_t packets_sent;
    uint64_t bytes_sent;
};

struct old_node_info {
    uint64_t field_mask;
    char name[32];
};

struct old_dsm_stats {
    uint64_t field_mask;
    uint64_t read_faults;
};

/* @p size bytes, canary-filled, ending where an inaccessible page
 * begins. */
static void *at_page_end(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || mprotect(p + page, page, PROT_NONE) != 0) {
        perror("field_mask: mmap");
        exit(2);
    }
    memset(p + page - size, CANARY, size);
    return p + page - size;
}

static void op_params(sss_task_h t, const sss_seg_info_t *info, char *base)
{
    sss_raddr_t data = sss_seg_raddr(info, 64);
    sss_raddr_t word = sss_seg_raddr(info, 8);
    sss_request_h req;
    const char hello[] = "hello";

    /* An old caller: mask and flags only, at the end of the mapping. */
    struct old_params *op = at_page_end(sizeof *op);
    op->field_mask = SSS_OP_PARAM_FIELD_FLAGS;
    op->flags = SSS_OP_FLAG_STATUS_RETURN;
    op->reserved = 0;
    OK(sss_write(t, data, hello, sizeof hello, (const sss_op_params_t *)op, &req));
    OK(sss_request_wait(req));
    sss_request_free(req);
    EXPECT(memcmp(base + 64, hello, sizeof hello) == 0);
    uint64_t old = 0;
    OK(sss_fetch_add(t, word, 5, (const sss_op_params_t *)op, &old, &req));
    OK(sss_request_wait(req));
    sss_request_free(req);
    EXPECT(old == 0);

    /* Unset fields are not read: the canary counter is misaligned and
     * the canary flags unknown, which would be refused if read. */
    sss_op_params_t p;
    memset(&p, CANARY, sizeof p);
    p.field_mask = 0;
    OK(sss_fetch_add(t, word, 1, &p, NULL, NULL));
    p.field_mask = SSS_OP_PARAM_FIELD_NOTIFY_KEY | SSS_OP_PARAM_FIELD_NOTIFY_ADDR;
    OK(sss_write(t, data, hello, 2, &p, NULL));
    p.field_mask = SSS_OP_PARAM_FIELD_COUNTER;
    EXPECT_ST(sss_write(t, data, hello, 2, &p, NULL), SSS_ERR_INVALID_PARAM);
    p.field_mask = SSS_OP_PARAM_FIELD_FLAGS;
    EXPECT_ST(sss_write(t, data, hello, 2, &p, NULL), SSS_ERR_INVALID_PARAM);
    OK(sss_quiet(t));
    EXPECT(*(volatile uint64_t *)(base + 8) == 6);

    /* Bits this library does not know are refused. */
    memset(&p, 0, sizeof p);
    p.field_mask = SSS_OP_PARAM_FIELD_ALL + 1;
    EXPECT_ST(sss_write(t, data, hello, 2, &p, NULL), SSS_ERR_INVALID_PARAM);
    p.field_mask = UINT64_C(1) << 63;
    EXPECT_ST(sss_write(t, data, hello, 2, &p, NULL), SSS_ERR_INVALID_PARAM);
}

static void stats(sss_task_h t)
{
    /* An old caller knowing two counters. */
    struct old_stats *os = at_page_end(sizeof *os);
    os->field_mask = SSS_STATS_FIELD_PACKETS_SENT | SSS_STATS_FIELD_BYTES_SENT;
    OK(sss_task_stats(t, (sss_stats_t *)os));
    EXPECT(os->field_mask == (SSS_STATS_FIELD_PACKETS_SENT | SSS_STATS_FIELD_BYTES_SENT));
    EXPECT(os->packets_sent != CANARY64 && os->bytes_sent != CANARY64);

    /* Only the fields asked for are written; the mask is left as is. */
    sss_stats_t s, before;
    memset(&s, CANARY, sizeof s);
    s.field_mask = SSS_STATS_FIELD_APPLIED | SSS_STATS_FIELD_BAD_PACKETS;
    before = s;
    OK(sss_task_stats(t, &s));
    EXPECT(s.applied > 0 && s.applied != CANARY64 && s.bad_packets != CANARY64);
    before.applied = s.applied;
    before.bad_packets = s.bad_packets;
    EXPECT(memcmp(&before, &s, sizeof s) == 0);

    /* No bits: nothing written. Unknown bits: refused, nothing written. */
    memset(&s, CANARY, sizeof s);
    s.field_mask = 0;
    before = s;
    OK(sss_task_stats(t, &s));
    EXPECT(memcmp(&before, &s, sizeof s) == 0);
    s.field_mask = SSS_STATS_FIELD_ALL | (UINT64_C(1) << 40);
    before = s;
    EXPECT_ST(sss_task_stats(t, &s), SSS_ERR_INVALID_PARAM);
    EXPECT(memcmp(&before, &s, sizeof s) == 0);
}

static void node_info(sss_task_h t)
{
    /* Refused before the node is looked up; an old caller's struct is
     * not touched past its fields either way. */
    struct old_node_info *on = at_page_end(sizeof *on);
    on->field_mask = SSS_NODE_INFO_FIELD_NAME;
    EXPECT_ST(sss_idm_node(t, "no-such-node", (sss_node_info_t *)on), SSS_ERR_NO_MESSAGE);
    on->field_mask = SSS_NODE_INFO_FIELD_ALL + 1;
    EXPECT_ST(sss_idm_node(t, "no-such-node", (sss_node_info_t *)on), SSS_ERR_INVALID_PARAM);
    EXPECT(on->name[0] == (char)CANARY);
}

static void dsm_stats(sss_task_h t)
{
    sss_dsm_h dsm;
    void *a;
    OK(sss_dsm_init(t, SSS_DSM_PROTOCOL_ENV, SSS_DSM_WRITES_ENV, &dsm));
    OK(sss_dsm_malloc(dsm, 4096, SSS_DSM_BLOCK, 0, &a));
    OK(sss_dsm_barrier(dsm));

    struct old_dsm_stats *od = at_page_end(sizeof *od);
    od->field_mask = SSS_DSM_STATS_FIELD_READ_FAULTS;
    OK(sss_dsm_stats(dsm, (sss_dsm_stats_t *)od));
    EXPECT(od->read_faults != CANARY64);

    sss_dsm_stats_t s, before;
    memset(&s, CANARY, sizeof s);
    s.field_mask = SSS_DSM_STATS_FIELD_BARRIERS | SSS_DSM_STATS_FIELD_UPDATES;
    before = s;
    OK(sss_dsm_stats(dsm, &s));
    EXPECT(s.barriers >= 1 && s.barriers != CANARY64 && s.updates != CANARY64);
    before.barriers = s.barriers;
    before.updates = s.updates;
    EXPECT(memcmp(&before, &s, sizeof s) == 0);
    s.field_mask = SSS_DSM_STATS_FIELD_ALL + 1;
    before = s;
    EXPECT_ST(sss_dsm_stats(dsm, &s), SSS_ERR_INVALID_PARAM);
    EXPECT(memcmp(&before, &s, sizeof s) == 0);
    OK(sss_dsm_finalize(dsm));
}

int main(void)
{
    sss_task_h t;
    sss_seg_h seg;
    sss_seg_info_t info;
    if (sss_init(&t) != SSS_OK) {
        fprintf(stderr, "field_mask: sss_init: %s\n", sss_last_error());
        return 1;
    }
    OK(sss_seg_alloc(t, 4096, SSS_PERM_ALL, &seg));
    OK(sss_seg_info(seg, &info));
    op_params(t, &info, sss_seg_ptr(seg));
    stats(t);
    node_info(t);
    dsm_stats(t);
    OK(sss_seg_free(t, seg));
    OK(sss_finalize(t));
    if (failures) {
        printf("field_mask: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("field_mask: all %d checks passed\n", checks);
    return 0;
}
