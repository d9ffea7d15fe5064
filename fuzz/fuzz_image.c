/* fuzz/fuzz_image.c — libFuzzer target for what an image hands nsbox before
 * anything is verified by digest: an --image reference, and the JSON of an
 * index, a manifest, a config and docker save's manifest.json (index.json is
 * read without a digest). Beyond "no crash, no leak": an accepted reference
 * has a non-empty path and a pin that is "" or 64 lowercase hex digits; an
 * accepted descriptor's digest is 64 lowercase hex digits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_hex(const char *s, bool empty_ok)
{
        size_t n = strlen(s);

        if ((n == 0 && empty_ok) || (n == 64 && strspn(s, "0123456789abcdef") == 64))
                return;
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1), **layers = NULL, *config = NULL;
        struct nsb_error e;
        struct img_ref ref;
        struct img_desc d;
        struct img_manifest m;
        struct img_config c;
        size_t n = 0;

        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        if (img_ref_parse(s, &ref, &e) == 0) {
                if (!ref.path || !ref.path[0])
                        abort();
                check_hex(ref.pin, true);
                img_ref_free(&ref);
        }
        if (img_index_pick(s, size, strlen(s) % 2 ? "t" : NULL, "index.json", &d, &e) == 0) {
                check_hex(d.digest, false);
                img_desc_free(&d);
        }
        if (img_index_platform(s, size, "amd64", "index", &d, &e) == 0) {
                check_hex(d.digest, false);
                img_desc_free(&d);
        }
        if (img_manifest_parse(s, size, "manifest", &m, &e) == 0) {
                check_hex(m.config.digest, false);
                for (size_t i = 0; i < m.n_layers; i++)
                        check_hex(m.layers[i].digest, false);
                img_manifest_free(&m);
        }
        if (img_config_parse(s, size, "config", &c, &e) == 0) {
                for (size_t i = 0; i < c.n_diff_ids; i++)
                        check_hex(c.diff_ids[i], false);
                img_config_free(&c);
        }
        if (img_docker_pick(s, size, NULL, &config, &layers, &n, &e) == 0) {
                free(config);
                for (size_t i = 0; i < n; i++)
                        free(layers[i]);
                free(layers);
        }
        free(s);
        return 0;
}
