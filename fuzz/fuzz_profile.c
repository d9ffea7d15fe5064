/* fuzz/fuzz_profile.c — libFuzzer target for the profile parser.
 *
 * Any input: the parser must not crash, leak or read out of bounds (ASan),
 * and must fail with a "FILE:LINE: ..." message or succeed. When it
 * succeeds, the canonical text must round-trip: parse(render(p)) succeeds and
 * renders the same text (the property `nsbox profile show` promises). The
 * one tolerated exception is a rendered line longer than inih's line limit
 * (the renderer widens "k=v" to "k = v"), which the parser reports as such.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const struct cfg_profile_opts opts = { .file = "fuzz.ini" };
        struct nsb_config a, b;
        struct nsb_error e;
        char *ta = NULL, *tb = NULL;

        cfg_defaults(&a, NSB_CMD_PYTHON);
        nsb_error_clear(&e);
        if (cfg_profile_parse((const char *) data, size, &opts, &a, &e) < 0) {
                if (strncmp(e.msg, "fuzz.ini:", 9) != 0) {
                        fprintf(stderr, "error without FILE:LINE: %s\n", e.msg);
                        abort();
                }
                cfg_free(&a);
                return 0;
        }
        if (cfg_policy_render(&a, &ta, &e) < 0)
                abort();
        cfg_defaults(&b, NSB_CMD_PYTHON);
        if (cfg_profile_parse(ta, strlen(ta), &opts, &b, &e) < 0) {
                if (!strstr(e.msg, "line longer than")) {
                        fprintf(stderr, "rendered policy does not parse: %s\n---\n%s---\n", e.msg, ta);
                        abort();
                }
        } else {
                if (cfg_policy_render(&b, &tb, &e) < 0)
                        abort();
                if (strcmp(ta, tb) != 0) {
                        fprintf(stderr, "round trip differs:\n---\n%s---\n%s---\n", ta, tb);
                        abort();
                }
        }
        free(ta);
        free(tb);
        cfg_free(&a);
        cfg_free(&b);
        return 0;
}
