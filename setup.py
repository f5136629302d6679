"""The one compiled part: the producer's recording loop (harness/_recorder.c). Metadata: pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("harness._recorder", ["harness/_recorder.c"], extra_compile_args=["-O2"])])
