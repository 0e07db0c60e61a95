"""Command-line tools (mlirc-opt)."""
