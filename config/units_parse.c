/* config/units_parse.c — strict size, duration and count parsing. Pure.
 *
 * Sizes:     an integer with an optional binary suffix K, M, G, T (also "KiB",
 *            "KB", lower case accepted): "256M" = 268435456. A decimal fraction
 *            is accepted with a suffix ("1.5G") and rounded down to a byte.
 * Durations: a decimal number with a unit: "ms", "s", "m" (minutes), "h";
 *            a bare number is seconds, as timeout(1) reads it. Resolution is
 *            one millisecond; finer fractions are rejected, not rounded.
 * Everything else is an error that quotes the input.
 */
#include "config/config.h"
#include "config/schema.h"
#include "util/cleanup.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

struct decimal {
        uint64_t whole;
        uint64_t frac;       /* fractional digits as an integer */
        unsigned frac_digits;
        const char *rest;    /* first byte after the number */
};

static int parse_decimal(const char *s, struct decimal *d)
{
        const char *p = s;

        memset(d, 0, sizeof *d);
        if (!isdigit((unsigned char) *p))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++) {
                unsigned digit = (unsigned) (*p - '0');
                if (d->whole > (UINT64_MAX - digit) / 10)
                        return -ERANGE;
                d->whole = d->whole * 10 + digit;
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                for (; isdigit((unsigned char) *p); p++) {
                        if (d->frac_digits >= 9)
                                return -ERANGE;
                        d->frac = d->frac * 10 + (uint64_t) (*p - '0');
                        d->frac_digits++;
                }
        }
        d->rest = p;
        return 0;
}

static uint64_t pow10u(unsigned n)
{
        uint64_t v = 1;
        while (n--)
                v *= 10;
        return v;
}

/* whole*mult + frac*mult/10^digits, with overflow checks. */
static int scale(const struct decimal *d, uint64_t mult, bool exact, uint64_t *ret)
{
        uint64_t div = pow10u(d->frac_digits), part;

        if (d->whole > UINT64_MAX / mult)
                return -ERANGE;
        if (d->frac > 0 && mult > UINT64_MAX / d->frac)
                return -ERANGE;
        part = d->frac * mult;
        if (exact && part % div != 0)
                return -EDOM;
        part /= div;
        if (d->whole * mult > UINT64_MAX - part)
                return -ERANGE;
        *ret = d->whole * mult + part;
        return 0;
}

/* What each kind of value looks like: said when one is empty or malformed. */
#define SIZE_FORM "expected a number of bytes with an optional unit K, M, G or T, e.g. 512K, 256M, 1G"
#define DURATION_FORM "expected a number with a unit ms, s, m or h, e.g. 500ms, 10s, 2m"
/* No size, duration or count is longer: a longer value is quoted cut, so
 * the message still says what a value looks like. */
#define VALUE_MAX 32

int cfg_parse_size(const char *s, uint64_t *ret_bytes, struct nsb_error *e)
{
        static const struct { const char *suffix; uint64_t mult; } units[] = {
                { "", 1 },
                { "b", 1 },
                { "k", 1ULL << 10 }, { "kb", 1ULL << 10 }, { "kib", 1ULL << 10 },
                { "m", 1ULL << 20 }, { "mb", 1ULL << 20 }, { "mib", 1ULL << 20 },
                { "g", 1ULL << 30 }, { "gb", 1ULL << 30 }, { "gib", 1ULL << 30 },
                { "t", 1ULL << 40 }, { "tb", 1ULL << 40 }, { "tib", 1ULL << 40 },
        };
        struct decimal d;
        int r;

        if (!s || !*s)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "empty size (" SIZE_FORM ")");
        if (strlen(s) > VALUE_MAX)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "malformed size '%.*s...' (" SIZE_FORM ")", VALUE_MAX, s);
        r = parse_decimal(s, &d);
        if (r == -ERANGE)
                return nsb_fail(e, NSB_STAGE_USAGE, ERANGE, "size '%s' is too large", s);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "malformed size '%s' (" SIZE_FORM ")", s);
        for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
                if (strcasecmp(d.rest, units[i].suffix) != 0)
                        continue;
                if (d.frac_digits > 0 && units[i].mult == 1)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "malformed size '%s': a byte count has no fraction", s);
                if (scale(&d, units[i].mult, false, ret_bytes) < 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, ERANGE, "size '%s' is too large", s);
                return 0;
        }
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                        "malformed size '%s': unknown unit '%s' (use K, M, G or T)", s, d.rest);
}

