"""accelhal's built-in backends, each registered through the ``accelhal`` entry-point group.

Each backend is a package: ``<name>/__init__.py`` holds its
:class:`~accelhal.BackendSpec`, its probe and its hook implementation, and imports
neither torch nor a vendor runtime; ``<name>/accelerator.py`` holds the accelerator
class, imported only when the backend is chosen.
"""
