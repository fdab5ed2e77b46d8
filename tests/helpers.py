"""Helpers the test modules share: the CLI in process, and a command run in a pod's simulated shell.

A test module imports these instead of another test module: a helper in a test module hides where it lives,
and moving or deleting that test breaks its importers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from click.testing import CliRunner, Result

from knetsim.cli.main import cli


def knetsim(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
    """``knetsim ARGS`` in process, as click's runner gives it (an exception is the result's, exit code 1)."""
    return CliRunner().invoke(cli, list(args), input=input, env=env)


def knetsim_raising(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
    """``knetsim ARGS`` in process; an unexpected exception propagates, so its traceback fails the test."""
    return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False)


def exec_in_pod(state: Any, pod: Any, argv: list[str], *, container: str | None = None,
                stdin: str | bytes | None = None, **ctx: Any) -> tuple[int, str, str]:
    """``argv`` in a container of ``pod`` through the Proc the exec sessions use: (exit code, stdout, stderr).
    ``ctx`` is passed to ``shell.Ctx`` (env, served, fs)."""
    from knetsim.container import proc, shell  # here: most test modules never run a shell

    out: list[str] = []
    err: list[str] = []

    async def o(text: str) -> None:
        out.append(text)

    async def e(text: str) -> None:
        err.append(text)

    async def go() -> int:
        context = shell.Ctx(state, pod, container or pod.containers[0].name, o, e, **ctx)
        p = proc.Proc(context, False, stdin is not None)
        if stdin is not None:
            p.feed(stdin.encode() if isinstance(stdin, str) else stdin)
            p.eof()
        return await asyncio.wait_for(p.run(argv), 30)
    code = asyncio.run(go())
    return code, "".join(out), "".join(err)


def shop_web_shell(state: Any, script: str | list[str], stdin: str | bytes | None = None,
                   served: list[Any] | None = None, fs: Any = None) -> tuple[int, str, str]:
    """``sh -c SCRIPT`` (or the argv given) in examples/shop's web pod, with the env and files the kubelet
    gives every container; ``served`` collects the requests the pod's tools answered."""
    from knetsim.container.podfs import PodFS
    from knetsim.kubelet.podconfig import pod_env, pod_files

    pod = next(p for p in state.pods.values() if p.namespace == "shop" and p.name.startswith("web"))
    name = pod.containers[0].name
    append: Callable[[Any], None] | None = served.append if served is not None else None
    argv = ["sh", "-c", script] if isinstance(script, str) else script
    return exec_in_pod(state, pod, argv, stdin=stdin, env=pod_env(state, pod, name), served=append,
                       fs=fs if fs is not None else PodFS(lambda: pod_files(state, pod)))
