/* image/image_json.c — the index, manifest and config of an image, and
 * docker save's manifest.json, read with jansson. Pure. */
#include "image/image.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "image/image_internal.h"
#include "util/strv.h"

#define MEDIA_INDEX "application/vnd.oci.image.index.v1+json"
#define MEDIA_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MAX_LAYERS 256

static int load(const char *json, size_t len, const char *what, json_t **ret, struct nsb_error *e)
{
        json_error_t jerr;

        *ret = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!*ret || !json_is_object(*ret)) {
                json_decref(*ret);
                *ret = NULL;
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: not a JSON object (%s)", what, jerr.text);
        }
        return 0;
}

static int desc_read(json_t *o, const char *what, struct img_desc *ret, struct nsb_error *e)
{
        const char *digest = json_string_value(json_object_get(o, "digest"));
        const char *mt = json_string_value(json_object_get(o, "mediaType"));
        json_t *size = json_object_get(o, "size");

        memset(ret, 0, sizeof *ret);
        if (!json_is_object(o) || !digest)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: a descriptor without a digest", what);
        if (strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 71 ||
            strspn(digest + 7, "0123456789abcdef") != 64)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: digest '%s' is not sha256:HEX (the only "
                                "algorithm nsbox checks)", what, digest);
        memcpy(ret->digest, digest + 7, 65);
        ret->size = json_is_integer(size) ? json_integer_value(size) : -1;
        if (ret->size < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: descriptor %s has no size", what, digest);
        if (mt && !(ret->media_type = strdup(mt)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        return 0;
}

bool img_desc_is_index(const struct img_desc *d)
{
        return d->media_type &&
               (strcmp(d->media_type, MEDIA_INDEX) == 0 || strcmp(d->media_type, MEDIA_DOCKER_LIST) == 0);
}

int img_index_pick(const char *json, size_t len, const char *tag, const char *what, struct img_desc *ret,
                   struct nsb_error *e)
{
        json_t *root, *ms, *m, *hit = NULL;
        size_t i;
        int r;

        memset(ret, 0, sizeof *ret);
        if ((r = load(json, len, what, &root, e)) < 0)
                return r;
        ms = json_object_get(root, "manifests");
        if (!json_is_array(ms) || json_array_size(ms) == 0) {
                json_decref(root);
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: no manifests", what);
        }
        json_array_foreach(ms, i, m) {
                const char *name = json_string_value(
                        json_object_get(json_object_get(m, "annotations"), "org.opencontainers.image.ref.name"));
                if (tag ? name && strcmp(name, tag) == 0 : json_array_size(ms) == 1)
                        hit = m;
        }
        if (!hit) {
                json_decref(root);
                return tag ? nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "%s: no image tagged '%s'", what, tag)
                           : nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                      "%s: %zu images, name one with :TAG", what, json_array_size(ms));
        }
        r = desc_read(hit, what, ret, e);
        json_decref(root);
        return r;
}

int img_index_platform(const char *json, size_t len, const char *arch, const char *what, struct img_desc *ret,
                       struct nsb_error *e)
{
        json_t *root, *m;
        size_t i;
        int r;

        memset(ret, 0, sizeof *ret);
        if ((r = load(json, len, what, &root, e)) < 0)
                return r;
        json_array_foreach(json_object_get(root, "manifests"), i, m) {
                json_t *p = json_object_get(m, "platform");
                const char *os = json_string_value(json_object_get(p, "os"));
                const char *a = json_string_value(json_object_get(p, "architecture"));

                if (os && a && strcmp(os, "linux") == 0 && strcmp(a, arch) == 0) {
                        r = desc_read(m, what, ret, e);
                        json_decref(root);
                        return r;
                }
        }
        json_decref(root);
        return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "%s: no manifest for linux/%s", what, arch);
}

int img_manifest_parse(const char *json, size_t len, const char *what, struct img_manifest *ret,
                       struct nsb_error *e)
{
        json_t *root, *layers, *l;
        size_t i;
        int r;

        memset(ret, 0, sizeof *ret);
        if ((r = load(json, len, what, &root, e)) < 0)
                return r;
        layers = json_object_get(root, "layers");
        r = desc_read(json_object_get(root, "config"), what, &ret->config, e);
        if (r == 0 && (!json_is_array(layers) || json_array_size(layers) > MAX_LAYERS))
                r = nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: layers must be an array of at most %d", what,
                             MAX_LAYERS);
        if (r == 0 && !(ret->layers = calloc(json_array_size(layers) + 1, sizeof *ret->layers)))
                r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        json_array_foreach(layers, i, l) {
                if (r < 0)
                        break;
                r = desc_read(l, what, &ret->layers[i], e);
                ret->n_layers = i + 1;
        }
        json_decref(root);
        if (r < 0)
                img_manifest_free(ret);
        return r;
}

