/* util/cmdline.c — see cmdline.h. */
#include "util/cmdline.h"

#include <string.h>

static char *area;
static size_t area_len;

void cmdline_remember(int argc, char **argv)
{
        /* The kernel lays the strings out back to back, argv[0] first: the
         * area /proc/<pid>/cmdline shows ends after the last one's NUL. */
        if (argc < 1 || !argv[0])
                return;
        area = argv[0];
        area_len = (size_t) (argv[argc - 1] + strlen(argv[argc - 1]) + 1 - argv[0]);
}

void cmdline_hide(void)
{
        static const char title[] = "nsbox-init";

        if (!area)
                return;
        memset(area, 0, area_len);
        memcpy(area, title, area_len < sizeof title ? area_len - 1 : sizeof title - 1);
        /* A last byte that is not NUL makes the kernel show the area up to
         * its first NUL (the setproctitle convention), not its whole length:
         * the length of nsbox's command line stays hidden too. */
        if (area_len > sizeof title)
                area[area_len - 1] = ' ';
}
