/* profile/elf_parse.c — DT_NEEDED, DT_RUNPATH and PT_INTERP from an ELF64
 * image in memory, and a RUNPATH entry's $ORIGIN expanded. Pure. Every offset read from the file is bounds-checked
 * against the buffer before use: the image may be anything. */
#include "profile/profile.h"
#include "profile/profile_internal.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static bool in_bounds(size_t len, uint64_t off, uint64_t size)
{
        return off <= len && size <= len - off;
}

static int push(char ***v, size_t *n, const char *s, size_t slen)
{
        char **nv = realloc(*v, (*n + 1) * sizeof **v);
        if (!nv)
                return -ENOMEM;
        *v = nv;
        if (!(nv[*n] = strndup(s, slen)))
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* File offset of virtual address @vaddr through the PT_LOAD segments. */
static int vaddr_to_off(const Elf64_Phdr *ph, size_t nph, uint64_t vaddr, uint64_t *ret)
{
        for (size_t i = 0; i < nph; i++) {
                if (ph[i].p_type != PT_LOAD)
                        continue;
                if (vaddr >= ph[i].p_vaddr && vaddr - ph[i].p_vaddr < ph[i].p_filesz) {
                        *ret = ph[i].p_offset + (vaddr - ph[i].p_vaddr);
                        return 0;
                }
        }
        return -ENOENT;
}

int elf_expand_origin(const char *dir, const char *origin, char *ret, size_t size)
{
        size_t at = 0;

        if (size == 0)
                return -ENAMETOOLONG;
        for (const char *p = dir; *p;) {
                /* glibc's is_dst(): the bare token must end the entry or a
                 * path component ("$ORIGINAL" is a literal name) */
                size_t skip = strncmp(p, "${ORIGIN}", 9) == 0                             ? 9
                              : strncmp(p, "$ORIGIN", 7) == 0 && (p[7] == '\0' || p[7] == '/') ? 7
                                                                                          : 0;
                const char *piece = skip ? origin : p;
                size_t n = skip ? strlen(origin) : 1;

                if (at + n >= size)
                        return -ENAMETOOLONG;
                memcpy(ret + at, piece, n);
                at += n;
                p += skip ? skip : 1;
        }
        ret[at] = '\0';
        return 0;
}

void elf_deps_free(struct elf_deps *d)
{
        if (!d)
                return;
        free(d->interp);
        for (size_t i = 0; i < d->n_needed; i++)
                free(d->needed[i]);
        free(d->needed);
        for (size_t i = 0; i < d->n_runpath; i++)
                free(d->runpath[i]);
        free(d->runpath);
        memset(d, 0, sizeof *d);
}

int elf_deps_parse(const void *buf, size_t len, struct elf_deps *ret, struct nsb_error *e)
{
        const unsigned char *b = buf;
        const Elf64_Ehdr *eh = buf;
        const Elf64_Phdr *ph;
        const Elf64_Dyn *dyn = NULL;
        size_t ndyn = 0;
        uint64_t strtab_off = 0, strsz = 0;
        bool have_strtab = false;
        int r;

        memset(ret, 0, sizeof *ret);
        if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOEXEC, "not an ELF file");
        if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOEXEC, "not a 64-bit little-endian ELF file");
        if (eh->e_phentsize != sizeof *ph || !in_bounds(len, eh->e_phoff, (uint64_t) eh->e_phnum * sizeof *ph))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOEXEC, "ELF program headers out of bounds");
        ph = (const Elf64_Phdr *) (b + eh->e_phoff);

        for (size_t i = 0; i < eh->e_phnum; i++) {
                if (!in_bounds(len, ph[i].p_offset, ph[i].p_filesz))
                        continue;
                if (ph[i].p_type == PT_INTERP && ph[i].p_filesz > 1) {
                        const char *s = (const char *) b + ph[i].p_offset;
                        size_t slen = strnlen(s, ph[i].p_filesz);
                        free(ret->interp);
                        if (!(ret->interp = strndup(s, slen)))
                                goto oom;
                } else if (ph[i].p_type == PT_DYNAMIC) {
                        dyn = (const Elf64_Dyn *) (b + ph[i].p_offset);
                        ndyn = ph[i].p_filesz / sizeof *dyn;
                }
        }
        if (!dyn)
                return 0;   /* static: nothing needed */
        for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
                if (dyn[i].d_tag == DT_STRTAB)
                        have_strtab = vaddr_to_off(ph, eh->e_phnum, dyn[i].d_un.d_ptr, &strtab_off) == 0;
                else if (dyn[i].d_tag == DT_STRSZ)
                        strsz = dyn[i].d_un.d_val;
        }
        if (!have_strtab || !in_bounds(len, strtab_off, strsz)) {
                elf_deps_free(ret);
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOEXEC, "ELF string table out of bounds");
        }
        for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
                uint64_t off = dyn[i].d_un.d_val;
                const char *s;
                size_t slen;

                if (dyn[i].d_tag != DT_NEEDED && dyn[i].d_tag != DT_RUNPATH && dyn[i].d_tag != DT_RPATH)
                        continue;
                if (off >= strsz)
                        continue;
                s = (const char *) b + strtab_off + off;
                slen = strnlen(s, strsz - off);
                if (dyn[i].d_tag == DT_NEEDED) {
                        r = push(&ret->needed, &ret->n_needed, s, slen);
                } else {
                        /* colon-separated list */
                        const char *p = s, *end = s + slen;
                        r = 0;
                        while (p < end && r == 0) {
                                const char *colon = memchr(p, ':', (size_t) (end - p));
                                size_t n = colon ? (size_t) (colon - p) : (size_t) (end - p);
                                if (n > 0)
                                        r = push(&ret->runpath, &ret->n_runpath, p, n);
                                p += n + 1;
                        }
                }
                if (r < 0)
                        goto oom;
        }
        return 0;
oom:
        elf_deps_free(ret);
        return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
}
