"""Regenerate src/knetsim/data/gotypes-v1.35.json: the Go type of every field of the v1.35 API types.

The API server's decode errors name the Go type of the field that could not be decoded
(``json: cannot unmarshal string into Go struct field ServicePort.spec.ports.protocol of type
v1.Protocol``). The OpenAPI schemas say "string" for a named string type such as ``v1.Protocol``;
the Go source says what the error prints. This script reads the struct definitions of
k8s.io/api and k8s.io/apimachinery at a release tag and writes, per OpenAPI definition name,
the fields whose Go type differs from what the schema alone implies.

    python scripts/gen_gotypes.py API_GIT_DIR APIMACHINERY_GIT_DIR [TAG]

(the git directories of kubernetes/api and kubernetes/apimachinery; TAG defaults to v0.35.7).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

FIELD = re.compile(r'^\s*(?:(\w+)\s+)?([\w.*\[\]]+(?:\[[\w.]+\][\w.*\[\]]+)?)\s+`json:"([^"]*)"')
STRUCT = re.compile(r"^type (\w+) struct \{")
IMPORT = re.compile(r'^\s*(\w+)?\s*"([\w./-]+)"')
BUILTIN = {"string", "bool", "byte", "int", "int32", "int64", "uint64", "float32", "float64", "interface{}"}


def git_show(git_dir: str, tag: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{tag}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def git_ls(git_dir: str, tag: str) -> list[str]:
    out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", tag], capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()


def imports(source: str) -> dict[str, str]:
    """alias → Go package name (the last path element, which is what reflect prints)."""
    aliases: dict[str, str] = {}
    block = re.search(r"^import \((.*?)^\)", source, re.S | re.M)
    lines = block.group(1).splitlines() if block else re.findall(r"^import (.*)$", source, re.M)
    for line in lines:
        m = IMPORT.match(line)
        if m:
            package = m.group(2).rsplit("/", 1)[-1]
            aliases[m.group(1) or package] = package
    return aliases


def go_type(expr: str, package: str, aliases: dict[str, str]) -> str:
    if expr.startswith("*"):
        return go_type(expr[1:], package, aliases)
    if expr.startswith("[]"):
        inner = expr[2:]
        star = "*" if inner.startswith("*") else ""
        return "[]" + star + go_type(inner.lstrip("*"), package, aliases)
    if expr.startswith("map["):
        key, _, value = expr[4:].partition("]")
        return f"map[{go_type(key, package, aliases)}]{go_type(value, package, aliases)}"
    if expr in BUILTIN:
        return "uint8" if expr == "byte" else expr  # reflect prints byte as uint8
    if "." in expr:
        alias, _, name = expr.partition(".")
        return f"{aliases.get(alias, alias)}.{name}"
    return f"{package}.{expr}"


def structs(source: str, package: str) -> dict[str, dict[str, str]]:
    aliases = imports(source)
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in source.splitlines():
        m = STRUCT.match(line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        if current is None:
            continue
        if line.startswith("}"):
            current = None
            continue
        f = FIELD.match(line)
        if not f:
            continue
        json_name = f.group(3).split(",")[0]
        if not json_name or json_name == "-":
            # inline: the embedded struct's fields are promoted (resolved after all files are read)
            if ",inline" in f.group(3) or f.group(3) == "":
                current.setdefault("$inline", "")
                current["$inline"] += " " + go_type(f.group(2), package, aliases)
            continue
        current[json_name] = go_type(f.group(2), package, aliases)
    return out


def default_go_type(schema: dict, defs_prefix: str = "#/$defs/") -> str | None:
    """What the schema alone implies; None where it cannot say (then the field is always written)."""
    ref = schema.get("$ref")
    if ref:
        name = ref[len(defs_prefix):]
        parts = name.split(".")
        return f"{parts[-2]}.{parts[-1]}"
    t = schema.get("type")
    t = next(x for x in t if x != "null") if isinstance(t, list) else t
    fmt = schema.get("format")
    if t == "string":
        return "[]uint8" if fmt == "byte" else "string"
    if t == "integer":
        return fmt or "int64"
    if t == "boolean":
        return "bool"
    if t == "number":
        return "float64"
    if t == "array":
        inner = default_go_type(schema.get("items") or {})
        return None if inner is None else "[]" + inner
    if t == "object" and isinstance(schema.get("additionalProperties"), dict):
        inner = default_go_type(schema["additionalProperties"])
        return None if inner is None else "map[string]" + inner
    return None


def main(api_git: str, machinery_git: str, tag: str = "v0.35.7") -> None:
    by_def: dict[str, dict[str, str]] = {}
    for path in git_ls(api_git, tag):
        if not path.endswith("/types.go") or path.count("/") != 2:
            continue
        group, version, _ = path.split("/")
        for name, fields in structs(git_show(api_git, tag, path), version).items():
            by_def[f"io.k8s.api.{group}.{version}.{name}"] = fields
    for path, prefix in (("pkg/apis/meta/v1/types.go", "io.k8s.apimachinery.pkg.apis.meta.v1"),
                         ("pkg/runtime/types.go", "io.k8s.apimachinery.pkg.runtime")):
        package = prefix.rsplit(".", 1)[-1]
        for name, fields in structs(git_show(machinery_git, tag, path), package).items():
            by_def[f"{prefix}.{name}"] = fields
    # Promote inline fields (VolumeSource into Volume, ...), as encoding/json does.
    short = {".".join(k.rsplit(".", 2)[-2:]): k for k in by_def}
    for fields in by_def.values():
        for embedded in fields.pop("$inline", "").split():
            target = by_def.get(short.get(embedded, ""), {})
            for k, v in target.items():
                if k != "$inline":
                    fields.setdefault(k, v)
    import kubernetes_validate  # the schemas knetsim validates against

    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.35.0-local" / "_definitions.json"
    defs = json.loads(root.read_text())["$defs"]
    out: dict[str, dict[str, str]] = {}
    for def_name, schema in sorted(defs.items()):
        fields = by_def.get(def_name)
        if not fields:
            continue
        for prop, prop_schema in sorted((schema.get("properties") or {}).items()):
            actual = fields.get(prop)
            if actual and actual != default_go_type(prop_schema):
                out.setdefault(def_name, {})[prop] = actual
    target = Path(__file__).resolve().parent.parent / "src/knetsim/data/gotypes-v1.35.json"
    payload = {"source": f"k8s.io/api and k8s.io/apimachinery {tag} (Apache-2.0), by scripts/gen_gotypes.py",
               "fields": out}
    target.write_text(json.dumps(payload, indent=0, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"{target}: {sum(len(v) for v in out.values())} fields in {len(out)} definitions")


if __name__ == "__main__":
    main(*sys.argv[1:])
