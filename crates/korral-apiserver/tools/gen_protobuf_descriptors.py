#!/usr/bin/env python3
"""Generates `src/protobuf/descriptors.txt`, the descriptor table of the protobuf decoder.

The table lists, for every Kubernetes protobuf message the decoder understands, its field
numbers, JSON names, wire types and the JSON-encoding facts the decoder needs (inline
embedding, `omitempty` on non-pointer scalars, named-slice wrappers). Facts come from two
upstream snapshots: the `generated.proto` files (message names, field numbers, types) and
the Go `types.go` sources beside them (JSON names from struct tags, pointers, inlining).

Regenerate (snapshots may be bare git directories, read at HEAD, or checked-out trees):

    python3 crates/korral-apiserver/tools/gen_protobuf_descriptors.py \
        <path to kubernetes/api snapshot> <path to kubernetes/apimachinery snapshot> \
        > crates/korral-apiserver/src/protobuf/descriptors.txt

Optional `--packages core/v1,apps/v1,...` restricts the kubernetes/api packages (default:
every GA `<group>/v<N>` directory). Dependencies in other packages are always included.
`--extra <snapshot>:<dir>` (repeatable) adds a GA package of another repository; the
committed table was generated with

    --extra <kubernetes/apiextensions-apiserver snapshot>:pkg/apis/apiextensions/v1
    --extra <kubernetes/kube-aggregator snapshot>:pkg/apis/apiregistration/v1

The snapshots themselves are never committed; only the generated table is.

Output format (one record a line, `#` starts a comment line):

    p <alias> <proto package> <apiVersion or ->    starts a package
    m <Message> [l]                                 starts a message; `l`: a Go named slice,
                                                    JSON is the array in field `items`
    <number> <json name> <type> [flags]             a field of the current message

`<type>` is a scalar (`string`, `int32`, `int64`, `uint32`, `uint64`, `sint32`, `sint64`,
`bool`, `bytes`, `double`, `float`, `fixed32`, `fixed64`, `sfixed32`, `sfixed64`, `enum`),
a message (`Name` in the current package, or `<alias>.Name`), or `map:<key>:<value>`.
Flags: `r` repeated, `z` omitted from JSON when zero (non-pointer Go scalar with
`omitempty`), `i` inlined into the parent JSON object (embedded Go struct), `x` not part of
the JSON form (`json:"-"`), `n` always written by gogo-protobuf, zero or not (a non-pointer
Go field that is neither repeated, a map nor `[]byte`).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

SCALARS = {
    "string", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool", "bytes",
    "double", "float", "fixed32", "fixed64", "sfixed32", "sfixed64",
}

# Messages the decoder handles by name (their JSON is not an object of their fields), so a
# missing Go struct or field for them is expected.
SPECIAL = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "k8s.io.apimachinery.pkg.api.resource.Quantity",
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue",
    "k8s.io.apimachinery.pkg.runtime.RawExtension",
    # apiextensions.k8s.io/v1: custom JSON marshalers (marshal.go).
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
}

# apimachinery packages the decoder may need, by directory.
APIMACHINERY_DIRS = [
    "pkg/apis/meta/v1",
    "pkg/runtime",
    "pkg/runtime/schema",
    "pkg/util/intstr",
    "pkg/api/resource",
]


class Snapshot:
    """A repository snapshot: a bare git directory (read at HEAD) or a plain tree."""

    def __init__(self, path: str):
        self.path = path
        self.git = self._is_git(path)
        self._files = None

    @staticmethod
    def _is_git(path: str) -> bool:
        if os.path.isdir(os.path.join(path, ".git")):
            return True
        return os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects"))

    def files(self) -> list[str]:
        if self._files is None:
            if self.git:
                out = subprocess.run(
                    ["git", "-C", self.path, "ls-tree", "-r", "--name-only", "HEAD"],
                    check=True, capture_output=True, text=True,
                ).stdout
                self._files = out.splitlines()
            else:
                found = []
                for root, _dirs, names in os.walk(self.path):
                    for n in names:
                        found.append(os.path.relpath(os.path.join(root, n), self.path))
                self._files = sorted(found)
        return self._files

    def read(self, rel: str) -> str:
        if self.git:
            return subprocess.run(
                ["git", "-C", self.path, "show", f"HEAD:{rel}"],
                check=True, capture_output=True, text=True,
            ).stdout
        with open(os.path.join(self.path, rel), encoding="utf-8") as f:
            return f.read()

    def go_files(self, directory: str) -> list[str]:
        prefix = directory.rstrip("/") + "/"
        out = []
        for f in self.files():
            if not f.startswith(prefix) or "/" in f[len(prefix):] or not f.endswith(".go"):
                continue
            base = os.path.basename(f)
            if base.endswith("_test.go") or base.startswith("zz_generated") or base == "generated.pb.go":
                continue
            out.append(f)
        return out


# ---------------------------------------------------------------- proto parsing

def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


FIELD_RE = re.compile(
    r"^(?:(optional|repeated|required)\s+)?"
    r"(map\s*<\s*([\w.]+)\s*,\s*([\w.]+)\s*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(\[[^\]]*\])?$"
)


def parse_proto(text: str) -> tuple[str, dict, set]:
    """Returns (package, {message: [fields]}, {enum names})."""
    text = strip_comments(text)
    package = None
    messages: dict[str, list[dict]] = {}
    enums: set[str] = set()
    # Tokenize into statements: `...;`, `... {`, `}`.
    stmts = re.findall(r"[^;{}]*[;{}]", text)
    stack: list[tuple[str, str]] = []  # (kind, name)
    for raw in stmts:
        s = raw.strip()
        if not s:
            continue
        body = s[:-1].strip()
        end = s[-1]
        if end == "}":
            if body:
                raise SystemExit(f"unexpected text before '}}': {body!r}")
            stack.pop()
            continue
        if end == "{":
            m = re.match(r"^(message|enum|oneof|service|extend)\s+(\w+)$", body)
            if not m:
                raise SystemExit(f"unsupported block: {body!r}")
            kind, name = m.groups()
            if kind == "message":
                if stack:
                    raise SystemExit(f"nested message {name} is not supported")
                messages[name] = []
            elif kind == "enum":
                if stack:
                    raise SystemExit(f"nested enum {name} is not supported")
                enums.add(name)
            else:
                raise SystemExit(f"unsupported block kind {kind} {name}")
            stack.append((kind, name))
            continue
        # a statement
        if not stack:
            m = re.match(r"^package\s+([\w.]+)$", body)
            if m:
                package = m.group(1)
            continue
        kind, name = stack[-1]
        if kind == "enum" or body.startswith(("option ", "reserved ")):
            continue
        m = FIELD_RE.match(re.sub(r"\s+", " ", body))
        if not m:
            raise SystemExit(f"unparsed field in {name}: {body!r}")
        label, typ, mkey, mval, fname, num, _opts = m.groups()
        field = {"name": fname, "number": int(num), "repeated": label == "repeated"}
        if mkey is not None:
            field["map"] = (mkey, mval)
            field["type"] = None
        else:
            field["type"] = typ
        messages[name].append(field)
    if package is None:
        raise SystemExit("proto file without package")
    return package, messages, enums


# ---------------------------------------------------------------- Go struct tags

STRUCT_START = re.compile(r"^\s*(?:type\s+)?([A-Z]\w*)\s+struct\s*\{\s*(//.*)?$")
NAMED_SLICE = re.compile(r"^\s*type\s+([A-Z]\w*)\s+\[\]\w+\s*(//.*)?$")
TAG_PAIR = re.compile(r'(\w+):"((?:[^"\\]|\\.)*)"')


def parse_go(text: str) -> tuple[dict, set]:
    """Returns ({struct: {proto number: go field facts}}, {named slice types})."""
    structs: dict[str, dict[int, dict]] = {}
    slices: set[str] = set()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        ms = NAMED_SLICE.match(line)
        if ms:
            slices.add(ms.group(1))
        m = STRUCT_START.match(line)
        if not m:
            i += 1
            continue
        name = m.group(1)
        fields: dict[int, dict] = {}
        depth = 1
        i += 1
        while i < len(lines) and depth > 0:
            ln = lines[i]
            code = ln.split("//", 1)[0] if "`" not in ln else ln
            stripped = code.strip()
            if stripped.startswith("//"):
                i += 1
                continue
            if depth == 1 and "`" in stripped:
                pre, _, rest = stripped.partition("`")
                tag = rest.rsplit("`", 1)[0]
                tags = dict(TAG_PAIR.findall(tag))
                parts = pre.split()
                if "protobuf" in tags and parts:
                    pb = tags["protobuf"].split(",")
                    if len(pb) >= 2 and pb[1].isdigit():
                        embedded = len(parts) == 1
                        gotype = parts[0] if embedded else parts[1]
                        json_tag = tags.get("json")
                        json_parts = json_tag.split(",") if json_tag is not None else [""]
                        json_name = json_parts[0]
                        fields[int(pb[1])] = {
                            "go_name": parts[0].lstrip("*").split(".")[-1] if embedded else parts[0],
                            "pointer": gotype.startswith("*"),
                            "embedded": embedded,
                            "json": json_name,
                            "has_json_tag": json_tag is not None,
                            "omitempty": "omitempty" in json_parts[1:] or "omitzero" in json_parts[1:],
                        }
            depth += stripped.count("{") - stripped.count("}")
            i += 1
        structs[name] = fields
    return structs, slices


# ---------------------------------------------------------------- model

class Package:
    def __init__(self, alias, full, api_version, messages, enums, go_structs, go_slices):
        self.alias = alias
        self.full = full
        self.api_version = api_version
        self.messages = messages
        self.enums = enums
        self.go_structs = go_structs
        self.go_slices = go_slices


def group_name(snap: Snapshot, directory: str) -> str | None:
    rel = f"{directory}/register.go"
    if rel not in snap.files():
        return None
    m = re.search(r'const\s+GroupName\s*=\s*"([^"]*)"', snap.read(rel))
    return m.group(1) if m else None


def load_package(snap: Snapshot, directory: str, alias: str, versioned: bool) -> Package:
    package, messages, enums = parse_proto(snap.read(f"{directory}/generated.proto"))
    structs: dict = {}
    slices: set = set()
    for f in snap.go_files(directory):
        s, sl = parse_go(snap.read(f))
        for k, v in s.items():
            structs.setdefault(k, v)
        slices |= sl
    api_version = None
    if versioned:
        g = group_name(snap, directory)
        if g is not None:
            version = directory.rsplit("/", 1)[1]
            api_version = f"{g}/{version}" if g else version
    return Package(alias, package, api_version, messages, enums, structs, slices)


def resolve(pkg: Package, typ: str, known: dict) -> tuple[str, str] | str:
    """Resolves a proto type name to ('message'|'enum', full name) or a scalar name."""
    if typ in SCALARS:
        return typ
    if typ.startswith("."):
        candidates = [typ[1:]]
    else:
        scopes = pkg.full.split(".")
        candidates = [".".join(scopes[:i] + [typ]) for i in range(len(scopes), -1, -1)]
    for c in candidates:
        if c in known:
            return known[c]
    raise SystemExit(f"{pkg.full}: cannot resolve type {typ}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("api", help="kubernetes/api snapshot (bare git dir or tree)")
    ap.add_argument("apimachinery", help="kubernetes/apimachinery snapshot (bare git dir or tree)")
    ap.add_argument("--packages", help="comma-separated kubernetes/api dirs (default: all GA)")
    ap.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="SNAPSHOT:DIR",
        help="a package of another repository (e.g. kube-aggregator:pkg/apis/apiregistration/v1)",
    )
    args = ap.parse_args()

    api = Snapshot(args.api)
    am = Snapshot(args.apimachinery)

    all_api_dirs = sorted(
        f[: -len("/generated.proto")]
        for f in api.files()
        if re.match(r"^[a-z0-9]+/v\w+/generated\.proto$", f)
    )
    if args.packages:
        api_dirs = [d.strip().strip("/") for d in args.packages.split(",") if d.strip()]
    else:
        api_dirs = [d for d in all_api_dirs if re.match(r"^[a-z0-9]+/v\d+$", d)]
    missing = [d for d in api_dirs if d not in all_api_dirs]
    if missing:
        raise SystemExit(f"no generated.proto in {missing}")

    packages: list[Package] = []
    for d in APIMACHINERY_DIRS:
        alias = d[len("pkg/"):].replace("/", ".")
        packages.append(load_package(am, d, alias, versioned=(d == "pkg/apis/meta/v1")))
    # Every api package is loaded (references may cross into prerelease versions); only
    # the requested ones and what they reference are emitted.
    for d in all_api_dirs:
        packages.append(load_package(api, d, d.replace("/", "."), versioned=True))
    requested = {d.replace("/", ".") for d in api_dirs}
    for extra in args.extra:
        path, sep, directory = extra.rpartition(":")
        if not sep or not path or not directory:
            raise SystemExit(f"--extra wants <snapshot>:<dir>, got {extra!r}")
        snap = Snapshot(path)
        directory = directory.strip("/")
        if f"{directory}/generated.proto" not in snap.files():
            raise SystemExit(f"no generated.proto in {extra}")
        alias = ".".join(directory.split("/")[-2:])
        packages.append(load_package(snap, directory, alias, versioned=True))
        requested.add(alias)

    known: dict[str, tuple[str, str]] = {}
    by_full: dict[str, Package] = {}
    for p in packages:
        by_full[p.full] = p
        for m in p.messages:
            known[f"{p.full}.{m}"] = ("message", f"{p.full}.{m}")
        for e in p.enums:
            known[f"{p.full}.{e}"] = ("enum", f"{p.full}.{e}")

    # Which messages to emit: every message of the requested api packages plus the
    # transitive closure of their references (apimachinery packages contribute only
    # what is referenced, plus the envelope and well-known types).
    roots = [f"{p.full}.{m}" for p in packages if p.alias in requested for m in p.messages]
    roots += [
        "k8s.io.apimachinery.pkg.runtime.Unknown",
        "k8s.io.apimachinery.pkg.runtime.RawExtension",
        "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "k8s.io.apimachinery.pkg.apis.meta.v1.CreateOptions",
        "k8s.io.apimachinery.pkg.apis.meta.v1.UpdateOptions",
        "k8s.io.apimachinery.pkg.apis.meta.v1.PatchOptions",
        "k8s.io.apimachinery.pkg.apis.meta.v1.Status",
        "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent",
        "k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata",
        "k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList",
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration",
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
        "k8s.io.apimachinery.pkg.api.resource.Quantity",
    ]
    wanted: set[str] = set()
    queue = list(roots)
    while queue:
        full = queue.pop()
        if full in wanted:
            continue
        wanted.add(full)
        pkg_name, msg = full.rsplit(".", 1)
        p = by_full[pkg_name]
        for f in p.messages[msg]:
            types = list(f["map"]) if f.get("map") else [f["type"]]
            for t in types:
                if t is None:
                    continue
                r = resolve(p, t, known)
                if isinstance(r, tuple) and r[0] == "message":
                    queue.append(r[1])

    alias_of = {p.full: p.alias for p in packages}

    def type_token(p: Package, t: str) -> str:
        r = resolve(p, t, known)
        if isinstance(r, str):
            return r
        if r[0] == "enum":
            return "enum"
        pkg_name, msg = r[1].rsplit(".", 1)
        return msg if pkg_name == p.full else f"{alias_of[pkg_name]}.{msg}"

    out = [
        "# Generated by crates/korral-apiserver/tools/gen_protobuf_descriptors.py; do not edit.",
        "# Facts from kubernetes/api, kubernetes/apimachinery"
        + (" and the --extra packages" if args.extra else "")
        + " generated.proto + types.go.",
        "# Format: see the generator's docstring.",
    ]
    warnings = 0
    counts = {"messages": 0, "fields": 0}
    for p in packages:
        names = [m for m in p.messages if f"{p.full}.{m}" in wanted]
        if not names:
            continue
        # Only requested packages (and meta) answer (apiVersion, kind) look-ups.
        api_version = p.api_version if (p.alias in requested or p.alias == "apis.meta.v1") else None
        out.append(f"p {p.alias} {p.full} {api_version or '-'}")
        for m in names:
            go = p.go_structs.get(m)
            flag = " l" if m in p.go_slices else ""
            out.append(f"m {m}{flag}")
            counts["messages"] += 1
            if go is None and m not in p.go_slices and p.messages[m]:
                print(f"warning: {p.full}.{m}: no Go struct, using proto names", file=sys.stderr)
                warnings += 1
            for f in p.messages[m]:
                gf = (go or {}).get(f["number"])
                flags = ""
                json_name = f["name"]
                if f.get("map"):
                    k, v = f["map"]
                    typ = f"map:{type_token(p, k)}:{type_token(p, v)}"
                else:
                    typ = type_token(p, f["type"])
                if f["repeated"]:
                    flags += "r"
                if gf is not None:
                    if gf["json"] == "-":
                        flags += "x"
                    elif gf["embedded"] and gf["json"] == "":
                        flags += "i"
                    elif gf["json"]:
                        json_name = gf["json"]
                    elif gf["has_json_tag"] or not gf["embedded"]:
                        # json:",omitempty" or no json tag: Go uses the field name.
                        json_name = gf["go_name"]
                    if (
                        typ in SCALARS | {"enum"}
                        and not f["repeated"]
                        and not gf["pointer"]
                        and gf["omitempty"]
                    ):
                        flags += "z"
                    if (
                        not f["repeated"]
                        and not f.get("map")
                        and typ != "bytes"
                        and not gf["pointer"]
                    ):
                        flags += "n"
                elif go is not None and m not in p.go_slices and f"{p.full}.{m}" not in SPECIAL:
                    print(f"warning: {p.full}.{m}.{f['name']}: no Go field #{f['number']}", file=sys.stderr)
                    warnings += 1
                out.append(f"{f['number']} {json_name} {typ}{(' ' + flags) if flags else ''}")
                counts["fields"] += 1
    sys.stdout.write("\n".join(out) + "\n")
    print(
        f"{counts['messages']} messages, {counts['fields']} fields, {warnings} warnings",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
