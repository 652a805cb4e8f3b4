#!/bin/bash
# bench-lib.sh — helpers sourced by the bench-*.sh tests (not a test itself).
#
# bench_validate SCHEMA JSON: check JSON against the subset of JSON Schema
# (draft-07) that bench/schema.json uses: type, enum, minimum, required,
# properties, additionalProperties: false, items, $ref to #/definitions,
# if/then.  Prints every violation; fails if there is one.

bench_validate() {
    python3 - "$1" "$2" <<'PY'
import json, sys

schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
errors = []

def type_ok(v, t):
    if t == "null": return v is None
    if t == "boolean": return isinstance(v, bool)
    if t == "integer": return isinstance(v, int) and not isinstance(v, bool)
    if t == "number": return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "string": return isinstance(v, str)
    if t == "array": return isinstance(v, list)
    if t == "object": return isinstance(v, dict)
    raise SystemExit("validator: unknown type " + t)

def valid(v, s, path):
    before = len(errors)
    check(v, s, path)
    ok = len(errors) == before
    del errors[before:]
    return ok

def check(v, s, path):
    if "$ref" in s:
        ref = s["$ref"]
        assert ref.startswith("#/definitions/"), ref
        s = schema["definitions"][ref.split("/")[-1]]
    if "type" in s:
        ts = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(type_ok(v, t) for t in ts):
            errors.append(f"{path}: {v!r} is not of type {s['type']}")
            return
    if "enum" in s and v not in s["enum"]:
        errors.append(f"{path}: {v!r} not one of {s['enum']}")
    if "minimum" in s and type_ok(v, "number") and v < s["minimum"]:
        errors.append(f"{path}: {v} below minimum {s['minimum']}")
    if isinstance(v, dict):
        for k in s.get("required", []):
            if k not in v:
                errors.append(f"{path}: missing required '{k}'")
        props = s.get("properties", {})
        for k, sub in v.items():
            if k in props:
                check(sub, props[k], f"{path}.{k}")
            elif s.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected property '{k}'")
    if isinstance(v, list) and "items" in s:
        for i, item in enumerate(v):
            check(item, s["items"], f"{path}[{i}]")
    if "if" in s and valid(v, s["if"], path) and "then" in s:
        check(v, s["then"], path)

check(doc, schema, "$")
for e in errors:
    print("schema violation:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
}

# The URI-free way to find a free scratch dir that cleans itself up.
bench_scratch() {
    scratch=$(mktemp -d /tmp/uraid-bench-test.XXXXXX)
    trap 'rm -rf "$scratch"' EXIT
}
