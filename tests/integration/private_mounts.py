"""Runs a command in a private mount namespace after changing it, so a test can
break the host's view for one nsbox only (a full /tmp, a read-only cgroup
directory) without touching the real host.

usage: private_mounts.py [--full-tmpfs DIR] [--ro-bind DIR]... -- ARGV...

As root this is unshare(CLONE_NEWNS). Otherwise it first enters a user
namespace mapping only the caller's own uid and gid (which gives it
CAP_SYS_ADMIN over the new mount namespace); the exec then drops those
capabilities again, so ARGV runs as the same unprivileged uid.
"""
import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x20, 0x1000, 0x4000, 0x40000


def die(what):
    sys.exit("private_mounts: %s: %s" % (what, os.strerror(ctypes.get_errno())))


def mount(src, dst, fstype, flags, data=None):
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        die("mount %s" % dst)


def main(args):
    sep = args.index("--")
    opts, argv = args[:sep], args[sep + 1:]
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(CLONE_NEWNS | (0 if uid == 0 else CLONE_NEWUSER)) != 0:
        die("unshare")
    if uid != 0:
        for f, data in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)), ("gid_map", "%d %d 1" % (gid, gid))):
            with open("/proc/self/" + f, "w") as fh:
                fh.write(data)
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    while opts:
        opt, path = opts[0], opts[1]
        opts = opts[2:]
        if opt == "--full-tmpfs":
            mount("tmpfs", path, "tmpfs", 0, "size=64k,nr_inodes=64,mode=1777")
            try:
                with open(os.path.join(path, "fill"), "wb", buffering=0) as f:
                    while True:
                        f.write(b"\0" * 4096)
            except OSError:
                pass    # ENOSPC: full, as intended
            st = os.statvfs(path)
            if st.f_bavail:
                sys.exit("private_mounts: %s is not full" % path)
        elif opt == "--ro-bind":
            mount(path, path, None, MS_BIND)
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        else:
            sys.exit("private_mounts: unknown option " + opt)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
