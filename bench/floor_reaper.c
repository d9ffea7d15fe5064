/* bench/floor_reaper.c — the least a job's PID 1 can be: reap every child,
 * exit with the first one's status. No C library (x86-64 system calls
 * written out), so that its exec maps 2 pages and runs no start-up code:
 * bench/warm_floor.c's "nsx" mode execs it as the job's init once the job
 * is forked, to measure an init that owns no copy of the interpreter (#28,
 * "one address space per job"). Built by bench/warm-floor.sh:
 *   cc -O2 -static -nostdlib -fno-stack-protector -o floor_reaper floor_reaper.c
 */
#include <sys/syscall.h>

static long syscall4(long n, long a, long b, long c, long d)
{
        register long r10 __asm__("r10") = d;
        long r;

        __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
        return r;
}

__attribute__((noreturn)) void _start(void)
{
        int status = 0, rc = 0, first = 1;

        while (syscall4(SYS_wait4, -1, (long) &status, 0, 0) > 0) {
                if (first)
                        rc = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f);
                first = 0;
        }
        for (;;)
                (void) syscall4(SYS_exit_group, rc, 0, 0, 0);
}
