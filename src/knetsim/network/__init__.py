"""One connection end to end: DNS → Service → EndpointSlices → data plane → policy → listener → app.

``tracer.trace`` is the entry; ``trace`` holds the result's types. Nothing is imported here: the tracer
reaches every layer (policy, the data planes, Ingress, the Gateway with its certificates), while the
node imports only ``app`` (what a pod's program answers) for each probe, and must not pay for the rest.
"""
