/* util/cmdline.h — nsbox's own command line, hidden from the sandbox.
 *
 * The sandbox init is a fork of nsbox, and /proc/<pid>/cmdline is readable
 * even when a process is not dumpable: without this the program would read,
 * at /proc/1/cmdline, every option and path nsbox was given. The command
 * line is parsed into copies (config/) before any fork, so nothing reads
 * these strings afterwards.
 */
#pragma once

/* In main(), before anything else: where the kernel keeps our argv strings. */
void cmdline_remember(int argc, char **argv);

/* In the init only: make its command line read "nsbox-init" (the init's own
 * copy of the strings; nsbox's stays as the user typed it, for ps). */
void cmdline_hide(void);
