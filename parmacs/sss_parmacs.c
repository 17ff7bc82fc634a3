/*
 * PARMACS on SSS: see sss_parmacs.h. Compiled into the program, so that
 * the linker's bounds of the executable's .data and .bss are the
 * program's own.
 */
#define _GNU_SOURCE
#include "sss_parmacs.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sss.h>

/* Bounds GNU ld (and glibc's crt1) define for every executable. */
extern char __data_start[], _edata[], __bss_start[], _end[];
extern char **environ;

/* Control segment of each task (8-byte words, then the snapshot). */
enum {
    W_CMD = 0,     /* commands posted to this task (it waits on it) */
    W_KIND = 1,    /* CMD_CREATE or CMD_EXIT */
    W_FN = 2,      /* function to run */
    W_FROM = 3,    /* creator's rank */
    W_DONE = 4,    /* rank 0: created functions that returned */
    W_NEXT = 5,    /* rank 0: CREATEs handed out */
    W_LOCKS = 6,   /* rank 0: lock ids handed out */
    W_WAKE = 7,    /* condition-variable wake-ups of this task */
    CTL_WORDS = 8, /* header size in words; then, on rank 0, one word a
                    * task: the condition variable it waits on (its
                    * address, 0 if none); then the snapshot */
};
enum { CMD_CREATE = 1, CMD_EXIT = 2 };

/* Lock id kept for CREATE's release/acquire; LOCKINIT hands out the rest. */
#define PM_SYNC_LOCK 255u
#define PM_MAX_SKIP 64
/* G_MALLOCs below PM_SMALL bytes share pages: carved from a chunk of
 * PM_CHUNK bytes per task, so that programs allocating many small
 * objects (Water: one per molecule and direction) stay within the heap's
 * table of allocations. */
#define PM_SMALL ((size_t)2048)
#define PM_CHUNK ((size_t)1 << 20)
#define PM_ALIGN ((size_t)16)
/* Snapshots move in pieces below the largest single MBCF operation. */
#define PM_PUT_CHUNK ((size_t)8 << 20)

struct pm_skip {
    uintptr_t lo, hi;
};

/* Everything the runtime keeps lives here, in thread-local storage of
 * the main thread (the only one that calls the runtime): not among the
 * executable's globals, which CREATE's snapshot overwrites and trap mode
 * shares. */
static __thread struct pm_state {
    sss_task_h task;
    sss_dsm_h dsm;
    uint32_t rank, size;
    sss_seg_h ctl;
    volatile uint64_t *w;     /* this task's control words */
    sss_seg_info_t *infos;    /* every task's control segment */
    uint32_t *order;          /* CREATE order: round-robin over hosts */
    uint32_t norder;
    size_t snap_len;          /* .data + .bss bytes */
    unsigned snap_word;       /* where the snapshot starts, in words */
    uint64_t *cvtab;          /* a copy of rank 0's waiter table */
    int splash3;              /* a two-argument CREATE was seen */
    char *small_next;         /* this task's chunk for small G_MALLOCs */
    size_t small_left;
    struct pm_skip skip[PM_MAX_SKIP];
    int nskip;
    sss_dsm_placement_t place;
    uint32_t place_param;
    int trap;
    uint32_t held[PM_SYNC_LOCK]; /* this task's holds of each lock id */
    int adopted;              /* globals are a shared range */
    uintptr_t exe_base;
    uintptr_t relro_end;      /* end of the executable's read-only data */
} S;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "parmacs: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void check(sss_status_t st, const char *what)
{
    if (st != SSS_OK)
        die("%s: %s (%s)", what, sss_status_string(st), sss_last_error());
}

/* Same addresses in every task: function pointers, string literals and
 * libraries must agree, so address-space randomization is switched off by
 * re-executing once with ADDR_NO_RANDOMIZE. */
