/* image/image_ref.c — parse an image reference. Pure. */
#include "image/image.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct {
        const char *prefix;
        enum img_transport t;
} transports[] = {
        { "oci:", IMG_OCI },
        { "oci-archive:", IMG_OCI_ARCHIVE },
        { "docker-archive:", IMG_DOCKER_ARCHIVE },
};

static bool is_hex64(const char *s)
{
        if (strlen(s) != 64)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

/* "@sha256:HEX" at the end of @body: cut off into @pin. The path part may
 * hold '@' itself, so only a well-formed suffix counts. */
static int cut_pin(char *body, char pin[65], const char *s, struct nsb_error *e)
{
        char *at = strrchr(body, '@');

        pin[0] = '\0';
        if (!at || strchr(at, '/'))
                return 0;       /* no pin: an '@' inside the path */
        if (strncmp(at + 1, "sha256:", 7) != 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--image '%s': a pin is @sha256:HEX (64 lowercase hex digits)", s);
        if (!is_hex64(at + 8))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--image '%s': the pin must be sha256: and 64 lowercase hex digits", s);
        memcpy(pin, at + 8, 65);
        *at = '\0';
        return 0;
}

/* [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}: a docker tag (distribution's grammar). */
static bool docker_tag_ok(const char *t)
{
        size_t n = strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-");

        return n && !t[n] && n <= 128 && t[0] != '.' && t[0] != '-';
}

/* A registry host: letters, digits, '.', '-' (no IPv6 literal). */
static bool docker_host_ok(const char *h, size_t n)
{
        return n && strspn(h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") >= n;
}

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789._-"

/* NAME (@n bytes, followed by a byte outside every set here): [HOST[:PORT]/]PATH,
 * PATH's components lowercase letters, digits, '.', '_', '-', none empty; a
 * first component with a port or a capital is the registry HOST. */
static bool docker_name_ok(const char *name, size_t n)
{
        const char *p = name, *end = name + n, *slash = memchr(name, '/', n);

        if (slash) {
                const char *colon = memchr(name, ':', (size_t) (slash - name));
                size_t digits = colon ? strspn(colon + 1, "0123456789") : 0;

                if (colon || strspn(name, NAME_CHARS) < (size_t) (slash - name)) {
                        if (!docker_host_ok(name, (size_t) ((colon ? colon : slash) - name)) ||
                            (colon && (!digits || digits > 5 || colon + 1 + digits != slash)))
                                return false;
                        p = slash + 1;
                }
        }
        if (p == end)
                return false;
        for (;;) {
                const char *c = memchr(p, '/', (size_t) (end - p));
                size_t len = (size_t) ((c ? c : end) - p);

                if (!len || strspn(p, NAME_CHARS) < len)
                        return false;
                if (!c)
                        return true;
                p = c + 1;
        }
}

/* docker-archive:FILE:NAME:TAG. TAG follows the last colon; NAME is a
 * docker name, which may begin with a registry HOST:PORT (`docker save
 * localhost:5000/app:1.0` records that in RepoTags): NAME then starts at
 * the colon before HOST, not at the port's. Returns the colon that ends
 * FILE, or NULL with @e set. */
static char *docker_split(char *body, char *tag_colon, const char *s, struct nsb_error *e)
{
        char *start, *before;

        if (!docker_tag_ok(tag_colon + 1)) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                         "--image '%s': docker-archive takes FILE or FILE:NAME:TAG; '%s' is not a TAG (letters, "
                         "digits, '_', '.', '-', at most 128; NAME may start with HOST:PORT/)", s, tag_colon + 1);
                return NULL;
        }
        *tag_colon = '\0';
        start = strrchr(body, ':');
        if (start && start[1 + strspn(start + 1, "0123456789")] == '/' && start[1] != '/') {
                /* PORT/...: HOST comes before, and FILE before it */
                *start = '\0';
                before = strrchr(body, ':');
                *start = ':';
                if (before && docker_host_ok(before + 1, (size_t) (start - before - 1)))
                        start = before;
                else if (start > body && start[-1] == ']') {
                        /* "[::1]:5000/app": not FILE "...:[::1]" and NAME "5000/app" (docs/images.md) */
                        nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                 "--image '%s': an IPv6 registry address ([ADDR]:PORT/) is not accepted in a "
                                 "docker-archive NAME", s);
                        return NULL;
                }
        }
        *tag_colon = ':';
        if (!start) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--image '%s': docker-archive takes FILE or FILE:NAME:TAG", s);
                return NULL;
        }
        if (!docker_name_ok(start + 1, (size_t) (tag_colon - start - 1))) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                         "--image '%s': '%.*s' is not an image NAME ([HOST[:PORT]/]PATH, PATH in lowercase letters, "
                         "digits, '.', '_', '-' and '/'), in docker-archive:FILE:NAME:TAG", s,
                         (int) (tag_colon - start - 1), start + 1);
                return NULL;
        }
        return start;
}

/* The tag after the path: oci and oci-archive take one ":TAG" (the last
 * colon, as skopeo reads it), docker-archive "NAME:TAG" (docker_split). */
static int cut_tag(struct img_ref *r, char *body, const char *s, struct nsb_error *e)
{
        char *colon = strrchr(body, ':');

        if (colon && r->transport == IMG_DOCKER_ARCHIVE && !(colon = docker_split(body, colon, s, e)))
                return -EINVAL;
        if (colon) {
                if (!colon[1] || colon == body)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--image '%s': empty %s", s,
                                        colon == body ? "path" : "tag");
                if (!(r->tag = strdup(colon + 1)))
                        return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
                *colon = '\0';
        }
        if (!body[0])
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--image '%s': empty path", s);
        if (!(r->path = strdup(body)))
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        return 0;
}

int img_ref_parse(const char *s, struct img_ref *ret, struct nsb_error *e)
{
        char *body = NULL;
        int r;

        memset(ret, 0, sizeof *ret);
        for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
                if (strncmp(s, transports[i].prefix, strlen(transports[i].prefix)) == 0) {
                        ret->transport = transports[i].t;
                        body = strdup(s + strlen(transports[i].prefix));
                        if (!body)
                                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
                        break;
                }
        if (!body)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--image '%s': expected oci:DIR[:TAG], oci-archive:FILE[:TAG] or "
                                "docker-archive:FILE[:NAME:TAG] (nsbox never pulls from a registry)", s);
        r = cut_pin(body, ret->pin, s, e);
        if (r == 0)
                r = cut_tag(ret, body, s, e);
        free(body);
        if (r < 0)
                img_ref_free(ret);
        return r;
}

void img_ref_free(struct img_ref *r)
{
        free(r->path);
        free(r->tag);
        memset(r, 0, sizeof *r);
}
