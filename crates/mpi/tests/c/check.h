/* The check the test programs of this directory share. CHECK(c) reports
 * a failed condition with the task's rank (a variable `rank` the program
 * defines) and the line, then ends the task with status 1; a program
 * that defines CHECK_COUNTS before including this counts the failure in
 * its variable `errs` instead and goes on. */
#ifndef SSS_MPI_TEST_CHECK_H
#define SSS_MPI_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#ifdef CHECK_COUNTS
#define CHECK_FAILED() errs++
#else
#define CHECK_FAILED() exit(1)
#endif

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "rank %d: check failed at line %d: %s\n", rank,   \
                    __LINE__, #c);                                            \
            CHECK_FAILED();                                                   \
        }                                                                     \
    } while (0)

#endif
