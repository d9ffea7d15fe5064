/* bench/cgjoin.c — what moving a process into a cgroup costs (#28).
 *
 *   cgjoin BASE FILE N GAP_US
 *
 * Makes BASE/nsbj_a and BASE/nsbj_b, then N times: forks a child that opens
 * BASE/nsbj_{a,b}/FILE (alternately) and writes "0" to it (moving itself),
 * timing the write alone; waits GAP_US between moves. Each sample (ms) is
 * appended to /tmp/cgj.out (one a line: bench/cgjoin-vm-guest.sh reads it)
 * and the median, p90 and largest are printed. On v2, FILE is cgroup.procs:
 * the write takes cgroup_threadgroup_rwsem for writing, and when such
 * writes come more than ~10-20 ms apart each waits for an RCU grace period;
 * on v1, FILE may be tasks (no threadgroup lock). Removes both after.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
        char dir[2][512];
        double *v;
        int n, gap_us, p[2];

        if (argc != 5 || (n = atoi(argv[3])) < 1 || (gap_us = atoi(argv[4])) < 0) {
                fprintf(stderr, "usage: cgjoin BASE FILE N GAP_US\n");
                return 2;
        }
        v = calloc((size_t) n, sizeof *v);
        for (int k = 0; k < 2; k++) {
                snprintf(dir[k], sizeof dir[k], "%s/nsbj_%c", argv[1], "ab"[k]);
                if (mkdir(dir[k], 0755) < 0) {
                        perror(dir[k]);
                        return 1;
                }
        }
        for (int i = 0; i < n; i++) {
                pid_t c;
                int st;

                if (pipe(p) < 0 || (c = fork()) < 0)
                        return 1;
                if (c == 0) {
                        char path[600];
                        double t0, d = -1;
                        int fd;

                        snprintf(path, sizeof path, "%s/%s", dir[i & 1], argv[2]);
                        fd = open(path, O_WRONLY | O_CLOEXEC);
                        t0 = now_ms();
                        if (fd >= 0 && write(fd, "0", 1) == 1)
                                d = now_ms() - t0;
                        _exit(write(p[1], &d, sizeof d) == sizeof d ? 0 : 1);
                }
                close(p[1]);
                if (read(p[0], &v[i], sizeof v[i]) != sizeof v[i] || v[i] < 0) {
                        fprintf(stderr, "cgjoin: move %d failed (%s/%s)\n", i, dir[i & 1], argv[2]);
                        return 1;
                }
                close(p[0]);
                waitpid(c, &st, 0);
                usleep((useconds_t) gap_us);
        }
        FILE *out = fopen("/tmp/cgj.out", "a");
        for (int i = 0; out && i < n; i++)
                fprintf(out, "%f\n", v[i]);
        if (out)
                fclose(out);
        qsort(v, (size_t) n, sizeof *v, cmp);
        printf("%s %s, %d moves %d us apart: median %.3f ms, p90 %.3f, max %.3f\n", argv[1], argv[2], n, gap_us,
               v[n / 2], v[n * 9 / 10], v[n - 1]);
        for (int k = 0; k < 2; k++)
                rmdir(dir[k]);
        return 0;
}
