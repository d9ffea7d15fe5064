/* image/image_la.h — libarchive's functions, bound with dlopen. */
#pragma once

#include "util/error.h"

/* image_la.c: libarchive, loaded with dlopen when an image is first read
 * (an archive's members, or a layer to unpack), never at nsbox's start:
 * linked, it and the libraries it needs (libxml2, ICU, ...) cost every
 * nsbox process, --image or not, about 3.7 ms at exec (11 more shared
 * objects; `nsbox --version` 1.7 -> 5.4 ms here). */
#include <archive.h>
#include <archive_entry.h>
#include <stdbool.h>
struct img_la {
        void *handle;
        __typeof__(archive_read_new) *read_new;
        /* gzip, zstd, bzip2, xz (docker's and the OCI spec's compressions),
         * each only when this libarchive has it built in (filters_builtin):
         * archive_read_support_filter_all would also run lrzip, lzop, grzip
         * ... found on PATH, outside any sandbox, on the image author's bytes */
        __typeof__(archive_read_support_filter_gzip) *support_filter[4];
        bool filter_builtin[4];
        __typeof__(archive_read_support_format_tar) *support_format_tar;
        __typeof__(archive_read_open_fd) *open_fd;
        __typeof__(archive_read_open) *read_open;
        __typeof__(archive_read_next_header) *next_header;
        __typeof__(archive_read_data_block) *data_block;
        __typeof__(archive_error_string) *error_string;
        __typeof__(archive_read_free) *read_free;
        __typeof__(archive_entry_pathname) *entry_pathname;
        __typeof__(archive_entry_filetype) *entry_filetype;
        __typeof__(archive_entry_perm) *entry_perm;
        __typeof__(archive_entry_size) *entry_size;
        __typeof__(archive_entry_hardlink) *entry_hardlink;
        __typeof__(archive_entry_symlink) *entry_symlink;
        __typeof__(archive_entry_mtime_is_set) *entry_mtime_is_set;
        __typeof__(archive_entry_mtime) *entry_mtime;
        __typeof__(archive_entry_mtime_nsec) *entry_mtime_nsec;
};
/* 0, or -ENOENT naming the library to install (stage config). Idempotent. */
#define IMG_LA_N_FILTERS 4
/* The built-in decompressors of @la enabled on @a (never an external program). */
void img_la_filters(const struct img_la *la, struct archive *a);
int img_la_load(struct img_la *la, struct nsb_error *e);
void img_la_unload(struct img_la *la);
