"""One-off, reproducible studies and data builds of the project (not part of the installed package)."""
