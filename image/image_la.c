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

/* Which filters this libarchive has built in: ARCHIVE_WARN means it would
 * run the external program (gzip -d, zstd -d) instead. */
static void probe_filters(struct img_la *la)
{
        for (size_t i = 0; i < IMG_LA_N_FILTERS; i++) {
                struct archive *a = la->read_new();
                la->filter_builtin[i] = a && la->support_filter[i](a) == ARCHIVE_OK;
                if (a)
                        la->read_free(a);
        }
}

void img_la_filters(const struct img_la *la, struct archive *a)
{
        for (size_t i = 0; i < IMG_LA_N_FILTERS; i++)
                if (la->filter_builtin[i])
                        (void) la->support_filter[i](a);
}

int img_la_load(struct img_la *la, struct nsb_error *e)
{
        if (la->handle)
                return 0;
        if (!(la->handle = dlopen(LA_SONAME, RTLD_NOW | RTLD_LOCAL)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT,
                                "--image needs libarchive to read images: %s (Debian: apt install libarchive13)",
                                dlerror());
        BIND(read_new, archive_read_new);
        BIND(support_filter[0], archive_read_support_filter_gzip);
        BIND(support_filter[1], archive_read_support_filter_zstd);
        BIND(support_filter[2], archive_read_support_filter_bzip2);
        BIND(support_filter[3], archive_read_support_filter_xz);
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
        probe_filters(la);
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
