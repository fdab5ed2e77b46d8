"""Antrea's policy dialect: ``crd.antrea.io`` ClusterNetworkPolicy (ACNP) and NetworkPolicy (ANNP) in tiers.

Read here (``model.py``, ``read.py``) into an ordered tier walk (``evaluate.py``) that the engine hands
each side of a connection to on an Antrea cluster, as it does Calico's; nothing outside this package
parses an Antrea object.
"""
