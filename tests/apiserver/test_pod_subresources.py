"""Discovery advertises only the Pod subresources the server serves: no binding (the scheduler is knetsim's
own) and no eviction (kubectl drain, finding no policy/v1 Eviction for pods, deletes the pods itself)."""

from knetsim.apiserver.resources import aggregated_discovery, resource_list


def test_legacy_discovery_lists_the_served_pod_subresources_only() -> None:
    listed = resource_list("", "v1")
    assert listed is not None
    subs = sorted(r["name"].split("/", 1)[1] for r in listed["resources"] if r["name"].startswith("pods/"))
    assert subs == ["attach", "ephemeralcontainers", "exec", "log", "portforward", "status"]


def test_aggregated_discovery_agrees() -> None:
    core = aggregated_discovery(core=True)
    pods = next(r for g in core["items"] for v in g["versions"] for r in v["resources"] if r["resource"] == "pods")
    subs = sorted(s["subresource"] for s in pods.get("subresources", []))
    assert "eviction" not in subs and "binding" not in subs
    assert {"exec", "log", "portforward", "attach", "status"} <= set(subs)
