/* config/schema_json.c — the "limits" object of a judge spec or batch job,
 * through the schema's rows (config/schema.h). Pure. */
#include "config/schema.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/portable.h"
#include "util/textsafe.h"

#define PATH_LEN 160

/* A JSON number as the decimal text the flags' parsers read ("2", "1.5"). */
static int number_text(const json_t *v, char *buf, size_t size)
{
        if (json_is_integer(v)) {
                snprintf(buf, size, "%lld", (long long) json_integer_value(v));
                return 0;
        }
        if (json_is_real(v)) {
                double d = json_real_value(v);
                size_t n;

                if (!(d >= 0 && d < 1e12)) {
                        snprintf(buf, size, "%g", d);   /* the parser rejects it, quoting it */
                        return 0;
                }
                snprintf(buf, size, "%.9f", d);
                n = strlen(buf);
                while (n > 0 && buf[n - 1] == '0')
                        buf[--n] = '\0';
                if (n > 0 && buf[n - 1] == '.')
                        buf[--n] = '\0';
                return 0;
        }
        return -EINVAL;
}

/* A key for a message: clipped to 40 bytes, on one line, the unsafe
 * characters of util/textsafe.h shown as escapes, so a hostile key cannot
 * reshape the message nor the terminal that shows it. */
static const char *shown(char *buf, size_t size, const char *s)
{
        buf[0] = '\0';
        textsafe_term_append(buf, size, s, strlen(s), 40);
        return buf;
}

static int unknown_key(const char *key, struct nsb_error *e)
{
        char list[160] = "", k[64];

        for (size_t i = 0; cfg_key_at(i); i++)
                if (cfg_key_at(i)->json)
                        nsb_appendf(list, sizeof list, "%s%s", list[0] ? ", " : "", cfg_key_at(i)->json);
        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "limits: unknown key \"%s\" (expected one of: %s)",
                        shown(k, sizeof k, key), list);
}

/* @v as the text the row's parser reads, or NULL (with @e) when its JSON
 * type is not one the kind takes. */
static const char *value_text(const struct cfg_key *k, const json_t *v, const char *path, char *num, size_t size,
                              struct nsb_error *e)
{
        if (json_is_string(v)) {
                if (memchr(json_string_value(v), '\0', json_string_length(v))) {
                        nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: must not contain a NUL character", path);
                        return NULL;
                }
                return json_string_value(v);
        }
        if (k->kind == CFG_KIND_DURATION && number_text(v, num, size) == 0)
                return num;          /* a number of seconds, as a bare flag value */
        if (k->kind == CFG_KIND_COUNT && json_is_integer(v)) {
                snprintf(num, size, "%lld", (long long) json_integer_value(v));
                return num;
        }
        nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: %s", path,
                 k->kind == CFG_KIND_SIZE       ? "expected a size string like \"256M\""
                 : k->kind == CFG_KIND_DURATION ? "expected a duration like \"2s\" or a number of seconds"
                                                : "expected an integer");
        return NULL;
}

int cfg_limits_parse_json(const json_t *obj, struct nsb_config *overlay, uint32_t *ret_set, struct nsb_error *e)
{
        const char *key;
        json_t *v;

        if (!json_is_object(obj))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "limits: expected an object");
        json_object_foreach((json_t *) obj, key, v) {
                const struct cfg_key *k = cfg_key_by_json(key);
                char path[PATH_LEN], num[64];
                const char *text;

                if (!k)
                        return unknown_key(key, e);
                snprintf(path, sizeof path, "limits.%s", key);
                if (!(text = value_text(k, v, path, num, sizeof num, e)))
                        return -EINVAL;
                /* The flag's own parser and range: a spec accepts exactly
                 * what the flag does. */
                if (k->parse(k, overlay, text, e) < 0) {
                        e->stage = NSB_STAGE_CONFIG;   /* the shared parsers say "usage" */
                        return nsb_error_prefix(e, "%s", path);
                }
                *ret_set |= k->bit;
        }
        return 0;
}