static void no_aslr(void)
{
    int pers = personality(0xffffffff);
    if (pers == -1 || (pers & ADDR_NO_RANDOMIZE))
        return;
    FILE *f = fopen("/proc/sys/kernel/randomize_va_space", "r");
    if (f) {
        int v = -1;
        int n = fscanf(f, "%d", &v);
        fclose(f);
        if (n == 1 && v == 0)
            return;
    }
    if (getenv("SSS_PARMACS_REEXEC"))
        die("address-space randomization is still on after re-executing; "
            "CREATE needs the same addresses in every task");
    if (personality((unsigned long)pers | ADDR_NO_RANDOMIZE) == -1)
        die("personality(ADDR_NO_RANDOMIZE): %s", strerror(errno));
    int fd = open("/proc/self/cmdline", O_RDONLY);
    if (fd < 0)
        die("/proc/self/cmdline: %s", strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            die("out of memory");
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0)
            die("/proc/self/cmdline: %s", strerror(errno));
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    close(fd);
    size_t argc = 0;
    for (size_t i = 0; i < len; i++)
        argc += buf[i] == '\0';
    char **argv = calloc(argc + 1, sizeof *argv);
    if (!argv)
        die("out of memory");
    for (size_t i = 0, a = 0; i < len && a < argc; a++) {
        argv[a] = buf + i;
        i += strlen(buf + i) + 1;
    }
    setenv("SSS_PARMACS_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    die("re-executing /proc/self/exe: %s", strerror(errno));
}

static int find_exe(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    S.exe_base = info->dlpi_addr; /* the first object is the executable */
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
            S.relro_end = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
                         info->dlpi_phdr[i].p_memsz;
    return 1;
}

static void skip_add(uintptr_t lo, uintptr_t hi)
{
    if (hi <= lo)
        return;
    if (S.nskip == PM_MAX_SKIP)
        die("more than %d copy-relocated objects", PM_MAX_SKIP);
    S.skip[S.nskip].lo = lo;
    S.skip[S.nskip].hi = hi;
    S.nskip++;
}

/* Objects the dynamic linker copied into the executable (stdout, environ,
 * optind, ...) hold values of this process, not the program's: a
 * snapshot leaves them alone. They are the targets of R_X86_64_COPY
 * relocations, read from the executable file. */
static void find_copy_relocs(void)
{
    dl_iterate_phdr(find_exe, NULL);
    int fd = open("/proc/self/exe", O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        die("/proc/self/exe: %s", strerror(errno));
    unsigned char *img = malloc((size_t)st.st_size);
    size_t got = 0;
    while (img && got < (size_t)st.st_size) {
        ssize_t n = read(fd, img + got, (size_t)st.st_size - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!img || got != (size_t)st.st_size || got < sizeof(Elf64_Ehdr))
        die("cannot read /proc/self/exe");
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > got)
        die("/proc/self/exe is not a 64-bit ELF file");
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_RELA || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *sym = &sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > got || sym->sh_offset + sym->sh_size > got)
            continue;
        const Elf64_Rela *r = (const Elf64_Rela *)(img + sh[i].sh_offset);
        const Elf64_Sym *syms = (const Elf64_Sym *)(img + sym->sh_offset);
        size_t nsyms = sym->sh_size / sizeof(Elf64_Sym);
        for (size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Rela); k++) {
            if (ELF64_R_TYPE(r[k].r_info) != R_X86_64_COPY)
                continue;
            size_t s = ELF64_R_SYM(r[k].r_info);
            uint64_t size = s < nsyms ? syms[s].st_size : 8;
            uintptr_t lo = S.exe_base + r[k].r_offset;
            skip_add(lo, lo + (size ? size : 8));
        }
    }
    free(img);
    /* Belt and braces for the one object that always differs. */
    skip_add((uintptr_t)&environ, (uintptr_t)&environ + sizeof environ);
}

#define PM_PAGE ((uintptr_t)4096)
/* The largest private range sss_dsm_adopt() keeps (libsss's note log,
 * which the inline notes of sss.h copy into the program, is over 4 KiB). */
#define PM_MAX_KEEP ((uintptr_t)64 << 10)

