/* fuzz/fuzz_units.c — libFuzzer target for the size, duration and count
 * parsers. The input is one string (NUL bytes end it early, as in argv).
 * Beyond "no crash": an accepted size or duration written in canonical form
 * by the policy renderer parses back to the same value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(uint64_t memory, uint64_t wall_ms)
{
        static const struct cfg_profile_opts opts = { .file = "fuzz.ini" };
        struct nsb_config c, back;
        struct nsb_error e;
        char *text = NULL;

        cfg_defaults(&c, NSB_CMD_RUN);
        if (memory != UINT64_MAX)
                c.memory_bytes = memory;
        if (wall_ms)
                c.wall_time_ms = wall_ms;
        if (cfg_policy_render(&c, &text, &e) < 0)
                abort();
        cfg_defaults(&back, NSB_CMD_RUN);
        if (cfg_profile_parse(text, strlen(text), &opts, &back, &e) < 0) {
                fprintf(stderr, "canonical text rejected: %s\n%s", e.msg, text);
                abort();
        }
        if (back.memory_bytes != c.memory_bytes || back.wall_time_ms != c.wall_time_ms) {
                fprintf(stderr, "value changed in the round trip:\n%s", text);
                abort();
        }
        free(text);
        cfg_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1);
        struct nsb_error e;
        uint64_t v;

        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        /* Every accepted string parses without a crash; the values a limit may
         * take (the range every source shares: 0 and absurd sizes are
         * refused) survive the render/parse round trip. */
        if (cfg_parse_size(s, &v, &e) == 0 && cfg_parse_limit("memory", s, &v, &e) == 0)
                check_round_trip(v, 0);
        if (cfg_parse_duration(s, &v, &e) == 0) {
                if (v == 0)
                        abort();        /* durations are positive */
                if (cfg_parse_limit("wall-time", s, &v, &e) == 0)
                        check_round_trip(UINT64_MAX, v);
        }
        if (cfg_parse_count(s, 1, 1u << 22, &v, &e) == 0 && (v < 1 || v > (1u << 22)))
                abort();
        free(s);
        return 0;
}
