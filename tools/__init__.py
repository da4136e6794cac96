"""Tools run from the checkout (python tools/NAME.py, or python -m tools.hostile); a package so that each module has
one name for the type checker."""
