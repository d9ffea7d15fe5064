/* image/image_la.c — libarchive, bound at first use (image_internal.h says
 * why not at link time). */
#include "image/image_internal.h"
#include "image/image_la.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

/* The soname Debian's libarchive13 ships (and every libarchive 3.x). */
#define LA_SONAME "libarchive.so.13"

#define BIND(field, sym)                                                         \
        do {                                                                     \
                if (!(*(void **) &la->field = dlsym(la->handle, #sym)))          \
                        goto missing;                                            \
        } while (0)

int img_la_load(struct img_la *la, struct nsb_error *e)
{
        if (la->handle)
                return 0;
        if (!(la->handle = dlopen(LA_SONAME, RTLD_NOW | RTLD_LOCAL)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT,
                                "--image needs libarchive to read images: %s (Debian: apt install libarchive13)",
                                dlerror());
        BIND(read_new, archive_read_new);
        BIND(support_filter_all, archive_read_support_filter_all);
        BIND(support_format_tar, archive_read_support_format_tar);
        BIND(open_fd, archive_read_open_fd);
        BIND(read_open, archive_read_open);
        BIND(next_header, archive_read_next_header);
        BIND(data_block, archive_read_data_block);
        BIND(error_string, archive_error_string);
        BIND(read_free, archive_read_free);
        BIND(entry_pathname, archive_entry_pathname);
        BIND(entry_filetype, archive_entry_filetype);
        BIND(entry_perm, archive_entry_perm);
        BIND(entry_size, archive_entry_size);
        BIND(entry_hardlink, archive_entry_hardlink);
        BIND(entry_symlink, archive_entry_symlink);
        BIND(entry_mtime_is_set, archive_entry_mtime_is_set);
        BIND(entry_mtime, archive_entry_mtime);
        BIND(entry_mtime_nsec, archive_entry_mtime_nsec);
        return 0;
missing:
        img_la_unload(la);
        return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "%s lacks a function nsbox needs: %s", LA_SONAME, dlerror());
}

void img_la_unload(struct img_la *la)
{
        if (la->handle)
                dlclose(la->handle);
        memset(la, 0, sizeof *la);
}