/* On more than one task: the executable's writable data (.data and
 * .bss, whole pages past its read-only part) becomes a shared range
 * homed at rank 0 (sss_dsm_adopt), so globals behave as threads see
 * them, under release consistency; their stores are trapped in note mode
 * too. The copy-relocated objects stay each task's own. Where the heap
 * cannot adopt (UDSM, no write-protect faults) globals keep CREATE's
 * snapshot. */
static void adopt_globals(void)
{
    uintptr_t lo = (uintptr_t)__data_start & ~(PM_PAGE - 1);
    uintptr_t relro = (S.relro_end + PM_PAGE - 1) & ~(PM_PAGE - 1);
    if (lo < relro)
        lo = relro;
    uintptr_t hi = ((uintptr_t)_end + PM_PAGE - 1) & ~(PM_PAGE - 1);
    if (hi <= lo)
        return;
    size_t keep[2 * PM_MAX_SKIP];
    size_t nkeep = 0;
    for (int i = 0; i < S.nskip; i++) {
        uintptr_t a = S.skip[i].lo < lo ? lo : S.skip[i].lo;
        uintptr_t b = S.skip[i].hi > hi ? hi : S.skip[i].hi;
        if (a >= b || b - a > PM_MAX_KEEP) /* larger ones are libraries' tables */
            continue;
        keep[2 * nkeep] = a;
        keep[2 * nkeep + 1] = b - a;
        nkeep++;
    }
    check(sss_dsm_adopt(S.dsm, (void *)lo, hi - lo, keep, nkeep), "sharing the globals");
    S.adopted = 1;
}

static size_t data_len(void) { return (size_t)(_edata - __data_start); }
static size_t bss_len(void) { return (size_t)(_end - __bss_start); }

static void snapshot(char *buf)
{
    memcpy(buf, __data_start, data_len());
    memcpy(buf + data_len(), __bss_start, bss_len());
}

/* Installs a snapshot over this task's globals, keeping the skipped
 * objects and this runtime's state. Only this thread uses them. */
static void install(const char *buf)
{
    struct pm_state keep = S;
    unsigned char saved[PM_MAX_SKIP][256]; /* larger objects agree anyway */
    size_t saved_len[PM_MAX_SKIP];
    for (int i = 0; i < keep.nskip; i++) {
        saved_len[i] = keep.skip[i].hi - keep.skip[i].lo;
        if (saved_len[i] > sizeof saved[i])
            saved_len[i] = sizeof saved[i];
        memcpy(saved[i], (const void *)keep.skip[i].lo, saved_len[i]);
    }
    memcpy(__data_start, buf, data_len());
    memcpy(__bss_start, buf + data_len(), bss_len());
    for (int i = 0; i < keep.nskip; i++)
        memcpy((void *)keep.skip[i].lo, saved[i], saved_len[i]);
    S = keep;
}

static sss_raddr_t ctl_at(uint32_t rank, unsigned word)
{
    return sss_seg_raddr(&S.infos[rank], (uint64_t)word * 8);
}

/* Waits for the answer of an atomic issued with status @p st and request
 * @p req; the old value it left in @p old. */
static uint64_t answer(sss_status_t st, sss_request_h req, const uint64_t *old, const char *what)
{
    check(st, what);
    check(sss_request_wait(req), what);
    sss_request_free(req);
    return *old;
}

static uint64_t fetch_add(uint32_t rank, unsigned word, uint64_t v)
{
    uint64_t old = 0;
    sss_request_h req = NULL;
    sss_status_t st = sss_fetch_add(S.task, ctl_at(rank, word), v, NULL, &old, &req);
    return answer(st, req, &old, "fetch_add");
}

static uint64_t cas(uint32_t rank, unsigned word, uint64_t expected, uint64_t desired)
{
    uint64_t old = 0;
    sss_request_h req = NULL;
    sss_status_t st = sss_cas(S.task, ctl_at(rank, word), expected, desired, NULL, &old, &req);
    return answer(st, req, &old, "cas");
}

