"""The ``glmbandits`` command line: one module per command group, thin wrappers over the library.

The entry point is :func:`glmbandits.cli.main.main` (console script ``glmbandits``
and ``python -m glmbandits``).
"""
