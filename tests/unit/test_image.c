/* tests/unit/test_image.c — image references and the image JSON readers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include <cmocka.h>

#include "image/image.h"

#define HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX2 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static void ref_ok(const char *s, enum img_transport t, const char *path, const char *tag, const char *pin)
{
        struct img_ref r;
        struct nsb_error e;

        nsb_error_clear(&e);
        assert_int_equal(img_ref_parse(s, &r, &e), 0);
        assert_int_equal(r.transport, t);
        assert_string_equal(r.path, path);
        if (tag)
                assert_string_equal(r.tag, tag);
        else
                assert_null(r.tag);
        assert_string_equal(r.pin, pin);
        img_ref_free(&r);
}

static void ref_bad(const char *s)
{
        struct img_ref r;
        struct nsb_error e;

        nsb_error_clear(&e);
        assert_int_equal(img_ref_parse(s, &r, &e), -EINVAL);
        assert_int_equal(e.stage, NSB_STAGE_USAGE);
        assert_non_null(strstr(e.msg, "--image"));
}

static void test_refs(void **state)
{
        (void) state;
        ref_ok("oci:/x/layout", IMG_OCI, "/x/layout", NULL, "");
        ref_ok("oci:/x/layout:v1", IMG_OCI, "/x/layout", "v1", "");
        ref_ok("oci:layout:v1@sha256:" HEX, IMG_OCI, "layout", "v1", HEX);
        ref_ok("oci:layout@sha256:" HEX, IMG_OCI, "layout", NULL, HEX);
        ref_ok("oci-archive:/a/img.tar:latest", IMG_OCI_ARCHIVE, "/a/img.tar", "latest", "");
        ref_ok("docker-archive:/a/d.tar", IMG_DOCKER_ARCHIVE, "/a/d.tar", NULL, "");
        ref_ok("docker-archive:/a/d.tar:python:3.12-slim", IMG_DOCKER_ARCHIVE, "/a/d.tar", "python:3.12-slim", "");
        ref_ok("docker-archive:d.tar:n/x:t@sha256:" HEX2, IMG_DOCKER_ARCHIVE, "d.tar", "n/x:t", HEX2);
        ref_ok("oci:/we@ird/dir", IMG_OCI, "/we@ird/dir", NULL, "");
        ref_bad("docker://python:3.12");
        ref_bad("python:3.12-slim");
        ref_bad("oci:");
        ref_bad("oci::tag");
        ref_bad("oci:dir:");
        ref_bad("oci:dir@sha256:abc");
        ref_bad("oci:dir@sha512:" HEX);
        ref_bad("oci:dir@sha256:" "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef");
        ref_bad("docker-archive:d.tar:onlytag");
        /* a registry with a port in NAME, as `docker save localhost:5000/app:1.0` records it (#30 follow-up) */
        ref_ok("docker-archive:img.tar:localhost:5000/app:1.0", IMG_DOCKER_ARCHIVE, "img.tar",
               "localhost:5000/app:1.0", "");
        ref_ok("docker-archive:/a/img.tar:localhost:5000/team/app:1.0@sha256:" HEX, IMG_DOCKER_ARCHIVE, "/a/img.tar",
               "localhost:5000/team/app:1.0", HEX);
        ref_ok("docker-archive:img.tar:registry.example.com/app:v2", IMG_DOCKER_ARCHIVE, "img.tar",
               "registry.example.com/app:v2", "");
        ref_ok("docker-archive:img.tar:Registry.Example.com:443/app:v2", IMG_DOCKER_ARCHIVE, "img.tar",
               "Registry.Example.com:443/app:v2", "");
        ref_ok("docker-archive:/x:1/img.tar:app:1.0", IMG_DOCKER_ARCHIVE, "/x:1/img.tar", "app:1.0", "");
        ref_bad("docker-archive:img.tar:localhost:5000/app");      /* no TAG: "5000/app" is not one */
        ref_bad("docker-archive:img.tar:localhost:5000/:1.0");     /* no PATH */
        /* a port is digits: here "localhost" ends FILE, and NAME is abc/app */
        ref_ok("docker-archive:img.tar:localhost:abc/app:1.0", IMG_DOCKER_ARCHIVE, "img.tar:localhost", "abc/app:1.0", "");
        ref_bad("docker-archive:img.tar:localhost:123456/app:1.0");   /* a port has at most 5 digits */
        ref_bad("docker-archive:img.tar:App:1.0");                 /* NAME is lowercase */
        ref_bad("docker-archive:img.tar:a//b:1.0");
        ref_bad("docker-archive:img.tar:app:-x");
        ref_bad("docker-archive:img.tar::1.0");
        /* odd refs (review of the #30 follow-up): each parsed as docs/images.md says, or refused */
        ref_bad("docker-archive:img.tar:[::1]:5000/app:1.0");   /* an IPv6 registry: refused, not FILE 'img.tar:[::1]' */
        ref_bad("docker-archive:img.tar:[::1]/app:1.0");
        ref_bad("docker-archive:img.tar:");
        ref_bad("docker-archive::");
        ref_bad("docker-archive:::");
        ref_bad("docker-archive:a.tar:app:1.0@sha256:" "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef");
        ref_bad("docker-archive:a.tar:app:1.0@sha256:" "0123456789abcdef");
        ref_bad("docker-archive:my:file.tar");                     /* FILE with a colon needs :NAME:TAG */
        ref_bad("docker-archive:/mnt/c:/img.tar");
        ref_ok("docker-archive:/mnt/c:/img.tar:app:1.0", IMG_DOCKER_ARCHIVE, "/mnt/c:/img.tar", "app:1.0", "");
        ref_ok("docker-archive:my:file.tar:app:1.0", IMG_DOCKER_ARCHIVE, "my:file.tar", "app:1.0", "");
        ref_ok("docker-archive:a.tar:h:5000/app:1", IMG_DOCKER_ARCHIVE, "a.tar", "h:5000/app:1", "");
}

