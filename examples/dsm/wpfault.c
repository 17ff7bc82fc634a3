/*
 * The cost of catching the first write of each page, the two ways a page
 * DSM can: mprotect + SIGSEGV (the handler runs on the faulting thread
 * and unprotects the page) and userfaultfd write-protect (a handler
 * thread reads the fault and clears the protection with
 * UFFDIO_WRITEPROTECT, page by page or a run of RUN pages at a time).
 * Each round protects PAGES pages of private memory in one call, then
 * writes one word of each page in order.
 *
 *   wpfault [PAGES [ROUNDS]]
 *
 * Prints, per method, the microseconds per page of the write pass and of
 * the protect call. Linux >= 5.11 (user-mode-only userfaultfd).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#define PG 4096
#define RUN 64

static char *mem;
static size_t pages;
static int uffd;
static size_t run_pages = 1;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void on_segv(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)ctx;
    uintptr_t a = (uintptr_t)si->si_addr & ~(uintptr_t)(PG - 1);
    if (mprotect((void *)a, PG, PROT_READ | PROT_WRITE) != 0) {
        abort();
    }
}

static void wp(char *at, size_t len, int on) {
    struct uffdio_writeprotect w = {
        .range = {.start = (uintptr_t)at, .len = len},
        .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
    };
    if (ioctl(uffd, UFFDIO_WRITEPROTECT, &w) != 0) {
        perror("UFFDIO_WRITEPROTECT");
        exit(1);
    }
}

static void *handler(void *arg) {
    (void)arg;
    for (;;) {
        struct pollfd p = {.fd = uffd, .events = POLLIN};
        if (poll(&p, 1, -1) < 0) {
            continue;
        }
        struct uffd_msg m;
        while (read(uffd, &m, sizeof m) == (ssize_t)sizeof m) {
            if (m.event != UFFD_EVENT_PAGEFAULT) {
                continue;
            }
            char *a = (char *)(uintptr_t)(m.arg.pagefault.address & ~(uint64_t)(PG - 1));
            size_t n = run_pages;
            if ((size_t)(a - mem) / PG + n > pages) {
                n = pages - (size_t)(a - mem) / PG;
            }
            wp(a, n * PG, 0);
        }
    }
    return NULL;
}

static void pass(void) {
    for (size_t i = 0; i < pages; i++) {
        ((volatile char *)mem)[i * PG] = (char)i;
    }
}

int main(int argc, char **argv) {
    pages = argc > 1 ? strtoul(argv[1], NULL, 10) : 4096;
    int rounds = argc > 2 ? atoi(argv[2]) : 10;
    mem = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(mem, 1, pages * PG);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    double tp = 0, tw = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        mprotect(mem, pages * PG, PROT_READ);
        double t1 = now();
        pass();
        tp += t1 - t0;
        tw += now() - t1;
    }
    printf("mprotect+SIGSEGV        write %.3f us/page  protect %.4f us/page\n",
           tw * 1e6 / (double)(pages * (size_t)rounds),
           tp * 1e6 / (double)(pages * (size_t)rounds));

    uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (uffd < 0) {
        perror("userfaultfd");
        return 1;
    }
    struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP};
    struct uffdio_register reg = {
        .range = {.start = (uintptr_t)mem, .len = pages * PG},
        .mode = UFFDIO_REGISTER_MODE_WP,
    };
    if (ioctl(uffd, UFFDIO_API, &api) != 0 || ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) {
        perror("userfaultfd setup");
        return 1;
    }
    pthread_t th;
    pthread_create(&th, NULL, handler, NULL);
    size_t runs[2] = {1, RUN};
    for (int k = 0; k < 2; k++) {
        run_pages = runs[k];
        tp = tw = 0;
        for (int r = 0; r < rounds; r++) {
            double t0 = now();
            wp(mem, pages * PG, 1);
            double t1 = now();
            pass();
            tp += t1 - t0;
            tw += now() - t1;
        }
        printf("userfaultfd-wp, %2zu a fault write %.3f us/page  protect %.4f us/page\n",
               run_pages, tw * 1e6 / (double)(pages * (size_t)rounds),
               tp * 1e6 / (double)(pages * (size_t)rounds));
    }
    return 0;
}
