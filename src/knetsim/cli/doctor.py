"""``knetsim doctor``: the Debug Services checklist over the simulated cluster, with fixes."""

from __future__ import annotations

import sys
import textwrap

import click

from ..doctor import Report, SubjectNotFound, diagnose, scan
from .common import EXIT_BAD_INPUT, EXIT_NEGATIVE, cluster_options, emit, load_cluster

ICONS = {"error": ("✗", "red"), "warning": ("!", "yellow"), "info": ("i", "cyan")}


def render_report(report: Report) -> str:
    if not report.findings:
        kinds = ", ".join(f"{kind}: {n}" for kind, n in report.counts)
        return f"No problems found ({report.objects} object(s) checked{': ' + kinds if kinds else ''}).\n"
    lines = []
    for f in report.findings:
        icon, color = ICONS[f.severity]
        # The file the subject was written in, as kube-linter names it: where the fix goes.
        where = f" ({f.source})" if f.source else ""
        lines.append(f"{click.style(icon, fg=color)} {f.severity.upper():<7} [{f.layer}] {f.subject}{where}: {f.code}")
        lines.extend(textwrap.wrap(f.message, 110, initial_indent="    ", subsequent_indent="    "))
        for item in f.evidence:
            lines.append(f"    · {item}")
        if f.fix:
            fix_lines = f.fix.splitlines()
            lines.append(f"    fix: {fix_lines[0]}")
            lines.extend(f"         {line}" for line in fix_lines[1:])
        lines.append("")
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in ICONS}
    lines.append(f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s)")
    return "\n".join(lines) + "\n"


@click.command("doctor")
@click.argument("subject", required=False)
@click.option("--all", "everything", is_flag=True, help="Every namespace (the default without SUBJECT or -n).")
@click.option("--scan", "scan_paths", multiple=True, type=click.Path(),
              help="Also scan code and scripts under PATH for v1 Endpoints API use.")
@cluster_options
@click.option("-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True)
def doctor_command(subject: str | None, everything: bool, scan_paths: tuple[str, ...], filenames: tuple[str, ...],
                   namespace: str | None, cluster_config: str | None, output: str) -> None:
    """Find what breaks Service networking, layer by layer, and say how to fix it.

    SUBJECT is a Service or Ingress name (in -n NAMESPACE). Manifests the API server would
    reject are reported as findings too. Exit code 1 when any error is found.

    \b
      knetsim doctor -f examples/broken/selector-typo
      knetsim doctor web -n shop -f examples/shop
      knetsim doctor --scan scripts/ -f app/
    """
    # Objects the API server would reject are findings here (with their fixes), not stderr lines.
    cluster = load_cluster(filenames, namespace, cluster_config, report=False)
    try:
        report = diagnose(cluster.state, cluster.errors, subject=subject,
                          namespace=None if everything else namespace)
    except SubjectNotFound as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    hits = []
    if scan_paths:
        try:
            hits = scan(list(scan_paths))
        except FileNotFoundError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_BAD_INPUT)
    if output != "text":
        data = report.to_dict()
        if scan_paths:
            data["endpointsApiUse"] = [h.to_dict() for h in hits]
        emit(data, output)
    else:
        click.echo(render_report(report), nl=False)
        if scan_paths:
            click.echo(f"\nv1 Endpoints API use (deprecated since v1.33): {len(hits)} place(s)")
            for hit in hits:
                click.echo(f"  {hit.file}:{hit.line}: {hit.text}")
                click.echo(f"      {hit.what} → {hit.replacement}")
    if report.errors or hits:
        sys.exit(EXIT_NEGATIVE)


COMMANDS = [doctor_command]
