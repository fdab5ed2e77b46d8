"""The simulated sh of `kubectl exec`: busybox ash's grammar and applets, and refusals in plain words.

Given the examples/shop cluster and a shell in its web pod, each script gives what busybox 1.36
gives (stdout, stderr, exit code). The network tools answer from the trace, so `wget http://api:8080`
gets the api pod's reply. Scripts run in-process through the same Proc the exec sessions use.

Address plan: DESIGN defaults (pods 10.244.0.0/16, services 10.96.0.0/12).
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
from tests.helpers import shop_web_shell

from knetsim import Cluster
from knetsim.container import shell
from knetsim.container.accesslog import Served
from knetsim.container.podfs import PodFS


@pytest.fixture(scope="module")
def shop() -> Any:
    return Cluster.from_paths(["examples/shop"]).state


def run(state: Any, script: str | list[str], stdin: str | bytes | None = None, served: list[Served] | None = None,
        fs: Any = None) -> tuple[int, str, str]:
    return shop_web_shell(state, script, stdin, served, fs)


@pytest.mark.parametrize(("script", "stdout", "code"), [
    # The examples: a pipe into head, /dev/null, $(hostname) expanded.
    ("wget -qO- http://api:8080 | head -1", "Hello from shop/api-", 0),
    ("wget -qO- http://api:8080 > /dev/null; echo $?", "0\n", 0),
    ('echo "I am $(hostname)" | cut -d- -f1', "I am web\n", 0),
    ("echo `echo back`ticks", "backticks\n", 0),
    # Quoting: single quotes keep $, double quotes expand but do not split.
    ("X='a  b'; echo '$X' \"$X\" $X", "$X a  b a b\n", 0),
    ("echo ${NOPE:-default} ${HOSTNAME%%-*} ${#HOSTNAME}", "default web 20\n", 0),
    # Redirections into the container's files, stderr into stdout and back.
    ("echo one > /tmp/f; echo two >> /tmp/f; wc -l < /tmp/f; cat /tmp/f", "2\none\ntwo\n", 0),
    ("wget -qO- http://nosuch 2>&1 | tr a-z A-Z", "WGET: BAD ADDRESS 'NOSUCH'\n", 0),
    ("wget -q -O /tmp/page http://api:8080 && grep -c Hello /tmp/page", "1\n", 0),
    # Loops and conditions as CKAD scripts write them; a SIGPIPE ends an endless writer.
    ("i=0; while [ $i -lt 3 ]; do i=$((i+1)); echo $i; done", "1\n2\n3\n", 0),
    ("for n in a b c; do echo $n; done | sort -r | head -n 2", "c\nb\n", 0),
    ("while true; do echo y; done | head -2", "y\ny\n", 0),
    ("if grep -q nameserver /etc/resolv.conf; then echo dns; else echo none; fi", "dns\n", 0),
    ("case $HOSTNAME in web-*) echo web;; *) echo other;; esac", "web\n", 0),
    ("f() { return 3; }; f; echo $?", "3\n", 0),
    ("false || echo fallback && hostname | wc -c", "fallback\n21\n", 0),
    # `!` negates a whole pipeline (the e2e framework's `! ss -ant46 'sport = :N' | tail -n +2 | grep LISTEN`).
    ("! echo x | grep y; echo $?", "0\n", 0),
    ("! echo x | grep x; echo $?", "x\n1\n", 0),
    ("! false; echo $?", "0\n", 0),
    # curl -sf: a failure is the exit code alone; -w reports the status.
    ("curl -sf http://api:8080/ -o /dev/null -w '%{http_code}\\n'", "200\n", 0),
    ("curl -s http://nosuch; echo rc=$?", "rc=6\n", 0),
    ("exit 7", "", 7),
])
def test_busybox_sh_runs_the_script(shop: Any, script: str, stdout: str, code: int) -> None:
    got_code, out, err = run(shop, script)
    assert (got_code, err) == (code, "")
    assert out.startswith(stdout) if stdout.endswith("-") else out == stdout


# ${VAR/pattern/replacement}: the leftmost, longest glob match, the pattern and the replacement
# expanded as words are. Each expectation is what busybox 1.35/1.36 prints (checked against the
# machine's busybox below where it is installed).
SUBSTITUTIONS = [
    ('X=banana; p=a; r=Q; echo "${X/$p/Z}" "${X//a/$r}"', "bZnana bQnQnQ\n"),
    ('Y="ba)c"; echo ${Y/a\\)/Z}', "bZc\n"),
    ("X=banana; echo ${X/*/Q} ${X/an*/Q} ${X//a?/Q}", "Q bQ bQQa\n"),
    ('X=banana; echo "${X//}" "${X/a}" "${X//a}" "${X/"a"/"r x"}"', "banana bnana bnn br xnana\n"),
    ('X=abc; p="*"; echo ${X/"$p"/Q} ${X/$p/Q}', "abc Q\n"),
    ('X="a*c"; echo ${X/\\*/Q} ${X/[*]/Q}', "aQc aQc\n"),
    ("X=banana; echo ${X/[an]*/Q} ${X/[!b]/Q} ${X/n/\\/}", "bQ bQnana ba/ana\n"),
    ('X="a b"; echo ${X/ /_} ${X//b/}', "a_b a\n"),
    ('X=; echo "[${X/*/Q}]" "[${U/a/b}]"', "[Q] []\n"),
    # ash has no anchored forms: `#` and `%` are characters of the pattern.
    ("X=banana; echo ${X/#b/Q} ${X/%a/Q}", "banana banana\n"),
]


@pytest.mark.parametrize(("script", "stdout"), SUBSTITUTIONS)
def test_pattern_substitution_as_busybox_does_it(shop: Any, script: str, stdout: str) -> None:
    assert run(shop, script) == (0, stdout, "")


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox is not installed")
@pytest.mark.parametrize(("script", "stdout"), SUBSTITUTIONS)
def test_pattern_substitution_expectations_are_busyboxs(script: str, stdout: str) -> None:
    real = subprocess.run(["busybox", "sh", "-c", script], capture_output=True, text=True, timeout=10)
    assert (real.returncode, real.stdout, real.stderr) == (0, stdout, "")


@pytest.mark.parametrize(("script", "stderr", "code"), [
    # What knetsim cannot do is said, never silently wrong.
    ("cat <(echo hi)", "sh: process substitution <(...) is not simulated by knetsim\n", 2),
    ("ping -c 1 api", "sh: ping: this command is not simulated by knetsim\n", 127),
    ("awk 'BEGIN { x = 1 }'", "awk: this awk program (knetsim runs only `[/re/] {print FIELDS}`) is not simulated "
                              "by knetsim\n", 2),
    ("head -c 5 -z /etc/hosts", "head: invalid option -- 'z'\n", 1),
    ("wget --post-file=x http://api:8080", "wget: option --post-file is not simulated by knetsim\n", 1),
    # busybox's own errors.
    ("nosuch", "sh: nosuch: not found\n", 127),
    ("wget -s http://api:8080", "wget: invalid option -- 's'\n", 1),
    ("echo 'open", "sh: syntax error: unterminated quoted string\n", 2),
    ("echo a;; echo b", 'sh: syntax error: unexpected ";;"\n', 2),
    ("cat < /nope", "sh: can't open /nope: no such file\n", 1),
    ("echo x > /nodir/f", "sh: can't create /nodir/f: nonexistent directory\n", 1),
    ("[ 1 -eq x ]", "sh: x: bad number\n", 2),
    ("curl -S -s http://nosuch", "curl: (6) Could not resolve host: nosuch\n", 6),
])
def test_errors_in_busybox_words_and_refusals_in_knetsims(shop: Any, script: str, stderr: str, code: int) -> None:
    got_code, out, err = run(shop, script)
    assert got_code == code
    assert err.startswith(stderr), err
    assert out == ""


def test_direct_argv_and_stdin(shop: Any) -> None:
    assert run(shop, ["cat"], stdin="piped\n") == (0, "piped\n", "")
    assert run(shop, ["sh"], stdin="echo from stdin | tr a-z A-Z\n") == (0, "FROM STDIN\n", "")
    assert run(shop, "while read a b; do echo $b; done", stdin="1 one\n2 two\n") == (0, "one\ntwo\n", "")


def test_env_shows_exported_variables_only(shop: Any) -> None:
    code, out, _ = run(shop, "X=1; env | grep -c '^X='; export X; env | grep '^X='; sh -c 'echo child=$X'")
    assert (code, out) == (0, "0\nX=1\nchild=1\n")


def test_requests_a_pod_answers_reach_the_access_log(shop: Any) -> None:
    served: list[Served] = []
    run(shop, "wget -qO- http://api:8080/items?id=1 >/dev/null; curl -s -A probe http://api:8080/", served=served)
    assert [(s.method, s.target, s.status, s.user_agent) for s in served] == [
        ("GET", "/items?id=1", 200, "Wget"), ("GET", "/", 200, "probe")]
    web = next(p for p in shop.pods.values() if p.namespace == "shop" and p.name.startswith("web"))
    assert {s.client_ip for s in served} == {web.pod_ip} and served[0].pod.startswith("shop/api-")


def test_files_outlive_one_command_in_the_same_container(shop: Any) -> None:

    fs = PodFS()
    run(shop, "echo kept > /tmp/note", fs=fs)
    assert run(shop, "cat /tmp/note; ls /tmp", fs=fs) == (0, "kept\nnote\n", "")


@pytest.mark.parametrize(("script", "names"), [
    ("wget -qO- http://web | head -1 > /tmp/x", ["wget", "head"]),
    ("f() { sleep 1; }; while true; do f; done", ["sleep", "f", "true"]),
    ("$CMD --flag", None),
    ("echo 'open", None),
])
def test_static_commands_say_what_a_script_runs(script: str, names: list[str] | None) -> None:
    got = shell.static_commands(script)
    assert (sorted(got) if got is not None else None) == (sorted(n for n in names if n != "f") if names else None)
