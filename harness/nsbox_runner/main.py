"""Entry point: arguments, the results channel, signals, the run."""
import argparse
import fcntl
import os
import signal
import sys
import time
import traceback

from .base import DEFAULT_TEST_BUDGET
from .discover import discover
from .summary import render_summary
from .supervise import Runner


def _duration(text):
    text = text.strip()
    try:
        if text.endswith("ms"):
            value = float(text[:-2]) / 1000
        elif text.endswith("s"):
            value = float(text[:-1])
        else:
            value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a duration: %r" % text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be positive: %r" % text)
    return value


def _hardening():
    """Make the runner untraceable by its children; adopt their orphans."""
    info = {"non_dumpable": False, "subreaper": False}
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
        prctl.restype = ctypes.c_int
        prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
        info["non_dumpable"] = prctl(4, 0, 0, 0, 0) == 0     # PR_SET_DUMPABLE 0
        info["subreaper"] = prctl(36, 1, 0, 0, 0) == 0       # PR_SET_CHILD_SUBREAPER 1
    except Exception:
        pass
    if os.getpid() == 1:
        info["subreaper"] = True
    return info


def _take_channel(fd):
    """Move the channel to a private high close-on-exec fd; fd itself then reads /dev/null."""
    try:
        os.fstat(fd)
    except OSError:
        return None
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            soft = 1 << 20
    except Exception:
        soft = 1024
    low = 1000 if soft > 1100 else max(fd + 1, soft - 16)
    try:
        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, low)
    except OSError:
        private = os.dup(fd)  # lowest free fd, close-on-exec (Python default)
    try:
        null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        os.dup2(null, fd, inheritable=False)  # writes to the old number now fail (EBADF)
        os.close(null)
    except OSError:
        os.close(fd)
    return private


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="nsbox_test_runner.py",
        description="Run hidden tests (test_*.py in --harness) against --workspace; "
                    "results go to --channel-fd as JSON Lines.")
    parser.add_argument("--harness", required=True, help="directory holding test_*.py")
    parser.add_argument("--workspace", required=True, help="the learner's files (the cwd)")
    parser.add_argument("--budget", type=_duration, default=10.0,
                        help="overall time budget for all tests (seconds, or 500ms/10s)")
    parser.add_argument("--test-budget", type=_duration, default=None,
                        help="time budget of one test (default: min(%gs, --budget))"
                        % DEFAULT_TEST_BUDGET)
    parser.add_argument("--channel-fd", type=int, default=3,
                        help="file descriptor of the results channel (default 3)")
    parser.add_argument("--summary", action="store_true",
                        help="also print a human summary on stderr")
    args = parser.parse_args(argv)

    channel = _take_channel(args.channel_fd)
    if channel is None:
        sys.stderr.write("nsbox_test_runner: the results channel (fd %d) is not open; "
                         "nothing was run\n" % args.channel_fd)
        return 2
    harness = os.path.abspath(args.harness)
    workspace = os.path.abspath(args.workspace)
    test_budget = args.test_budget or min(DEFAULT_TEST_BUDGET, args.budget)
    runner = Runner(channel, harness, workspace, args.budget, min(test_budget, args.budget))

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        os.chdir(workspace)
        hardening = _hardening()
        runner.subreaper = hardening["subreaper"]
        items, codes, collect_errors = discover(harness)
        results = runner.run(items, codes, collect_errors, hardening)
    except KeyboardInterrupt:
        if runner.current_pid:
            runner._killpg(runner.current_pid)
        sys.stderr.write("nsbox_test_runner: cancelled\n")
        return 130
    except BrokenPipeError:
        if runner.current_pid:
            runner._killpg(runner.current_pid)
        sys.stderr.write("nsbox_test_runner: the results channel was closed by the reader\n")
        return 2
    except BaseException:
        if runner.current_pid:
            runner._killpg(runner.current_pid)
        sys.stderr.write("nsbox_test_runner: internal error\n" + traceback.format_exc())
        return 4
    if args.summary:
        sys.stderr.write(render_summary(results, collect_errors, time.monotonic() - runner.started))
    if collect_errors or not items:
        return 3
    if any(e["outcome"] in ("failed", "error") for e in results):
        return 1
    return 0

