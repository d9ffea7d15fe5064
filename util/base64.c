/* util/base64.c — see base64.h. Pure. */
#include "util/base64.h"

#include <errno.h>
#include <nettle/base64.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"

char *b64_encode(const void *data, size_t len)
{
        char *out;

        if (len > (SIZE_MAX - 1) / 4 * 3 - 2)
                return NULL;
        out = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);
        if (!out)
                return NULL;
        base64_encode_raw(out, len, data);
        out[BASE64_ENCODE_RAW_LENGTH(len)] = '\0';
        return out;
}

int b64_decode(const char *text, size_t len, char **ret, size_t *ret_len)
{
        struct base64_decode_ctx ctx;
        AUTOFREE char *out = NULL, *again = NULL;
        size_t n = 0;

        /* nettle skips blanks and accepts nonzero trailing bits: one
         * spelling only, checked by encoding the bytes back. */
        if (len % 4 != 0)
                return -EINVAL;
        out = malloc(BASE64_DECODE_LENGTH(len) + 1);
        if (!out)
                return -ENOMEM;
        base64_decode_init(&ctx);
        n = BASE64_DECODE_LENGTH(len);
        if (!base64_decode_update(&ctx, &n, (uint8_t *) out, len, text) || !base64_decode_final(&ctx))
                return -EINVAL;
        out[n] = '\0';
        again = b64_encode(out, n);
        if (!again)
                return -ENOMEM;
        if (strlen(again) != len || memcmp(again, text, len) != 0)
                return -EINVAL;
        *ret = move_ptr(&out);
        *ret_len = n;
        return 0;
}
