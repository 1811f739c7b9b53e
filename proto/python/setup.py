"""Runs the protocol codegen as part of every build of the protocol package."""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, str(Path(__file__).resolve().parent))


class BuildWithProto(build_py):
    def run(self) -> None:
        import gen_proto

        gen_proto.generate()
        super().run()


setup(cmdclass={"build_py": BuildWithProto})
