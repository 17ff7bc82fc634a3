// header.cpp — sss.h from C++: compiles warning-free with -pedantic, links
// against libsss, and runs a job of one task through the C functions.
#include <sss.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(sizeof(sss_seg_info_t) == 32, "sss_seg_info_t layout");
static_assert(sizeof(sss_raddr_t) == 24, "sss_raddr_t layout");
static_assert(sizeof(sss_op_params_t) == 48, "sss_op_params_t layout");
static_assert(std::is_pointer<sss_task_h>::value, "handles are pointers");

int main()
{
    sss_task_h task = nullptr;
    if (sss_init(&task) != SSS_OK) {
        std::fprintf(stderr, "init: %s\n", sss_last_error());
        return 1;
    }
    sss_seg_h seg = nullptr;
    sss_seg_info_t info{};
    if (sss_seg_alloc(task, 64, SSS_PERM_ALL, &seg) != SSS_OK || sss_seg_info(seg, &info) != SSS_OK)
        return 1;
    sss_op_params_t params{};
    params.field_mask = SSS_OP_PARAM_FIELD_FLAGS;
    params.flags = SSS_OP_FLAG_STATUS_RETURN;
    std::uint64_t old = 1;
    sss_request_h req = nullptr;
    if (sss_fetch_add(task, sss_seg_raddr(&info, 8), 40, &params, &old, &req) != SSS_OK ||
        sss_request_wait(req) != SSS_OK)
        return 1;
    sss_request_free(req);
    std::uint64_t now = 0;
    std::memcpy(&now, static_cast<char *>(sss_seg_ptr(seg)) + 8, sizeof now);
    int failed = old != 0 || now != 40;
    if (sss_seg_free(task, seg) != SSS_OK || sss_finalize(task) != SSS_OK)
        failed = 1;
    std::printf("c++: %s, libsss %s\n", failed ? "FAILED" : "ok", sss_version());
    return failed;
}
