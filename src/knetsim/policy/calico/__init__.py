"""Calico's policy dialect: its selector language (``selector.py``), its kinds and tiers.

``projectcalico.org/v3`` (and the ``crd.projectcalico.org/v1`` storage form a live cluster
returns) is read here and handed to the engine as ordered tiers; nothing outside this package
parses a Calico object.
"""
