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

/* The tag after the path: oci and oci-archive take one ":TAG" (the last
 * colon, as skopeo reads it), docker-archive "NAME:TAG" (the colon before
 * the last one). */
static int cut_tag(struct img_ref *r, char *body, const char *s, struct nsb_error *e)
{
        char *colon = strrchr(body, ':');

        if (colon && r->transport == IMG_DOCKER_ARCHIVE) {
                *colon = '\0';
                char *name = strrchr(body, ':');
                *colon = ':';
                if (!name)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "--image '%s': docker-archive takes FILE or FILE:NAME:TAG", s);
                colon = name;
        }
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