/* An answered write: the word is in place at @p rank when this returns
 * (a plain WRITE completes when sent), so what this task does next
 * through another task cannot overtake it. */
static void swap_in(uint32_t rank, unsigned word, uint64_t v)
{
    uint64_t old = 0;
    sss_request_h req = NULL;
    sss_status_t st = sss_swap(S.task, ctl_at(rank, word), v, NULL, &old, &req);
    (void)answer(st, req, &old, "swap");
}

static void put(uint32_t rank, unsigned word, const void *buf, size_t len)
{
    size_t off = 0;
    do {
        size_t n = len - off < PM_PUT_CHUNK ? len - off : PM_PUT_CHUNK;
        sss_request_h req = NULL;
        sss_raddr_t at = sss_seg_raddr(&S.infos[rank], (uint64_t)word * 8 + off);
        check(sss_write(S.task, at, (const char *)buf + off, n, NULL, &req), "write");
        if (req) {
            check(sss_request_wait(req), "write");
            sss_request_free(req);
        }
        off += n;
    } while (off < len);
}

static void get(uint32_t rank, unsigned word, void *buf, size_t len)
{
    sss_request_h req = NULL;
    check(sss_read(S.task, ctl_at(rank, word), len, NULL, buf, &req), "read");
    check(sss_request_wait(req), "read");
    sss_request_free(req);
}

/* Release then acquire through one lock: what this task wrote before is
 * at the homes, and what others released is seen. */
static void sync_point(void)
{
    check(sss_dsm_lock(S.dsm, PM_SYNC_LOCK), "lock");
    check(sss_dsm_unlock(S.dsm, PM_SYNC_LOCK), "unlock");
}

/* Ranks of the job in CREATE order: the first task of each host in host
 * order, then the second of each, ...; rank 0 (main) is not in it. */
static void creation_order(void)
{
    char node[64] = {0};
    const char *n = getenv("SSS_NODE");
    snprintf(node, sizeof node, "%s", n ? n : "");
    char *all = calloc(S.size, sizeof node);
    uint32_t *host = calloc(S.size, sizeof *host);
    uint32_t *nth = calloc(S.size, sizeof *nth);
    S.order = calloc(S.size, sizeof *S.order);
    if (!all || !host || !nth || !S.order)
        die("out of memory");
    check(sss_allgather(S.task, node, sizeof node, all), "allgather");
    uint32_t hosts = 0;
    for (uint32_t r = 0; r < S.size; r++) {
        uint32_t h = 0;
        while (h < r && memcmp(all + h * sizeof node, all + r * sizeof node, sizeof node) != 0)
            h++;
        host[r] = h == r ? hosts++ : host[h];
        nth[r] = 0;
        for (uint32_t q = 0; q < r; q++)
            nth[r] += host[q] == host[r];
    }
    /* Round-robin over hosts from rank 0's, whose first slot is main. */
    S.norder = 0;
    for (uint32_t k = 0; S.norder + 1 < S.size; k++)
        for (uint32_t i = 0; i < hosts; i++) {
            uint32_t h = (host[0] + i) % hosts;
            for (uint32_t r = 1; r < S.size; r++)
                if (host[r] == h && nth[r] == k)
                    S.order[S.norder++] = r;
        }
    free(all);
    free(host);
    free(nth);
}

static void placement_from_env(void)
{
    const char *p = getenv("SSS_PARMACS_PLACEMENT");
    S.place = SSS_DSM_FIRST_TOUCH;
    S.place_param = 0;
    if (!p || !*p || strcmp(p, "first_touch") == 0)
        return;
    if (strcmp(p, "block") == 0) {
        S.place = SSS_DSM_BLOCK;
    } else if (strncmp(p, "cyclic", 6) == 0) {
        S.place = SSS_DSM_CYCLIC;
        S.place_param = p[6] == ':' ? (uint32_t)strtoul(p + 7, NULL, 10) : 1;
        if (S.place_param == 0)
            S.place_param = 1;
    } else {
        die("SSS_PARMACS_PLACEMENT is first_touch, block or cyclic[:pages], not %s", p);
    }
}

