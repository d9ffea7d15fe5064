/* util/safedir_plan.c — the pure half of util/safedir.h. */
#include "util/safedir.h"

#include <sys/stat.h>

enum nsb_dir_verdict nsb_dir_verdict(uid_t owner, mode_t mode, uid_t caller)
{
        if (owner != 0 && owner != caller)
                return NSB_DIR_FOREIGN;
        /* Sticky: others may add entries but rename only their own (/tmp). */
        if ((mode & (S_IWGRP | S_IWOTH)) && !(mode & S_ISVTX))
                return NSB_DIR_WRITABLE;
        return NSB_DIR_OK;
}

const char *nsb_dir_verdict_text(enum nsb_dir_verdict v)
{
        switch (v) {
        case NSB_DIR_FOREIGN:
                return "is owned by another user";
        case NSB_DIR_WRITABLE:
                return "is writable by others and not sticky";
        case NSB_DIR_OK:
                break;
        }
        return "";
}
