/* cgroup/proc_tree_cpu.c — the tree's CPU time over looks (proc_tree.h). Pure. */
#include "cgroup/proc_tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int by_pid(const void *a, const void *b)
{
        pid_t x = ((const struct tree_cpu_proc *) a)->pid, y = ((const struct tree_cpu_proc *) b)->pid;

        return (x > y) - (x < y);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
        return a < b ? a : b;
}

/* Walks the two sorted lists: the time of the processes of the last look
 * that are gone, and the growth of the waited-for children's time of those
 * still there (the same pid and start time: a reused pid is another one). */
static void compare(const struct tree_cpu *t, const struct tree_cpu_proc *now, size_t n, uint64_t *ret_gone,
                    uint64_t *ret_growth)
{
        size_t i = 0, j = 0;

        *ret_gone = *ret_growth = 0;
        while (i < t->n_live) {
                const struct tree_cpu_proc *was = &t->live[i];

                while (j < n && now[j].pid < was->pid)
                        j++;
                if (j < n && now[j].pid == was->pid && now[j].start == was->start) {
                        if (now[j].kids > was->kids)
                                *ret_growth += now[j].kids - was->kids;
                } else {
                        *ret_gone += was->own + was->kids;
                }
                i++;
        }
}

int tree_cpu_look(struct tree_cpu *t, struct tree_cpu_proc *now, size_t n)
{
        uint64_t gone, growth, m, sum = 0;

        qsort(now, n, sizeof *now, by_pid);
        if (n > t->cap) {
                struct tree_cpu_proc *p = realloc(t->live, n * sizeof *p);
                if (!p)
                        return -ENOMEM;
                t->live = p;
                t->cap = n;
        }
        compare(t, now, n, &gone, &growth);
        /* What the last look left pending meets what this one found: a
         * child reaped just after its parent was read (gone first, growth
         * next), or just before it was read itself (growth first, counted
         * twice until it is gone). */
        m = min_u64(t->pending_gone, growth);
        t->pending_gone -= m;
        growth -= m;
        m = min_u64(t->pending_growth, gone);
        t->pending_growth -= m;
        gone -= m;
        /* Gone for two looks and no cutime took it in: reaped unwaited. */
        t->lost += t->pending_gone;
        /* Growth that nothing vanished for in two looks: children no look
         * saw; already in the sum (their parent's cutime). */
        m = min_u64(gone, growth);
        t->pending_gone = gone - m;
        t->pending_growth = growth - m;

        for (size_t k = 0; k < n; k++)
                sum += now[k].own + now[k].kids;
        memcpy(t->live, now, n * sizeof *now);
        t->n_live = n;
        t->looks++;
        /* Growth still unmatched may be a child counted twice (in its
         * parent's cutime and as itself): left out until the next look. */
        sum += t->lost + t->pending_gone;
        t->total = sum > t->pending_growth ? sum - t->pending_growth : 0;
        return 0;
}

void tree_cpu_free(struct tree_cpu *t)
{
        free(t->live);
        memset(t, 0, sizeof *t);
}
