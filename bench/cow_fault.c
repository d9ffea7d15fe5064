/* bench/cow_fault.c — what one copy-on-write page costs on this host.
 *
 *   cc -O2 -o cow_fault bench/cow_fault.c && ./cow_fault [PAGES=500] [STRIDE=3]
 *
 * A warm job is a fork of the zygote: every page of the zygote it writes
 * (an object's reference count is enough) is copied for it, in a fault.
 * This maps PAGES pages, every STRIDE-th of a region written once, forks,
 * and in the child writes one byte to each (a fault each), or asks for
 * them with one MADV_POPULATE_WRITE each, or (STRIDE 1) with one for the
 * whole region; 20 forks each, the fastest printed, in microseconds a
 * page. Asserts nothing; docs/performance.md quotes it (#28).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif

enum how { BY_FAULT, BY_MADVISE_EACH, BY_MADVISE_ALL };

static double now_us(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec * 1e6 + (double) t.tv_nsec / 1e3;
}

/* In a child: copy the pages, as @how says; the time it took, in µs. */
static double copy_pages(char *p, size_t pages, size_t stride, enum how how)
{
        const size_t page = (size_t) sysconf(_SC_PAGESIZE);
        double t = now_us();

        if (how == BY_MADVISE_ALL)
                (void) madvise(p, pages * page, MADV_POPULATE_WRITE);
        for (size_t i = 0; how != BY_MADVISE_ALL && i < pages; i++) {
                if (how == BY_FAULT)
                        p[i * stride * page]++;
                else
                        (void) madvise(p + i * stride * page, page, MADV_POPULATE_WRITE);
        }
        return now_us() - t;
}

int main(int argc, char **argv)
{
        static const char *const name[] = { "a write fault each", "MADV_POPULATE_WRITE each", "one MADV_POPULATE_WRITE" };
        const size_t page = (size_t) sysconf(_SC_PAGESIZE);
        size_t pages = argc > 1 ? strtoul(argv[1], NULL, 10) : 500;
        size_t stride = argc > 2 ? strtoul(argv[2], NULL, 10) : 3;
        size_t len = pages * stride * page;
        char *p;

        if (pages == 0 || stride == 0) {
                fprintf(stderr, "usage: cow_fault [PAGES>0] [STRIDE>0]\n");
                return 2;
        }
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        memset(p, 1, len);
        for (enum how how = BY_FAULT; how <= BY_MADVISE_ALL; how++) {
                double best = 1e12;

                if (how == BY_MADVISE_ALL && stride != 1)
                        continue;
                for (int r = 0; r < 20; r++) {
                        int fd[2];
                        double d = 0;
                        pid_t c;

                        if (pipe(fd) < 0 || (c = fork()) < 0) {
                                perror("pipe/fork");
                                return 1;
                        }
                        if (c == 0) {
                                d = copy_pages(p, pages, stride, how);
                                _exit(write(fd[1], &d, sizeof d) == (ssize_t) sizeof d ? 0 : 1);
                        }
                        if (read(fd[0], &d, sizeof d) != (ssize_t) sizeof d)
                                d = 1e12;
                        (void) waitpid(c, NULL, 0);
                        close(fd[0]);
                        close(fd[1]);
                        if (d < best)
                                best = d;
                }
                printf("%-26s %zu pages (every %zu): %.1f us, %.2f us a page\n", name[how], pages, stride, best,
                       best / (double) pages);
        }
        return 0;
}
