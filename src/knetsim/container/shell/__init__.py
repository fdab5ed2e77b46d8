"""A busybox-like ``sh`` for ``kubectl exec`` and the containers the simulated kubelet runs.

Scripts are parsed by tree-sitter's bash grammar (``tree-sitter-bash``: maintained, made for
exactly this, and it keeps what a tokenizer like ``shlex`` loses: which text was quoted, where
``$(...)`` and backticks nest, which ``>`` is a redirection). ``bashlex`` was the other
candidate; it is GPL-3 (this project is Apache-2.0) and unmaintained since 2023. The tree is
then evaluated here as busybox ``ash`` would:

* lists ``;`` ``&&`` ``||`` ``!``, pipelines ``|`` (``|&``), background ``&`` and ``wait``;
* redirections ``>`` ``>>`` ``<`` ``2>&1`` ``>&2`` ``&>`` ``n>&-`` and here-documents, into the
  container's simulated filesystem (``podfs``) and ``/dev/null``;
* quoting (single, double, backslash, ``$'...'``), parameter expansion (``$VAR`` ``${VAR}``
  ``${VAR:-x}`` ``${#VAR}`` ``${VAR#pat}`` ``${VAR%pat}`` ``${VAR/a/b}`` ``$?`` ``$#`` ``$@``
  ``$1``...), command substitution ``$(...)`` and backticks, arithmetic ``$((...))``, field
  splitting and pathname expansion of unquoted results;
* ``if`` ``while`` ``until`` ``for`` ``case``, ``{ }``, ``( )``, functions, ``[ ]``/``test``.

Anything else (process substitution, ``[[ =~ ]]``, arrays, ``trap``, job control...) answers
``sh: ... is not simulated by knetsim`` with exit 2, never a silently wrong result. Commands are
looked up in ``TOOLS`` (``register``): the shell's builtins live in ``builtins.py``, the applets in
``applets.py`` and ``nettools.py``.
A busybox applet knetsim does not imitate says so (exit 127); a name busybox does not have is
``sh: NAME: not found`` (127), as in a real container.

What keeps the server responsive: every command runs in its container's cgroup (``cgroup.py``):
the interpreter ticks at every step (yielding the event loop, sleeping when over its CPU quota), and
what a shell holds (variables, pipes, here-documents, ``$(...)`` output, a value being expanded) is
counted against the container's memory, which OOM-kills it when full. Nesting (``sh -c`` in
``$(...)`` in functions) stops at ``MAX_DEPTH``, pipes hold at most ``PIPE_BYTES`` unread bytes (Linux's 64 KiB),
and a script longer than ``MAX_SCRIPT`` is not parsed.

The interpreter is one package, in the order a script goes through it (each module imports only the
ones before it):

* ``ctx.py`` — ``Ctx`` (what a command sees), ``Input`` and ``Pipe``, the errors and control flow,
  the tool table (``register``) and busybox's names;
* ``parse.py`` — the syntax tree, busybox's syntax errors, ``static_commands``;
* ``arith.py`` — ``$((...))`` in int64;
* ``expand.py`` — words into fields: quoting, parameters, splitting, globbing;
* ``redirect.py`` — redirections and here-documents;
* ``run.py`` — lists, pipelines, compound commands, functions, ``run_argv``, and ``$(...)`` (which
  expand.py reaches through ``substitutes``, as the tools reach the shell through ``register``).

This module is the face: every name other modules use is imported from ``knetsim.container.shell``.
"""

from __future__ import annotations

from .ctx import (
    _REGISTERED,
    BUILD_CHECK,
    BUILTIN_TOOLS,
    BUSYBOX_APPLETS,
    BUSYBOX_BANNER,
    MAX_DEPTH,
    MAX_SCRIPT,
    PIPE_BYTES,
    SHELL_BUILTINS,
    BrokenPipe,
    Ctx,
    ExitShell,
    FunctionReturn,
    Input,
    LoopControl,
    Node,
    Pipe,
    ShellError,
    Sink,
    Tool,
    ToolError,
    Unsupported,
    register,
)
from .expand import FIELD_COST, Part, expand_word, expand_words
from .parse import parse, static_commands, text_of
from .redirect import Redirections
from .run import evaluate, reap, run_argv, run_line, run_script

__all__ = [
    "BUILD_CHECK", "BUILTIN_TOOLS", "BUSYBOX_APPLETS", "BUSYBOX_BANNER", "FIELD_COST", "MAX_DEPTH", "MAX_SCRIPT",
    "PIPE_BYTES", "SHELL_BUILTINS", "_REGISTERED", "BrokenPipe", "Ctx", "ExitShell", "FunctionReturn", "Input",
    "LoopControl", "Node", "Part", "Pipe", "Redirections", "ShellError", "Sink", "Tool", "ToolError",
    "Unsupported", "evaluate", "expand_word", "expand_words", "parse", "reap", "register", "run_argv",
    "run_line", "run_script", "static_commands", "text_of",
]
