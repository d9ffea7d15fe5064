/* bench/ns_floor.c — the least a fresh-namespace sandbox can cost.
 *
 *   ns_floor PROGRAM [ARG...]
 *
 * clone3 into new user, mount, pid, net, ipc, uts and cgroup namespaces (the
 * set every nsbox run gets), exec PROGRAM there, wait, exit with its status.
 * Nothing else: no id maps, mounts, limits, filters or supervision. It is not
 * a sandbox (the program sees the host's files); bench/batch.sh times it only
 * to show what the kernel's namespace work alone adds to a run, the floor
 * under any tool that gives each job fresh namespaces.
 */
#define _GNU_SOURCE
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        struct clone_args args = {
                .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                         CLONE_NEWCGROUP,
                .exit_signal = SIGCHLD,
        };
        int status;
        pid_t pid;

        if (argc < 2) {
                fprintf(stderr, "usage: ns_floor PROGRAM [ARG...]\n");
                return 125;
        }
        pid = (pid_t) syscall(SYS_clone3, &args, sizeof args);
        if (pid < 0) {
                perror("ns_floor: clone3 with seven new namespaces");
                return 125;
        }
        if (pid == 0) {
                execv(argv[1], argv + 1);
                perror("ns_floor: execv");
                _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0)
                ;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
