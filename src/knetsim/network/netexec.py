"""agnhost netexec's answers that reach further than its own pod: ``/dial`` and its UDP server.

``/dial?request=R&protocol=P&host=H&port=N&tries=T`` makes T requests from netexec's pod to H:N and answers JSON
``{"errors": [...], "responses": [...]}`` (test/images/agnhost/netexec/netexec.go, dialHandler): it is how
Kubernetes' network e2e tests check pod-to-pod and pod-to-Service reachability (test/e2e/framework/network/utils.go
DialFromContainer). Its quirks are kept: "responses" is written only when the *last* try answered, and the status is
200 whatever the tries gave; a missing ``request`` or a bad ``tries`` or ``protocol`` is a 400.

The UDP server answers ``hostname`` (and the older ``hostName``) with the pod's name, ``echo MSG`` with MSG and
``clientip`` with the client's address; anything else gets no answer.

Each try is one more traced connection, from netexec's pod, through the same layers as any other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import parse_qs

from ..cluster.state import ClusterState
from ..model.programs import program_of
from .trace import Trace

# (url, protocol) → the trace of one connection from netexec's pod.
Dial = Callable[[str, str], Trace]


def serves_netexec(state: ClusterState, pod_key: str, port: int, protocol: str) -> bool:
    pod = state.pods.get(pod_key)
    if pod is None:
        return False
    return any((p := program_of(c)) is not None and p.name == "agnhost netexec" and (port, protocol) in p.ports
               for c in pod.containers)


def udp_answer(state: ClusterState, trace: Trace, request: str) -> str | None:
    """What the backend a UDP trace reached answers to ``request`` (None: nothing comes back)."""
    backend = trace.backend
    if trace.outcome != "connected" or backend is None or not serves_netexec(state, backend.pod, backend.port,
                                                                               "UDP"):
        return None
    command = request.strip()
    if command in ("hostname", "hostName"):
        return state.pods[backend.pod].name
    if command.startswith("echo "):
        return command[len("echo "):]
    if command == "clientip":
        return f"{backend.client_ip}:{_client_port(backend.client_ip)}"
    return None


def _client_port(ip: str) -> int:
    # An ephemeral port as Linux picks them (32768-60999), fixed per client so answers repeat.
    return 32768 + sum(ip.encode()) * 7919 % 28232


def dial(state: ClusterState, query: str, connect: Dial) -> tuple[int, str]:
    """(status, body) of ``/dial?QUERY`` on a netexec server whose pod ``connect`` dials from."""
    args = {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}
    request, protocol = args.get("request", ""), args.get("protocol", "").lower() or "http"
    tries_text = args.get("tries", "")
    if tries_text and not tries_text.lstrip("-").isdigit():
        return 400, f'tries parameter is invalid. strconv.Atoi: parsing "{tries_text}": invalid syntax\n'
    tries = int(tries_text) if tries_text else 1
    if not request:
        return 400, "request parameter not specified. <nil>\n"
    if protocol not in ("http", "udp", "sctp"):
        return 400, f"unsupported protocol. {protocol}\n"
    host, port = args.get("host", ""), args.get("port", "")
    if not port.isdigit():
        return 400, f'host and/or port param are invalid. lookup port "{port}": invalid port\n'
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    responses: list[str] = []
    errors: list[str] = []
    last = ""
    for _ in range(max(0, min(tries, 100))):
        answer, error = _one(state, protocol, target, request, connect)
        last = answer
        if error:
            errors.append(error)
        else:
            responses.append(answer)
    output: dict[str, list[str]] = {}
    if errors:
        output["errors"] = errors
    if last:
        output["responses"] = responses
    return 200, json.dumps(output, separators=(",", ":"), sort_keys=True)


def _one(state: ClusterState, protocol: str, target: str, request: str, connect: Dial) -> tuple[str, str]:
    """(answer, error) of one try, in dialHTTP's / dialUDP's words."""
    if protocol == "http":
        url = f"http://{target}/{request.lstrip('/')}"
        t = connect(url, "TCP")
        if t.outcome == "connected" and t.reply is not None and t.reply.status is not None:
            return t.reply.body, ""
        if t.outcome == "refused":
            return "", f'Get "{url}": dial tcp {target}: connect: connection refused'
        return "", f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    if protocol == "sctp":
        return "", "sctp dial failed. err:knetsim does not simulate SCTP from netexec's /dial"
    t = connect(f"udp://{target}", "UDP")
    answer = udp_answer(state, t, request)
    if answer:
        return answer, ""
    return "", f"reading from udp connection failed. err:'read udp {target}: i/o timeout'"
