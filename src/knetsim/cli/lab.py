"""``knetsim lab list | start | check | hint | reset | status``: graded exercises over the Kubernetes API."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..daemon.statedir import running
from ..labs import (
    Lab,
    LabError,
    LabResult,
    ProgressStore,
    all_labs,
    fetch,
    grade,
    load_lab,
    reset,
    start,
    tasks_text,
)
from ..labs.progress import real_cluster_dir
from ..sources import KubeAPI, KubeError, connect
from .common import EXIT_BAD_INPUT, EXIT_NEGATIVE, EXIT_OK, dump_json, tabulate
from .up import DEFAULT_STATE

F = TypeVar("F", bound=Callable[..., Any])


def _cluster_options(fn: F) -> F:
    fn = click.option("--state", "state", default=DEFAULT_STATE, show_default=True, type=click.Path(file_okay=False),
                      help="State dir of `knetsim up`: its kubeconfig is the default, progress is saved there.")(fn)
    fn = click.option("--context", default=None, help="kubeconfig context (default: current-context).")(fn)
    fn = click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False),
                      help="Cluster to grade (default: $KUBECONFIG, the running knetsim, ~/.kube/config).")(fn)
    return fn


def _fail(message: str) -> Any:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _kubeconfig_path(kubeconfig: str | None, state: str) -> str:
    """The kubeconfig a lab command uses: --kubeconfig, $KUBECONFIG (its first file), the running knetsim's,
    ~/.kube/config."""
    if kubeconfig:
        return kubeconfig
    env = next((p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p), "")
    if env:
        return env
    info = running(Path(state).resolve())
    if info is not None:
        return str(info.get("kubeconfig") or Path(state) / "kubeconfig")
    return str(Path.home() / ".kube" / "config")


def _progress_dir(kubeconfig_path: str) -> Path:
    """A kubeconfig written by `knetsim up` keeps progress beside it; any other cluster's goes to ~/.local/state."""
    here = Path(kubeconfig_path).resolve().parent
    if (here / "token").exists() and (here / "store.db").exists():
        return here
    return real_cluster_dir()


def _client(kubeconfig: str | None, context: str | None, state: str) -> tuple[KubeAPI, ProgressStore]:
    path = _kubeconfig_path(kubeconfig, state)
    try:
        client = connect(path, context)
    except KubeError as exc:
        _fail(str(exc))
    return client, ProgressStore(_progress_dir(path))


def _lab(name: str | None, progress: ProgressStore) -> Lab:
    name = name or progress.current
    if not name:
        _fail("no lab started here: knetsim lab start NAME (or pass --lab NAME)")
    try:
        return load_lab(str(name))
    except LabError as exc:
        _fail(str(exc))
    raise AssertionError("unreachable")


@click.group("lab")
def lab() -> None:
    """Graded labs: Services and Ingress, NetworkPolicy from default deny, and more.

    \b
      knetsim up && export KUBECONFIG=~/.knetsim/kubeconfig
      knetsim lab start services
      knetsim lab check
    """


@lab.command("list")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def list_cmd(output: str) -> None:
    """The labs, their namespaces and tasks."""
    labs = all_labs()
    if output == "json":
        click.echo(dump_json([{"name": lab_.name, "title": lab_.title, "namespace": lab_.namespace,
                               "tasks": [t.id for t in lab_.tasks], "points": lab_.max_points} for lab_ in labs]),
                   nl=False)
        return
    rows = [[lab_.name, lab_.namespace, str(len(lab_.tasks)), str(lab_.max_points), lab_.title] for lab_ in labs]
    click.echo(tabulate(["NAME", "NAMESPACE", "TASKS", "POINTS", "TITLE"], rows), nl=False)


@lab.command("start")
@click.argument("name")
@_cluster_options
def start_cmd(name: str, kubeconfig: str | None, context: str | None, state: str) -> None:
    """Load the lab's starting objects into the cluster (create, or replace) and print the tasks."""
    client, progress = _client(kubeconfig, context, state)
    try:
        the_lab = load_lab(name)
        applied = start(the_lab, client)
    except (LabError, KubeError) as exc:
        _fail(str(exc))
    for a in applied:
        click.echo(str(a))
    progress.started(the_lab, client.server)
    click.echo("")
    click.echo(tasks_text(the_lab), nl=False)
    click.echo("\nknetsim lab check [TASK] grades your work; knetsim lab hint TASK helps.")


