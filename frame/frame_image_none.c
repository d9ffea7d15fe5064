/* frame/frame_image_none.c — the posix platform runs no image: it has no
 * mount namespace to make an image's root the program's. */
#include "frame/frame.h"

#include <errno.h>
#include <stdio.h>

bool frame_doctor_image(const struct nsb_config *cfg, char *detail, size_t dsize, char *fix, size_t fsize)
{
        (void) cfg;
        snprintf(detail, dsize, "--image needs the Linux sandbox (this build is posix)");
        snprintf(fix, fsize, "run on Linux");
        return false;
}

int frame_image_cmd(char *const *argv, size_t argc, struct nsb_error *e)
{
        (void) argv;
        (void) argc;
        nsb_fail(e, NSB_STAGE_CONFIG, ENOTSUP, "image: needs the Linux sandbox (this build is posix)");
        return NSB_EXIT_FAILURE;
}

int frame_open_image(struct nsb_config *cfg, bool python, struct nsb_error *e)
{
        return frame_open_image_lock(cfg, python, NULL, e);
}

int frame_open_image_lock(struct nsb_config *cfg, bool python, int *ret_lock, struct nsb_error *e)
{
        if (ret_lock)
                *ret_lock = -1;
        (void) python;
        if (!cfg->image)
                return 0;
        return nsb_fail(e, NSB_STAGE_CONFIG, ENOTSUP, "--image needs the Linux sandbox (this build is posix)");
}
