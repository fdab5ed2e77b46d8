"""kube-apiserver's part of the live cluster: request handling → registry (one strategy per kind) → store.

The process that runs it with the controllers, the kubelet, DNS and the front door is
``knetsim.daemon``; nothing here imports those.
"""
