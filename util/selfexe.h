/* util/selfexe.h — is this process the nsbox the build tree made?
 *
 * The build tree's own binary (NSBOX_BUILD_ROOT/nsbox) finds what it needs
 * (the test runner, the warm zygote's code) beside its sources and build;
 * an installed copy, or a copy made elsewhere, only where meson install put
 * it. Syscalls: readlink(/proc/self/exe), realpath. */
#pragma once

#include <stdbool.h>

/* False also where /proc/self/exe cannot be read (then: not the build tree's). */
bool nsb_running_from_build_tree(void);
