"""The hostile-client harness (issue 27): python -m tools.hostile; see README.md and base.py."""