static void finish(int code)
{
    fflush(NULL);
    check(sss_dsm_finalize(S.dsm), "dsm finalize");
    check(sss_finalize(S.task), "finalize");
    exit(code);
}

/* Tasks other than rank 0: run what CREATE sends until told to exit. */
static void serve(void)
{
    char *snap = (char *)S.w + (size_t)S.snap_word * 8;
    uint64_t handled = 0;
    for (;;) {
        check(sss_wait_u64(S.task, (const uint64_t *)&S.w[W_CMD], SSS_CMP_GT, handled),
              "wait");
        handled++;
        if (S.w[W_KIND] == CMD_EXIT)
            finish(0);
        void (*fn)(void) = (void (*)(void))(uintptr_t)S.w[W_FN];
        sync_point();
        if (!S.adopted)
            install(snap);
        fn();
        sync_point();
        fetch_add(0, W_DONE, 1);
    }
}

void sss_pm_init(void)
{
    if (S.dsm)
        return; /* already joined, before main */
    no_aslr();
    find_copy_relocs();
    placement_from_env();
    check(sss_init(&S.task), "init");
    S.rank = sss_task_rank(S.task);
    S.size = sss_task_size(S.task);
    check(sss_dsm_init(S.task, SSS_DSM_PROTOCOL_ENV, SSS_DSM_WRITES_ENV, &S.dsm), "dsm init");
    S.trap = sss_dsm_is_trap(S.dsm);
    const char *g = getenv("SSS_PARMACS_GLOBALS");
    int fork_globals = g && strcmp(g, "fork") == 0;
    if (g && *g && !fork_globals && strcmp(g, "shared") != 0)
        die("SSS_PARMACS_GLOBALS is shared or fork, not %s", g);
    if (S.size > 1 && !fork_globals && sss_dsm_can_adopt(S.dsm))
        adopt_globals();
    S.snap_len = S.adopted ? 0 : data_len() + bss_len();
    S.snap_word = CTL_WORDS + S.size;
    S.cvtab = calloc(S.size, sizeof *S.cvtab);
    if (!S.cvtab)
        die("out of memory");
    check(sss_seg_alloc(S.task, (size_t)S.snap_word * 8 + S.snap_len, SSS_PERM_ALL, &S.ctl),
          "segment");
    S.w = sss_seg_ptr(S.ctl);
    S.infos = calloc(S.size, sizeof *S.infos);
    if (!S.infos)
        die("out of memory");
    check(sss_seg_exchange(S.task, S.ctl, S.infos), "exchange");
    creation_order();
    if (S.rank != 0)
        serve();
}

/* A task started by `sss run` joins the job before main: the re-exec
 * without randomization happens before the program reads or prints
 * anything, tasks other than rank 0 never run main (so output before
 * MAIN_INITENV appears once), and G_MALLOC works before MAIN_INITENV
 * (Barnes allocates before it). Elsewhere MAIN_INITENV joins and fails
 * with the reason. */
__attribute__((constructor)) static void join_before_main(void)
{
    if (getenv("SSS_RANK"))
        sss_pm_init();
}

void sss_pm_end(int code)
{
    if (S.rank == 0) {
        uint64_t kind = CMD_EXIT;
        for (uint32_t r = 1; r < S.size; r++) {
            put(r, W_KIND, &kind, 8);
            fetch_add(r, W_CMD, 1);
        }
    }
    finish(code);
}

/* Starts @p count tasks running @p fn, each with this task's globals. */
static void create(void (*fn)(void), uint64_t count)
{
    if (count == 0)
        return;
    uint64_t first = fetch_add(0, W_NEXT, count);
    if (first + count > S.norder)
        die("CREATE of task %llu, but the job has only %u tasks (sss run -n)",
            (unsigned long long)(first + count + 1), S.size);
    char *buf = malloc(S.snap_len ? S.snap_len : 1);
    if (!buf)
        die("out of memory");
    if (S.snap_len)
        snapshot(buf);
    sync_point();
    for (uint64_t i = 0; i < count; i++) {
        uint32_t to = S.order[first + i];
        if (S.snap_len)
            put(to, S.snap_word, buf, S.snap_len);
        uint64_t hdr[3] = {CMD_CREATE, (uint64_t)(uintptr_t)fn, S.rank};
        put(to, W_KIND, hdr, sizeof hdr);
        fetch_add(to, W_CMD, 1);
    }
    free(buf);
}

