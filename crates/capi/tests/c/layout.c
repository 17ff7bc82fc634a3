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
    OFF(sss_op_params_t, flags);
    OFF(sss_op_params_t, notify_key);
    OFF(sss_op_params_t, notify_addr);
    OFF(sss_op_params_t, notify_addend);
    OFF(sss_op_params_t, counter);
    SIZE(sss_stats_t);
    OFF(sss_stats_t, retransmissions);
    OFF(sss_stats_t, bad_packets);
    SIZE(sss_node_info_t);
    OFF(sss_node_info_t, up);
    OFF(sss_node_info_t, mem_total_kb);
    OFF(sss_node_info_t, updated_ns);
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
