/* frame/frame_image.c — --image for a command that runs something: the
 * image opened (verified, pinned, unpacked into the cache) before anything
 * runs, and what of the configuration an image replaces. docs/images.md. */
#include "frame/frame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"

/* NSBOX_IMAGE_MAX_BYTES: the caller's own bound on what an unpack may
 * write into its own cache (a smaller one than the default refuses a bomb
 * sooner; the tests use it). */
static void limits_of(struct img_limits *lim)
{
        const char *s = getenv("NSBOX_IMAGE_MAX_BYTES");
        uint64_t v;
        struct nsb_error ignored;

        *lim = (struct img_limits){ IMG_DEFAULT_MAX_BYTES, IMG_DEFAULT_MAX_ENTRIES, 0 };
        if (s && cfg_parse_size(s, &v, &ignored) == 0 && v > 0 && v < lim->max_bytes)
                lim->max_bytes = v;
        /* NSBOX_IMAGE_MAX_ENTRIES: the same for the entry bound */
        s = getenv("NSBOX_IMAGE_MAX_ENTRIES");
        if (s && cfg_parse_size(s, &v, &ignored) == 0 && v > 0 && v < lim->max_entries)
                lim->max_entries = v;
}

/* What an image makes meaningless is refused, not ignored: its own files
 * are the root (docs/images.md). */
static int refusals(const struct nsb_config *cfg, struct nsb_error *e)
{
        if (cfg->n_packages)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "--image: packages come from the image, not the host (--package / packages refused)");
        if (cfg->isolation == NSB_ISOLATION_REDUCED)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "--image needs strict isolation: reduced isolation has no mount namespace to put "
                                "the image's root in");
        if (cfg->warm)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "--image with --warm: not yet (the zygote is built from the host's interpreter; "
                                "run cold)");
        return 0;
}

static void img_strs_free_env(char **v, size_t n)
{
        for (size_t i = 0; v && i < n; i++)
                free(v[i]);
        free(v);
}

bool frame_doctor_image(const struct nsb_config *cfg, char *detail, size_t dsize, char *fix, size_t fsize)
{
        struct nsb_config c = { .cmd = NSB_CMD_PYTHON, .set = cfg->set };
        struct nsb_error e;
        bool ok;

        nsb_error_clear(&e);
        c.image = cfg->image;
        c.interpreter = cfg->interpreter ? strdup(cfg->interpreter) : NULL;
        ok = frame_open_image(&c, true, &e) == 0;
        if (ok)
                snprintf(detail, dsize, "%s is %s; interpreter %s inside it", cfg->image, c.image_digest,
                         c.interpreter);
        else
                snprintf(detail, dsize, "%s", e.msg);
        snprintf(fix, fsize, "%s", ok ? "" : "name an OCI layout, oci-archive or docker-archive this user can read, "
                                             "with its digest as the pin (skopeo inspect prints it), and "
                                             "--interpreter PATH inside the image if python3 is not on its PATH");
        c.image = NULL;
        free(c.interpreter);
        free(c.image_digest);
        free(c.image_rootfs);
        img_strs_free_env(c.image_env, c.n_image_env);
        return ok;
}

int frame_image_cmd(char *const *argv, size_t argc, struct nsb_error *e)
{
        return img_cmd(argv, argc, e) < 0 ? NSB_EXIT_FAILURE : 0;
}

int frame_open_image(struct nsb_config *cfg, bool python, struct nsb_error *e)
{
        return frame_open_image_lock(cfg, python, NULL, e);
}

int frame_open_image_lock(struct nsb_config *cfg, bool python, int *ret_lock, struct nsb_error *e)
{
        struct img_root root;
        struct img_limits lim;
        char *interp = NULL;
        const char *want;
        int r;

        if (!cfg->image)
                return 0;
        if (cfg->cmd == NSB_CMD_DOCTOR)
                return 0;       /* doctor checks the image itself (doctor_image) */
        if ((r = refusals(cfg, e)) < 0)
                return r;
        limits_of(&lim);
        if ((r = img_open(cfg->image, &lim, &root, e)) < 0)
                return r;
        if (root.unpack_s > 0)
                fprintf(stderr, "nsbox: unpacked %s (%s) in %.1f s\n", cfg->image, root.digest, root.unpack_s);
        /* The interpreter is a path inside the image: the one named, else
         * python3 on the image's PATH; the host's default is no answer. */
        want = cfg->interpreter && ((cfg->set & CFG_F_INTERPRETER) || strcmp(cfg->interpreter, CFG_DEFAULT_INTERPRETER))
                       ? cfg->interpreter
                       : "python3";
        if (python && (r = img_which(&root, want, img_env_path(&root), &interp, e)) < 0) {
                img_root_free(&root);
                return r;
        }
        free(cfg->image_digest);
        free(cfg->image_rootfs);
        cfg->image_digest = strdup(root.digest);
        cfg->image_rootfs = root.rootfs;
        root.rootfs = NULL;
        cfg->image_env = root.env;
        cfg->n_image_env = root.n_env;
        root.env = NULL;
        root.n_env = 0;
        if (python) {
                free(cfg->interpreter);
                cfg->interpreter = interp;
        }
        /* The entry's shared lock stays held (close-on-exec) until nsbox
         * exits, or, handed to the caller, until it closes it: `nsbox image
         * rm` will not remove a root in use. */
        if (ret_lock)
                *ret_lock = root.lock_fd;
        root.lock_fd = -1;
        img_root_free(&root);
        return cfg->image_digest ? 0 : nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
}
