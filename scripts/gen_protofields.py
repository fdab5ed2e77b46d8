"""Regenerate src/knetsim/data/protobuf-v1.35.json: the protobuf field numbers of the v1.35 API types.

kubectl ≥ 1.32 sends ``kubectl create ...`` and ``kubectl debug --copy-to`` bodies as Kubernetes
protobuf. Decoding one needs, per message, each field's number, JSON name and type; the numbers
come from ``generated.proto`` of k8s.io/api and k8s.io/apimachinery at a release tag, and two facts
the .proto files do not carry come from the Go structs beside them: which fields are embedded
(``json:",inline"``, e.g. Volume's VolumeSource) and whether a zero value means anything (a pointer
set on purpose, or a field encoding/json writes without omitempty; otherwise Go's protobuf writes
the zero value of a plain field always, where JSON would omit it).

    python scripts/gen_protofields.py API_GIT_DIR APIMACHINERY_GIT_DIR [TAG]

(the git directories of kubernetes/api and kubernetes/apimachinery; TAG defaults to v0.35.7).
Only the groups knetsim serves are written, with everything they reference.

Type codes: string int uint bool float bytes | time microtime duration quantity intstr raw (scalars
written by their own rule) | ``m:MSG`` (message) | ``r:T`` (repeated) | ``map:T`` | ``inline:MSG``;
a trailing ``?`` keeps a zero value (a pointer, or a field JSON writes without omitempty).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

GROUPS = ("core/v1", "apps/v1", "batch/v1", "networking/v1", "discovery/v1", "autoscaling/v1", "policy/v1",
          "events/v1")
MACHINERY = ("pkg/apis/meta/v1", "pkg/api/resource", "pkg/util/intstr", "pkg/runtime")
SCALAR_MESSAGES = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "microtime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": "duration",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intstr",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "raw",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "raw",
}
PROTO_SCALARS = {"string": "string", "int32": "int", "int64": "int", "uint32": "uint", "uint64": "uint",
                 "bool": "bool", "double": "float", "float": "float", "bytes": "bytes"}
MESSAGE = re.compile(r"^message (\w+) \{")
FIELD = re.compile(r"^\s*(optional|repeated)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+);")
MAP_FIELD = re.compile(r"^\s*map<\s*string\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+);")
GO_STRUCT = re.compile(r"^type (\w+) struct \{")
GO_TAG = re.compile(r'^\s*(\w+)?\s*([\w.*\[\]]+)?\s*`([^`]*)`')


def git_show(git_dir: str, tag: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{tag}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def _block_lines(text: str, header: re.Pattern[str]) -> Iterator[tuple[str, str]]:
    """(block name, line) for every line of a top-level ``message X {`` / ``type X struct {`` block, its
    header line included (so that an empty block is still seen)."""
    current: str | None = None
    for line in text.splitlines():
        m = header.match(line)
        if m:
            current = m.group(1)
            yield current, line
        elif line.startswith("}"):
            current = None
        elif current is not None:
            yield current, line


def proto_messages(text: str) -> tuple[str, dict[str, dict[int, tuple[str, str, bool]]]]:
    """package, {message: {number: (name, type, repeated)}} (top-level messages; nested ones are not used)."""
    package = re.search(r"^package ([\w.]+);", text, re.M).group(1)  # type: ignore[union-attr]
    out: dict[str, dict[int, tuple[str, str, bool]]] = {}
    for name, line in _block_lines(text, MESSAGE):
        current = out.setdefault(name, {})
        f = FIELD.match(line)
        if f:
            current[int(f.group(4))] = (f.group(3), f.group(2), f.group(1) == "repeated")
            continue
        mf = MAP_FIELD.match(line)
        if mf:
            current[int(mf.group(3))] = (mf.group(2), "map:" + mf.group(1), False)
    return package, out


def go_fields(text: str) -> dict[str, dict[int, tuple[bool, bool]]]:
    """{struct: {protobuf number: (inline, keep zero)}} from the struct tags."""
    out: dict[str, dict[int, tuple[bool, bool]]] = {}
    for name, line in _block_lines(text, GO_STRUCT):
        current = out.setdefault(name, {})
        t = GO_TAG.match(line)
        if not t:
            continue
        tags = t.group(3)
        pb = re.search(r'protobuf:"\w+,(\d+),', tags)
        js = re.search(r'json:"([^"]*)"', tags)
        if not pb:
            continue
        inline = js is not None and js.group(1).split(",")[0] == "" and ",inline" in js.group(1)
        # A zero value is meant when the field is a pointer, or when encoding/json writes it (no omitempty).
        keep_zero = (t.group(2) or "").startswith("*") or (js is not None and not inline
                                                            and "omitempty" not in js.group(1))
        current[int(pb.group(1))] = (inline, keep_zero)
    return out


def main(api_git: str, machinery_git: str, tag: str = "v0.35.7") -> None:
    messages: dict[str, dict[int, tuple[str, str, bool]]] = {}
    go: dict[str, dict[int, tuple[bool, bool]]] = {}
    sources = [(api_git, f"{g}/generated.proto", f"{g}/types.go") for g in GROUPS]
    sources += [(machinery_git, f"{p}/generated.proto", f"{p}/types.go") for p in MACHINERY]
    for git_dir, proto_path, types_path in sources:
        package, found = proto_messages(git_show(git_dir, tag, proto_path))
        for name, fields in found.items():
            messages[f"{package}.{name}"] = fields
        try:
            structs = go_fields(git_show(git_dir, tag, types_path))
        except subprocess.CalledProcessError:
            structs = {}
        for name, fields in structs.items():
            go[f"{package}.{name}"] = fields

    def code(package: str, proto_type: str) -> str:
        if proto_type.startswith("map:"):
            return "map:" + code(package, proto_type[4:])
        if proto_type in PROTO_SCALARS:
            return PROTO_SCALARS[proto_type]
        proto_type = proto_type.lstrip(".")  # fully qualified names start with a dot
        full = proto_type if "." in proto_type else f"{package}.{proto_type}"
        return SCALAR_MESSAGES.get(full) or f"m:{full}"

    table: dict[str, dict[str, list[str]]] = {}
    for full, fields in sorted(messages.items()):
        if full in SCALAR_MESSAGES:
            continue
        package = full.rsplit(".", 1)[0]
        entries: dict[str, list[str]] = {}
        for number, (name, proto_type, repeated) in sorted(fields.items()):
            inline, keep_zero = go.get(full, {}).get(number, (False, False))
            typ = code(package, proto_type)
            if inline and typ.startswith("m:"):
                typ = "inline:" + typ[2:]
            if repeated:
                typ = "r:" + typ
            entries[str(number)] = [name, typ + ("?" if keep_zero else "")]
        table[full] = entries
    out = Path(__file__).resolve().parent.parent / "src/knetsim/data/protobuf-v1.35.json"
    body = {"source": f"generated.proto and types.go of k8s.io/api and k8s.io/apimachinery {tag} (Apache-2.0); "
                      "field numbers, names and types only",
            "messages": table}
    out.write_text(json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"{out}: {len(table)} messages")


if __name__ == "__main__":
    main(*sys.argv[1:])