void sss_pm_create(void (*fn)(void)) { create(fn, 1); }

void sss_pm_create_all(void (*fn)(void), long p)
{
    S.splash3 = 1;
    if (p < 1)
        die("CREATE(fn, %ld): the task count is at least 1", p);
    create(fn, (uint64_t)p - 1);
    fn();
}

void sss_pm_wait_for_end(long n)
{
    /* After CREATE(fn, P), WAIT_FOR_END(P) counts the creator. */
    if (S.splash3)
        n--;
    if (n <= 0)
        return;
    check(sss_wait_u64(S.task, (const uint64_t *)&S.w[W_DONE], SSS_CMP_GE, (uint64_t)n),
          "wait");
    sync_point();
}

void *sss_pm_malloc(size_t len)
{
    void *p = NULL;
    sss_pm_init();
    if (len < PM_SMALL) {
        size_t need = (len + PM_ALIGN - 1) & ~(PM_ALIGN - 1);
        if (need == 0)
            need = PM_ALIGN;
        if (S.small_left < need) {
            check(sss_dsm_malloc(S.dsm, PM_CHUNK, S.place, S.place_param, &p), "G_MALLOC");
            S.small_next = p;
            S.small_left = PM_CHUNK;
        }
        p = S.small_next;
        S.small_next += need;
        S.small_left -= need;
        return p;
    }
    check(sss_dsm_malloc(S.dsm, len, S.place, S.place_param, &p), "G_MALLOC");
    return p;
}

void *sss_pm_malloc_with(size_t len, int protocol)
{
    void *p = NULL;
    sss_pm_init();
    if (protocol < 0 || protocol > SSS_DSM_HOME_ONLY)
        die("G_MALLOC: protocol %d is not an sss_dsm_protocol_t", protocol);
    check(sss_dsm_malloc_with(S.dsm, len ? len : 1, S.place, S.place_param,
                              (sss_dsm_protocol_t)protocol, &p),
          "G_MALLOC");
    return p;
}

int sss_pm_protocol(const void *p)
{
    uint32_t proto;
    sss_pm_init();
    if (sss_dsm_protocol(S.dsm, p, &proto) != SSS_OK)
        return -1;
    return (int)proto;
}

sss_pm_lock_t sss_pm_lock_new(void) { return sss_pm_lock_new_n(1); }

sss_pm_lock_t sss_pm_lock_new_n(unsigned long n)
{
    uint64_t id = fetch_add(0, W_LOCKS, n);
    /* Ids beyond the table share locks: coarser, still correct. */
    return (sss_pm_lock_t)(id % PM_SYNC_LOCK);
}

void sss_pm_alock_init(sss_pm_lock_t *locks, unsigned long n)
{
    if (n == 0)
        return;
    sss_pm_lock_t base = sss_pm_lock_new_n(n);
    for (unsigned long i = 0; i < n; i++)
        locks[i] = (sss_pm_lock_t)((base + i) % PM_SYNC_LOCK);
    sss_pm_note(locks, sizeof *locks * n);
}

/* Lock ids wrap round (the heap has 256 locks; Radiosity makes
 * thousands), so two locks a task nests may share an id: the inner LOCK
 * then counts a hold of the id this task has, rather than wait for
 * itself, and the id is released at the last UNLOCK. Exclusion stays:
 * nobody else holds the id meanwhile. */
void sss_pm_lock(sss_pm_lock_t l)
{
    if (l < PM_SYNC_LOCK && S.held[l]++ > 0)
        return;
    check(sss_dsm_lock(S.dsm, l), "LOCK");
}

