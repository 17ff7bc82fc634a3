/*
 * check.h — the counting checks of the C test programs (api.c,
 * field_mask.c): a failed check is reported on stderr with its line and
 * counted, and the program goes on, so one run lists every failure.
 */
#ifndef SSS_TEST_CHECK_H
#define SSS_TEST_CHECK_H

#include <sss.h>
#include <stdio.h>

static int checks, failures;

#define EXPECT(cond)                                                             \
    do {                                                                         \
        checks++;                                                                \
        if (!(cond)) {                                                           \
            failures++;                                                          \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                        \
    } while (0)

#define EXPECT_ST(call, want)                                                    \
    do {                                                                         \
        sss_status_t st_ = (call);                                               \
        checks++;                                                                \
        if (st_ != (want)) {                                                     \
            failures++;                                                          \
            fprintf(stderr, "%s:%d: %s gave %s (%d), expected %s [%s]\n",        \
                    __FILE__, __LINE__, #call, sss_status_string(st_), (int)st_, \
                    #want, sss_last_error());                                    \
        }                                                                        \
    } while (0)

#define OK(call) EXPECT_ST(call, SSS_OK)

#endif /* SSS_TEST_CHECK_H */
