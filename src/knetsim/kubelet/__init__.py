"""The node of the live cluster: pod lifecycle, probes, image pulls, logs, streams, kernel mode (see README.md)."""