#define INDEX2 "{\"schemaVersion\":2,\"manifests\":[" \
        "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:" HEX "\",\"size\":5," \
        "\"annotations\":{\"org.opencontainers.image.ref.name\":\"a\"}}," \
        "{\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"digest\":\"sha256:" HEX2 "\",\"size\":7," \
        "\"annotations\":{\"org.opencontainers.image.ref.name\":\"b\"}}]}"

static void test_index(void **state)
{
        struct img_desc d;
        struct nsb_error e;
        const char *plat = "{\"manifests\":[{\"digest\":\"sha256:" HEX "\",\"size\":1,"
                           "\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}},"
                           "{\"digest\":\"sha256:" HEX2 "\",\"size\":2,"
                           "\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}}]}";

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(img_index_pick(INDEX2, strlen(INDEX2), "a", "index.json", &d, &e), 0);
        assert_string_equal(d.digest, HEX);
        assert_false(img_desc_is_index(&d));
        img_desc_free(&d);
        assert_int_equal(img_index_pick(INDEX2, strlen(INDEX2), "b", "index.json", &d, &e), 0);
        assert_true(img_desc_is_index(&d));
        img_desc_free(&d);
        assert_int_equal(img_index_pick(INDEX2, strlen(INDEX2), "c", "index.json", &d, &e), -ENOENT);
        assert_int_equal(img_index_pick(INDEX2, strlen(INDEX2), NULL, "index.json", &d, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "name one with :TAG"));
        assert_int_equal(img_index_platform(plat, strlen(plat), "amd64", "x", &d, &e), 0);
        assert_string_equal(d.digest, HEX2);
        img_desc_free(&d);
        assert_int_equal(img_index_platform(plat, strlen(plat), "s390x", "x", &d, &e), -ENOENT);
        /* md5 or a short digest: refused, never compared */
        const char *bad = "{\"manifests\":[{\"digest\":\"md5:00\",\"size\":1}]}";
        assert_int_equal(img_index_pick(bad, strlen(bad), NULL, "index.json", &d, &e), -EINVAL);
}

static void test_manifest_config(void **state)
{
        struct img_manifest m;
        struct img_config c;
        struct nsb_error e;
        const char *man = "{\"config\":{\"digest\":\"sha256:" HEX "\",\"size\":3},\"layers\":["
                          "{\"digest\":\"sha256:" HEX2 "\",\"size\":9},{\"digest\":\"sha256:" HEX "\",\"size\":1}]}";
        const char *cfg = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"PATH=/usr/bin\","
                          "\"A=b=c\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:" HEX "\"]}}";
        const char *bad_env = "{\"config\":{\"Env\":[\"NOEQUALS\"]}}";

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(img_manifest_parse(man, strlen(man), "m", &m, &e), 0);
        assert_int_equal(m.n_layers, 2);
        assert_string_equal(m.layers[0].digest, HEX2);
        assert_int_equal(m.layers[0].size, 9);
        img_manifest_free(&m);
        assert_int_equal(img_config_parse(cfg, strlen(cfg), "c", &c, &e), 0);
        assert_int_equal(c.n_env, 2);
        assert_string_equal(c.env[1], "A=b=c");
        assert_int_equal(c.n_diff_ids, 1);
        assert_string_equal(c.diff_ids[0], HEX);
        img_config_free(&c);
        assert_int_equal(img_config_parse(bad_env, strlen(bad_env), "c", &c, &e), -EINVAL);
        assert_int_equal(img_manifest_parse("[]", 2, "m", &m, &e), -EINVAL);
}

static void test_docker(void **state)
{
        const char *man = "[{\"Config\":\"abc.json\",\"RepoTags\":[\"docker.io/nsbox/test:t\"],"
                          "\"Layers\":[\"l1.tar\",\"l2/layer.tar\"]}]";
        char *config, **layers;
        size_t n;
        struct nsb_error e;

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(img_docker_pick(man, strlen(man), "nsbox/test:t", &config, &layers, &n, &e), 0);
        assert_string_equal(config, "abc.json");
        assert_int_equal(n, 2);
        assert_string_equal(layers[1], "l2/layer.tar");
        free(config);
        free(layers[0]);
        free(layers[1]);
        free(layers);
        assert_int_equal(img_docker_pick(man, strlen(man), NULL, &config, &layers, &n, &e), 0);
        free(config);
        free(layers[0]);
        free(layers[1]);
        free(layers);
        assert_int_equal(img_docker_pick(man, strlen(man), "other:t", &config, &layers, &n, &e), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_refs),
                cmocka_unit_test(test_index),
                cmocka_unit_test(test_manifest_config),
                cmocka_unit_test(test_docker),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
