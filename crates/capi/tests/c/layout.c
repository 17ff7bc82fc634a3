/*
 * layout.c — prints what a C compiler makes of sss.h: sizes and offsets of
 * the structs and every status with its value and description, for
 * tests/c_api.rs to compare with the library's Rust definitions.
 */
#include <sss.h>
#include <stddef.h>
#include <stdio.h>

#define SIZE(t) printf("size %s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offset %s.%s %zu\n", #t, #f, offsetof(t, f))
#define STATUS(s) printf("status %s %d %s\n", #s, (int)(s), sss_status_string(s))
/* A field_mask bit: its index and the offset of the field it names. */
#define BIT(t, m, f) printf("bit %s %d %zu\n", #t, bit_index(m), offsetof(t, f))
#define ALL(t, m) printf("all %s %llu\n", #t, (unsigned long long)(m))

static int bit_index(uint64_t m)
{
    int i = 0;
    while (m > 1) {
        m >>= 1;
        i++;
    }
    return i;
}

int main(void)
{
    SIZE(sss_seg_info_t);
    OFF(sss_seg_info_t, rank);
    OFF(sss_seg_info_t, perm);
    OFF(sss_seg_info_t, key);
    OFF(sss_seg_info_t, base);
    OFF(sss_seg_info_t, len);
    SIZE(sss_raddr_t);
    OFF(sss_raddr_t, rank);
    OFF(sss_raddr_t, key);
    OFF(sss_raddr_t, addr);
    SIZE(sss_op_params_t);
    OFF(sss_op_params_t, field_mask);
    OFF(sss_op_params_t, flags);
    OFF(sss_op_params_t, notify_key);
    OFF(sss_op_params_t, notify_addr);
    OFF(sss_op_params_t, notify_addend);
    OFF(sss_op_params_t, counter);
    SIZE(sss_stats_t);
    OFF(sss_stats_t, field_mask);
    OFF(sss_stats_t, retransmissions);
    OFF(sss_stats_t, bad_packets);
    OFF(sss_stats_t, refused);
    SIZE(sss_node_info_t);
    OFF(sss_node_info_t, field_mask);
    OFF(sss_node_info_t, up);
    OFF(sss_node_info_t, mem_total_kb);
    OFF(sss_node_info_t, updated_ns);
    SIZE(sss_dsm_stats_t);
    OFF(sss_dsm_stats_t, field_mask);
    OFF(sss_dsm_stats_t, updates);
    BIT(sss_op_params_t, SSS_OP_PARAM_FIELD_FLAGS, flags);
    BIT(sss_op_params_t, SSS_OP_PARAM_FIELD_NOTIFY_KEY, notify_key);
    BIT(sss_op_params_t, SSS_OP_PARAM_FIELD_NOTIFY_ADDR, notify_addr);
    BIT(sss_op_params_t, SSS_OP_PARAM_FIELD_NOTIFY_ADDEND, notify_addend);
    BIT(sss_op_params_t, SSS_OP_PARAM_FIELD_COUNTER, counter);
    ALL(sss_op_params_t, SSS_OP_PARAM_FIELD_ALL);
    BIT(sss_stats_t, SSS_STATS_FIELD_PACKETS_SENT, packets_sent);
    BIT(sss_stats_t, SSS_STATS_FIELD_BYTES_SENT, bytes_sent);
    BIT(sss_stats_t, SSS_STATS_FIELD_PACKETS_RECEIVED, packets_received);
    BIT(sss_stats_t, SSS_STATS_FIELD_BYTES_RECEIVED, bytes_received);
    BIT(sss_stats_t, SSS_STATS_FIELD_RETRANSMISSIONS, retransmissions);
    BIT(sss_stats_t, SSS_STATS_FIELD_APPLIED, applied);
    BIT(sss_stats_t, SSS_STATS_FIELD_REJECTED, rejected);
    BIT(sss_stats_t, SSS_STATS_FIELD_BAD_PACKETS, bad_packets);
    BIT(sss_stats_t, SSS_STATS_FIELD_REFUSED, refused);
    ALL(sss_stats_t, SSS_STATS_FIELD_ALL);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_NAME, name);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_UP, up);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_NCPUS, ncpus);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_RUNNABLE, runnable);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_NTASKS, ntasks);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_LOAD1000, load1000);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_MEM_TOTAL_KB, mem_total_kb);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_MEM_FREE_KB, mem_free_kb);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_PACKETS, packets);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_BYTES, bytes);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_RETRANSMISSIONS, retransmissions);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_REJECTED, rejected);
    BIT(sss_node_info_t, SSS_NODE_INFO_FIELD_UPDATED_NS, updated_ns);
    ALL(sss_node_info_t, SSS_NODE_INFO_FIELD_ALL);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_READ_FAULTS, read_faults);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_WRITE_FAULTS, write_faults);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_PAGES_FETCHED, pages_fetched);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_PAGES_PREFETCHED, pages_prefetched);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_DIFFS, diffs);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_WRITES, writes);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_BYTES_SENT, bytes_sent);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_PACKETS, packets);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_NOTES, notes);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_NOTICES, notices);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_INVALIDATIONS, invalidations);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_LOCKS, locks);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_BARRIERS, barriers);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_FAULT_NS, fault_ns);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_SYNC_NS, sync_ns);
    BIT(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_UPDATES, updates);
    ALL(sss_dsm_stats_t, SSS_DSM_STATS_FIELD_ALL);
    SIZE(sss_status_t);
    printf("flags %d %d %d\n", SSS_OP_FLAG_STATUS_RETURN, SSS_OP_FLAG_NOFC, SSS_OP_FLAG_NOTIFY);
    printf("perm %d %d %d %d\n", SSS_PERM_READ, SSS_PERM_WRITE, SSS_PERM_ATOMIC, SSS_PERM_ALL);
    printf("cmp %d %d %d %d %d %d\n", SSS_CMP_EQ, SSS_CMP_NE, SSS_CMP_GT, SSS_CMP_GE,
           SSS_CMP_LT, SSS_CMP_LE);
    STATUS(SSS_OK);
    STATUS(SSS_INPROGRESS);
    STATUS(SSS_ERR_BAD_KEY);
    STATUS(SSS_ERR_OUT_OF_BOUNDS);
    STATUS(SSS_ERR_NO_PERMISSION);
    STATUS(SSS_ERR_FIFO_FULL);
    STATUS(SSS_ERR_NO_SUCH_HANDLER);
    STATUS(SSS_ERR_NODE_DOWN);
    STATUS(SSS_ERR_NO_SUCH_TASK);
    STATUS(SSS_ERR_MISALIGNED);
    STATUS(SSS_ERR_NO_SUCH_GROUP);
    STATUS(SSS_ERR_TOO_LARGE);
    STATUS(SSS_ERR_UNSUPPORTED);
    STATUS(SSS_ERR_TIMED_OUT);
    STATUS(SSS_ERR_INVALID_PARAM);
    STATUS(SSS_ERR_NO_MESSAGE);
    STATUS(SSS_ERR_NO_MEMORY);
    STATUS(SSS_ERR_BOOT);
    STATUS(SSS_ERR_IO);
    STATUS(SSS_ERR_SHUTDOWN);
    STATUS(SSS_ERR_TRUNCATED);
    STATUS(SSS_ERR_IN_HANDLER);
    STATUS(SSS_ERR_INTERNAL);
    return 0;
}