int cfg_parse_bound(const char *s, uint64_t *ret_bytes, struct nsb_error *e)
{
        uint64_t n;
        int r = cfg_parse_size(s, &n, e);

        if (r < 0)
                return r;
        if (n == 0)
                return nsb_fail(e, NSB_STAGE_USAGE, ERANGE,
                                "size '%s' is out of range: 0 would turn the limit off (give at least 1)", s);
        *ret_bytes = n;
        return 0;
}

int cfg_parse_duration(const char *s, uint64_t *ret_ms, struct nsb_error *e)
{
        static const struct { const char *suffix; uint64_t ms; } units[] = {
                { "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
        };
        struct decimal d;
        int r;

        if (!s || !*s)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "empty duration (" DURATION_FORM ")");
        if (strlen(s) > VALUE_MAX)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "malformed duration '%.*s...' (" DURATION_FORM ")",
                                VALUE_MAX, s);
        r = parse_decimal(s, &d);
        if (r == -ERANGE)
                return nsb_fail(e, NSB_STAGE_USAGE, ERANGE, "duration '%s' is too large", s);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "malformed duration '%s' (" DURATION_FORM ")", s);
        for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
                uint64_t ms;
                if (strcmp(d.rest, units[i].suffix) != 0)
                        continue;
                r = scale(&d, units[i].ms, true, &ms);
                if (r == -EDOM)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "duration '%s' is finer than a millisecond", s);
                if (r < 0 || ms > UINT64_MAX / 1000000)
                        return nsb_fail(e, NSB_STAGE_USAGE, ERANGE, "duration '%s' is too large", s);
                if (ms == 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "duration '%s' must be positive", s);
                *ret_ms = ms;
                return 0;
        }
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                        "malformed duration '%s': unknown unit '%s' (use ms, s, m or h)", s, d.rest);
}

int cfg_parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *ret, struct nsb_error *e)
{
        struct decimal d;

        if (!s || !*s)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "empty number (expected a whole number)");
        if (strlen(s) > VALUE_MAX)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "malformed number '%.*s...' (expected a whole number)",
                                VALUE_MAX, s);
        if (parse_decimal(s, &d) < 0 || *d.rest || d.frac_digits)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "malformed number '%s' (expected a whole number)", s);
        if (d.whole < min || d.whole > max)
                return nsb_fail(e, NSB_STAGE_USAGE, ERANGE,
                                "number '%s' is out of range (%llu to %llu)", s,
                                (unsigned long long) min, (unsigned long long) max);
        *ret = d.whole;
        return 0;
}

/* The range each limit may take lives in its schema row (config/schema.c),
 * which every source of the value shares. */
int cfg_parse_limit(const char *name, const char *s, uint64_t *ret, struct nsb_error *e)
{
        const struct cfg_key *k = cfg_key_by_json(name);
        struct nsb_config tmp;
        int r;

        if (!k)
                k = cfg_key_by_flag(name, strlen(name), NSB_CMD_NONE);
        if (!k || !k->json)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "no limit '%s'", name);
        memset(&tmp, 0, sizeof tmp);
        r = k->parse(k, &tmp, s, e);
        if (r == 0)
                memcpy(ret, (const char *) &tmp + k->offset, sizeof *ret);
        return r;
}

#define KIB (1ULL << 10)
#define MIB (1ULL << 20)

int cfg_check_python_memory(uint64_t memory_bytes, struct nsb_error *e)
{
        unsigned long long v = memory_bytes;
        const char *unit = v % MIB == 0 ? "M" : v % KIB == 0 ? "K" : " bytes";

        if (memory_bytes >= CFG_PYTHON_MEMORY_MIN)
                return 0;
        v = v % MIB == 0 ? v / MIB : v % KIB == 0 ? v / KIB : v;
        return nsb_fail(e, NSB_STAGE_USAGE, 0,
                        "memory limit %llu%s is below %lluM, the least a Python interpreter needs to start "
                        "(docs/profiles.md, \"Limits\")",
                        v, unit, (unsigned long long) (CFG_PYTHON_MEMORY_MIN >> 20));
}