void sss_pm_unlock(sss_pm_lock_t l)
{
    if (l < PM_SYNC_LOCK && S.held[l] > 1) {
        S.held[l]--;
        return;
    }
    if (l < PM_SYNC_LOCK)
        S.held[l] = 0; /* also an UNLOCK of a lock another task took */
    check(sss_dsm_unlock(S.dsm, l), "UNLOCK");
}

void sss_pm_barrier(int n)
{
    if (n != (int)S.size)
        die("BARRIER of %d tasks in a job of %u: run with sss run -n %d", n, S.size, n);
    check(sss_dsm_barrier(S.dsm), "BARRIER");
}

void sss_pm_note(const void *addr, size_t len)
{
    if (S.trap || len == 0)
        return;
    /* Stores outside the heap (locals, private data) need no note. */
    (void)sss_dsm_note_write(S.dsm, addr, len);
}

void sss_pm_pause_set(sss_pm_pause_t *p, long v)
{
    sss_pm_lock(p->lock);
    p->flag = v;
    sss_pm_note((const void *)&p->flag, sizeof p->flag);
    sss_pm_unlock(p->lock);
}

void sss_pm_pause_wait(sss_pm_pause_t *p)
{
    for (;;) {
        sss_pm_lock(p->lock);
        long v = p->flag;
        sss_pm_unlock(p->lock);
        if (v)
            return;
        sched_yield();
    }
}

/* Condition variables: a waiter writes the variable's address into its
 * slot of rank 0's table before releasing the lock, then sleeps on its
 * W_WAKE word; a signal clears matching slots (CAS, so that two signals
 * never wake one waiter once) and bumps their W_WAKE. A signal after the
 * waiter released the lock therefore finds it, as pthreads promises. */
void sss_pm_cond_init(const void *cv) { (void)cv; }

void sss_pm_cond_wait(const void *cv, sss_pm_lock_t l)
{
    uint64_t seen = S.w[W_WAKE];
    uint64_t me = (uint64_t)(uintptr_t)cv;
    /* In rank 0's table before the lock goes: the signaller takes the lock
     * from its home and then reads the table, and a WRITE still on its way
     * to rank 0 would miss it, and the wake-up with it. */
    swap_in(0, CTL_WORDS + S.rank, me);
    sss_pm_unlock(l);
    check(sss_wait_u64(S.task, (const uint64_t *)&S.w[W_WAKE], SSS_CMP_GT, seen), "CONDVARWAIT");
    sss_pm_lock(l);
}

static void cond_wake(const void *cv, int all)
{
    uint64_t me = (uint64_t)(uintptr_t)cv;
    get(0, CTL_WORDS, S.cvtab, sizeof *S.cvtab * S.size);
    for (uint32_t r = 0; r < S.size; r++) {
        if (S.cvtab[r] != me || cas(0, CTL_WORDS + r, me, 0) != me)
            continue;
        fetch_add(r, W_WAKE, 1);
        if (!all)
            return;
    }
}

void sss_pm_cond_signal(const void *cv) { cond_wake(cv, 0); }

void sss_pm_cond_broadcast(const void *cv) { cond_wake(cv, 1); }

long sss_pm_getsub(sss_pm_gs_t *gs, long max)
{
    long sub;
    sss_pm_lock(gs->lock);
    if (gs->v <= max) {
        sub = gs->v++;
    } else {
        sub = -1;
        gs->v = 0;
    }
    sss_pm_note((const void *)&gs->v, sizeof gs->v);
    sss_pm_unlock(gs->lock);
    return sub;
}

void sss_pm_gs_init(sss_pm_gs_t *gs)
{
    gs->v = 0;
    gs->lock = sss_pm_lock_new();
    sss_pm_note(gs, sizeof *gs);
}

unsigned long sss_pm_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long)ts.tv_sec * 1000000ul + (unsigned long)ts.tv_nsec / 1000ul;
}

int sss_pm_rank(void) { return (int)S.rank; }

int sss_pm_size(void) { return (int)S.size; }