static int strings_of(json_t *a, const char *prefix, char ***v, size_t *n)
{
        json_t *s;
        size_t i;

        json_array_foreach(a, i, s) {
                const char *t = json_string_value(s);
                if (!t)
                        continue;
                if (prefix && strncmp(t, prefix, strlen(prefix)) != 0)
                        return -EINVAL;
                if (strv_add(v, n, prefix ? t + strlen(prefix) : t, false) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int img_config_parse(const char *json, size_t len, const char *what, struct img_config *ret, struct nsb_error *e)
{
        json_t *root;
        const char *os, *arch;
        int r;

        memset(ret, 0, sizeof *ret);
        if ((r = load(json, len, what, &root, e)) < 0)
                return r;
        os = json_string_value(json_object_get(root, "os"));
        arch = json_string_value(json_object_get(root, "architecture"));
        if ((os && !(ret->os = strdup(os))) || (arch && !(ret->arch = strdup(arch))) ||
            strings_of(json_object_get(json_object_get(root, "config"), "Env"), NULL, &ret->env, &ret->n_env) < 0)
                r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if (r == 0 && (r = strings_of(json_object_get(json_object_get(root, "rootfs"), "diff_ids"), "sha256:",
                                      &ret->diff_ids, &ret->n_diff_ids)) < 0)
                r = nsb_fail(e, NSB_STAGE_CONFIG, -r, "%s: rootfs.diff_ids must be sha256:HEX", what);
        for (size_t i = 0; r == 0 && i < ret->n_diff_ids; i++)
                if (strlen(ret->diff_ids[i]) != 64 || strspn(ret->diff_ids[i], "0123456789abcdef") != 64)
                        r = nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: diff_id '%s' is not 64 hex digits", what,
                                     ret->diff_ids[i]);
        for (size_t i = 0; r == 0 && i < ret->n_env; i++)
                if (!strchr(ret->env[i], '='))
                        r = nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: Env entry '%s' has no '='", what,
                                     ret->env[i]);
        json_decref(root);
        if (r < 0)
                img_config_free(ret);
        return r;
}

int img_docker_pick(const char *json, size_t len, const char *tag, char **ret_config, char ***ret_layers,
                    size_t *ret_n, struct nsb_error *e)
{
        json_error_t jerr;
        json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr), *m, *hit = NULL;
        const char *config;
        size_t i;
        int r = 0;

        *ret_config = NULL;
        *ret_layers = NULL;
        *ret_n = 0;
        if (!json_is_array(root) || json_array_size(root) == 0) {
                json_decref(root);
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "manifest.json: not a non-empty array");
        }
        json_array_foreach(root, i, m) {
                json_t *t;
                size_t k;
                if (!tag) {
                        hit = json_array_size(root) == 1 ? m : NULL;
                        continue;
                }
                json_array_foreach(json_object_get(m, "RepoTags"), k, t) {
                        const char *s = json_string_value(t);
                        size_t ls = s ? strlen(s) : 0, lt = strlen(tag);
                        /* docker.io/NAME:TAG matches NAME:TAG, as skopeo writes it */
                        if (s && (strcmp(s, tag) == 0 ||
                                  (ls > lt && s[ls - lt - 1] == '/' && strcmp(s + ls - lt, tag) == 0)))
                                hit = m;
                }
        }
        config = json_string_value(json_object_get(hit, "Config"));
        if (!hit || !config)
                r = tag ? nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "manifest.json: no image tagged '%s'", tag)
                        : nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "manifest.json: %zu images, name one with :NAME:TAG",
                                   json_array_size(root));
        else if (!(*ret_config = strdup(config)) ||
                 strings_of(json_object_get(hit, "Layers"), NULL, ret_layers, ret_n) < 0)
                r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        else if (*ret_n > MAX_LAYERS)
                r = nsb_fail(e, NSB_STAGE_CONFIG, E2BIG, "manifest.json: more than %d layers", MAX_LAYERS);
        json_decref(root);
        if (r < 0) {
                free(*ret_config);
                *ret_config = NULL;
                img_strs_free(*ret_layers, *ret_n);
                *ret_layers = NULL;
                *ret_n = 0;
        }
        return r;
}

void img_desc_free(struct img_desc *d)
{
        free(d->media_type);
        memset(d, 0, sizeof *d);
}

void img_manifest_free(struct img_manifest *m)
{
        img_desc_free(&m->config);
        for (size_t i = 0; i < m->n_layers; i++)
                img_desc_free(&m->layers[i]);
        free(m->layers);
        memset(m, 0, sizeof *m);
}

void img_config_free(struct img_config *c)
{
        img_strs_free(c->env, c->n_env);
        img_strs_free(c->diff_ids, c->n_diff_ids);
        free(c->os);
        free(c->arch);
        memset(c, 0, sizeof *c);
}

const char *img_this_arch(void)
{
#if defined(__x86_64__)
        return "amd64";
#elif defined(__aarch64__)
        return "arm64";
#elif defined(__i386__)
        return "386";
#elif defined(__riscv) && __riscv_xlen == 64
        return "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        return "ppc64le";
#elif defined(__s390x__)
        return "s390x";
#else
        return "unknown";
#endif
}

void img_strs_free(char **v, size_t n)
{
        for (size_t i = 0; v && i < n; i++)
                free(v[i]);
        free(v);
}
