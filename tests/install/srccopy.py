"""A copy of the source tree without its build trees and VCS data, for the
tests that configure and build nsbox afresh (meson install, the .deb)."""
import os
import shutil


def copy_source(source, dst):
    """Copy @source to @dst, leaving out build*/ and .git* at its top and
    every __pycache__."""
    top = os.path.realpath(source)

    def ignore(directory, names):
        if os.path.realpath(directory) != top:
            return [n for n in names if n == "__pycache__"]
        return [n for n in names if n.startswith("build") or n.startswith(".git") or n == "__pycache__"]

    shutil.copytree(source, dst, ignore=ignore, symlinks=True)
