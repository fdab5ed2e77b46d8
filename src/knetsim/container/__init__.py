"""What runs inside a simulated container: busybox's sh, its applets and net tools, the files (see README.md)."""
