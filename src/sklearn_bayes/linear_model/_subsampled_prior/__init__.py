"""Private sub-package (see the layout in doc/user_guide/conventions.rst)."""
