"""What goes wrong with nsbox itself, kept apart from a program's failure
(which is a result, never an exception): the exceptions and the exit
statuses that mean nsbox refused or failed."""
from __future__ import annotations

from typing import Optional

# nsbox's own exit statuses (util/exitcode.h); every other status of a
# command that answers in JSON is its answer.
EXIT_BAD_LINES = 2          # nsbox batch: some lines could not become jobs (each has its error line)
EXIT_NSBOX_FAILURE = 125
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127
EXIT_CANCELLED = 130


class NsboxError(Exception):
    """nsbox refused the request or gave an answer that cannot be read."""

    def __init__(self, message: str, returncode: Optional[int] = None, stderr: str = ""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


class NsboxUnavailable(NsboxError):
    """The nsbox binary is missing, not executable, or cannot run on this host."""


def refused(cmd: str, rc: int, err: str) -> NsboxError:
    """The error for an nsbox command that exited @rc outside its answers."""
    msg = err.strip().splitlines()[-1] if err.strip() else "exit status %d" % rc
    if rc < 0:
        return NsboxUnavailable("nsbox %s was killed by signal %d%s" % (cmd, -rc, ": " + msg if err.strip() else ""),
                                rc, err)
    if rc == EXIT_CANCELLED:
        return NsboxError("nsbox %s was cancelled" % cmd, rc, err)
    if rc in (EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE):
        return NsboxUnavailable("nsbox %s could not run: %s" % (cmd, msg), rc, err)
    return NsboxError("nsbox %s failed: %s" % (cmd, msg), rc, err)
