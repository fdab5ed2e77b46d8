"""The one process that runs the live cluster, k3s-style (see README.md)."""
