/* fuzz/fuzz_observations.c — libFuzzer target for what `nsbox judge --replay`
 * reads: the observations file (judge_obs_parse: JSON Lines, each line's
 * shape, its result object through judge_evidence_parse, its id) and the
 * strict base64 decoder. Beyond "no crash": every file accepted is judged
 * (each stored result read back as evidence again), and a decoded base64
 * text encodes back to itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judge/judge_internal.h"
#include "util/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_t *lines = NULL;
        struct nsb_error e;
        char *raw = NULL, *again;
        size_t n;

        nsb_error_clear(&e);
        if (judge_obs_parse((const char *) data, size, "fuzz.jsonl", &lines, &e) == 0) {
                for (size_t i = 0; i < json_array_size(lines); i++) {
                        const json_t *res = json_object_get(json_array_get(lines, i), "result");
                        struct judge_evidence ev;

                        if (json_is_object(res)) {
                                if (judge_evidence_parse(res, &ev, &e) < 0)
                                        abort();   /* the file's parser accepted it */
                                judge_evidence_free(&ev);
                        }
                }
                json_decref(lines);
        }
        if (b64_decode((const char *) data, size, &raw, &n) == 0) {
                again = b64_encode(raw, n);
                if (!again || strlen(again) != size || memcmp(again, data, size) != 0)
                        abort();
                free(again);
                free(raw);
        }
        return 0;
}