def render(result: LabResult, lab_: Lab) -> str:
    lines = [f"Lab {lab_.name}: {lab_.title}"]
    lines += [f"# {n}" for n in result.notes]
    lines.append("")
    width = max((len(t.task) for t in result.tasks), default=0)
    for t in result.tasks:
        state = "passed" if t.passed else ("partial" if t.score else "failed")
        lines.append(f"{t.task.ljust(width)}  {t.score}/{t.max_points}  {state}  {t.title}")
        for c in t.criteria:
            lines.append(f"  {'PASS' if c.passed else 'FAIL'}  {c.description}" + (" [simulated]" if c.simulated
                                                                                   else ""))
            if not c.passed:
                lines.append(f"        expected: {c.expected}")
                lines.append(f"        found:    {c.found}")
        lines.append("")
    lines.append(f"Score: {result.score}/{result.max_points}")
    return "\n".join(lines) + "\n"


@lab.command("check")
@click.argument("tasks", nargs=-1)
@click.option("--lab", "lab_name", default=None, help="Lab to grade (default: the one started last).")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_cluster_options
def check_cmd(tasks: tuple[str, ...], lab_name: str | None, output: str, kubeconfig: str | None,
              context: str | None, state: str) -> None:
    """Grade the end state of the cluster: every task, or the TASKs named. Exit 1 unless all pass."""
    client, progress = _client(kubeconfig, context, state)
    the_lab = _lab(lab_name, progress)
    try:
        for t in tasks:
            the_lab.task(t)
        result = grade(the_lab, fetch(client), list(tasks) or None)
    except (LabError, KubeError) as exc:
        _fail(str(exc))
    progress.record(result)
    if output == "json":
        click.echo(dump_json(result.to_dict()), nl=False)
    else:
        click.echo(render(result, the_lab), nl=False)
    sys.exit(EXIT_OK if result.passed else EXIT_NEGATIVE)


@lab.command("hint")
@click.argument("task")
@click.option("--lab", "lab_name", default=None, help="Lab of the task (default: the one started last).")
@_cluster_options
def hint_cmd(task: str, lab_name: str | None, kubeconfig: str | None, context: str | None, state: str) -> None:
    """The task's statement, hints and the kubectl commands a learner would use."""
    path = _kubeconfig_path(kubeconfig, state)
    the_lab = _lab(lab_name, ProgressStore(_progress_dir(path)))
    try:
        t = the_lab.task(task)
    except LabError as exc:
        _fail(str(exc))
    out = [f"[{t.id}] {t.title}", "", t.statement, "", "Hints:"]
    out += [f"  {i}. {h}" for i, h in enumerate(t.hints, 1)]
    if t.commands:
        out += ["", "Commands:"] + [f"  {line}" for line in t.commands.splitlines()]
    click.echo("\n".join(out) + "\n", nl=False)


@lab.command("reset")
@click.argument("name", required=False)
@_cluster_options
def reset_cmd(name: str | None, kubeconfig: str | None, context: str | None, state: str) -> None:
    """Delete what the lab created, the learner's objects in its namespaces too, and forget its progress."""
    client, progress = _client(kubeconfig, context, state)
    the_lab = _lab(name, progress)
    try:
        done = reset(the_lab, client)
    except KubeError as exc:
        _fail(str(exc))
    for a in done:
        click.echo(str(a))
    progress.reset(the_lab)


@lab.command("status")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_cluster_options
def status_cmd(output: str, kubeconfig: str | None, context: str | None, state: str) -> None:
    """Saved progress: which tasks passed, when, best and last score."""
    store = ProgressStore(_progress_dir(_kubeconfig_path(kubeconfig, state)))
    if output == "json":
        click.echo(json.dumps(store.data, indent=2, sort_keys=True))
        return
    rows = store.rows(all_labs())
    if not rows:
        click.echo("no lab started yet: knetsim lab list, then knetsim lab start NAME")
        return
    if store.current:
        click.echo(f"# current lab: {store.current} (progress file {store.path})")
    click.echo(tabulate(["LAB", "TASK", "STATUS", "BEST", "LAST", "CHECKED", "PASSED"], rows), nl=False)


COMMANDS = [lab]
