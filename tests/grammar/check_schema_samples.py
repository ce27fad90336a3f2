#!/usr/bin/env python3
"""Draws documents from JSON-schema grammars with grammar_sample and validates each with
Python's jsonschema (the oracle), formats checked; also feeds documents that break each schema
and requires the grammar to refuse them, and valid ones it must take.

usage: check_schema_samples.py PATH/TO/grammar_sample [N_PER_SCHEMA] [SEED]
Exit status: 0 when every sample validates and every document is judged as expected."""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

# (name, schema, documents that must be accepted, documents that must be refused)
# Patterns follow ECMA-262 as JSON Schema says: \d is [0-9]; Python's re (the oracle) takes
# \d as any Unicode digit, so negated \d, \D, \W, \S are kept out of these cases.
CASES = [
    ("nested_optional", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 8},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "address": {"type": "object", "properties": {
                "street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["zip"]},
            "nick": {"type": ["string", "null"]},
        },
        "required": ["name", "age"],
    }, [{"name": "a", "age": 3}, {"name": "bob", "age": 150, "address": {"zip": "01234"}}],
       [{"age": 3}, {"name": "", "age": 3}, {"name": "a", "age": 151}, {"name": "a", "age": -1},
        {"name": "a", "age": 3, "extra": 1}, {"age": 3, "name": "a"},
        {"name": "a", "age": 3, "address": {"zip": "1234"}}]),
    ("enums_const", {
        "type": "object",
        "properties": {"color": {"enum": ["red", "green", "blue", 3, None]},
                       "kind": {"const": "fixed"},
                       "flag": {"type": "boolean"}},
        "required": ["color", "kind", "flag"], "additionalProperties": False,
    }, [{"color": "red", "kind": "fixed", "flag": True}, {"color": None, "kind": "fixed", "flag": False}],
       [{"color": "pink", "kind": "fixed", "flag": True}, {"color": "red", "kind": "other", "flag": True},
        {"color": "red", "kind": "fixed", "flag": "yes"}]),
    ("array_bounds", {
        "type": "array", "items": {"type": "integer", "minimum": -20, "maximum": 20}, "minItems": 2, "maxItems": 4,
    }, [[1, 2], [-20, 0, 20, 5]], [[1], [1, 2, 3, 4, 5], [1, 21], [1.5, 2]]),
    ("defs_recursion", {
        "$defs": {"node": {"type": "object", "properties": {
            "value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
            "required": ["value"]}},
        "$ref": "#/$defs/node",
    }, [{"value": 1}, {"value": 1, "children": [{"value": 2, "children": []}]}],
       [{"children": []}, {"value": 1, "children": [{"value": "x"}]}]),
    ("definitions_draft7", {
        "definitions": {"pt": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}},
        "type": "object", "properties": {"a": {"$ref": "#/definitions/pt"}, "b": {"$ref": "#/definitions/pt"}},
        "required": ["a"],
    }, [{"a": [1, 2.5]}, {"a": [0, 0], "b": [-1e3, 4]}], [{"a": [1]}, {"b": [1, 2]}]),
    ("any_of", {
        "anyOf": [{"type": "object", "properties": {"cat": {"type": "string"}}, "required": ["cat"]},
                  {"type": "array", "items": {"type": "boolean"}},
                  {"type": "null"}],
    }, [{"cat": "tom"}, [True, False], None], [{"dog": "rex"}, [1], "x"]),
    ("formats", {
        "type": "object",
        "properties": {"d": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "time"},
                       "dt": {"type": "string", "format": "date-time"}, "id": {"type": "string", "format": "uuid"}},
        "required": ["d", "t", "dt", "id"],
    }, [{"d": "2024-02-28", "t": "12:30:00Z", "dt": "2024-01-31T23:59:59.123+02:00",
         "id": "123e4567-e89b-12d3-a456-426614174000"}],
       [{"d": "2024-13-01", "t": "12:30:00Z", "dt": "2024-01-31T23:59:59Z", "id": "123e4567-e89b-12d3-a456-426614174000"},
        {"d": "2024-01-01", "t": "25:00:00Z", "dt": "2024-01-31T23:59:59Z", "id": "123e4567-e89b-12d3-a456-426614174000"},
        {"d": "2024-01-01", "t": "12:30:00Z", "dt": "2024-01-31T23:59:59Z", "id": "not-a-uuid"}]),
    ("patterns", {
        "type": "object",
        "properties": {
            "email": {"type": "string", "pattern": "^[a-z0-9._]+@[a-z]+\\.(com|org)$"},
            "code": {"type": "string", "pattern": "^[A-Z]{2,3}-\\d{3}$"},
            "has_abc": {"type": "string", "pattern": "abc"},
            "quote": {"type": "string", "pattern": "^\"[^\"]*\"$"},
        },
        "required": ["email", "code", "has_abc", "quote"],
    }, [{"email": "a.b@x.org", "code": "AB-123", "has_abc": "xxabcx", "quote": "\"hi\""}],
       [{"email": "a@b.net", "code": "AB-123", "has_abc": "abc", "quote": "\"\""},
        {"email": "a@b.com", "code": "A-123", "has_abc": "abc", "quote": "\"\""},
        {"email": "a@b.com", "code": "AB-123", "has_abc": "ab", "quote": "\"\""}]),
    ("additional_schema", {
        "type": "object", "properties": {"id": {"type": "integer"}},
        "additionalProperties": {"type": "string", "maxLength": 3}, "required": ["id"],
    }, [{"id": 1}, {"id": 1, "x": "abc", "y": ""}], [{"id": 1, "x": 5}, {"id": 1, "x": "abcd"}, {"id": 1}]),
    ("tuple_and_all_of", {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
            "merged": {"allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]}]},
        },
        "required": ["pair", "merged"],
    }, [{"pair": ["x", 1], "merged": {"a": 1, "b": True}}],
       [{"pair": ["x"], "merged": {"a": 1, "b": True}}, {"pair": ["x", 1], "merged": {"a": 1}}]),
    ("any_value", {}, [1, "x", [None, {"a": {}}], {"k": [1.5e3]}], []),
    ("json_object", {"type": "object"}, [{}, {"a": [1, {"b": None}]}], [[1], "x", 3]),
    ("string_lengths", {
        "type": "array", "prefixItems": [{"type": "string", "minLength": 2, "maxLength": 3},
                                         {"type": "string", "maxLength": 1}, {"type": "string", "minLength": 4}],
    }, [["ab", "", "abcd"], ["\u00e9\u20ac\U0001F600", "\n", "\"\\\"\\"]], [["a", "", "abcd"], ["abcd", "", "abcd"], ["ab", "ab", "abcd"], ["ab", "", "abc"]]),
    ("open_object_and_lists", {
        "type": "object",
        "properties": {"n": {"type": ["integer", "null"]},
                       "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "minItems": 1}, "minItems": 1, "maxItems": 3},
                       "pick": {"oneOf": [{"type": "string", "enum": ["x", "y"]}, {"type": "integer"}]},
                       "obj": {"enum": [{"a": 1}, [1, 2], "s"]}},
        "required": ["grid"], "additionalProperties": True,
    }, [{"grid": [[1]]}, {"n": None, "grid": [[1, 2], [3]], "pick": "x", "obj": "s", "zz": [1]}],  # an object or array enum value is written compact only
       [{"grid": []}, {"grid": [[]]}, {"grid": [[1]], "n": 1.5}, {"grid": [[1]], "pick": "z"}, {"grid": [[1]], "obj": {"a": 2}}]),
    ("pattern_specials", {
        "type": "object",
        "properties": {"w": {"type": "string", "pattern": "^[\\w.-]+$"},
                       "q": {"type": "string", "pattern": "^[\"\\\\a]{1,4}$"},
                       "s": {"type": "string", "pattern": "^a\\sb\\d*(x|yz)?$"},
                       "u": {"type": "string", "pattern": "^\\u00e9+[^a-z0-9]$"}},
        "required": ["w", "q", "s", "u"], "additionalProperties": False,
    }, [{"w": "a.b-c_9", "q": "\"\\a", "s": "a b12yz", "u": "\u00e9\u00e9Z"}, {"w": "x", "q": "a", "s": "a\tb", "u": "\u00e9!"}],
       [{"w": "a b", "q": "a", "s": "a b", "u": "\u00e9!"}, {"w": "a", "q": "b", "s": "a b", "u": "\u00e9!"},
        {"w": "a", "q": "a", "s": "ab", "u": "\u00e9!"}, {"w": "a", "q": "a", "s": "a b", "u": "\u00e9a"}]),
    ("integer_ranges", {
        "type": "array", "prefixItems": [
            {"type": "integer", "minimum": 7}, {"type": "integer", "exclusiveMaximum": -5},
            {"type": "integer", "minimum": 95, "maximum": 1234}, {"type": "integer", "minimum": -1234, "maximum": -95}],
        "items": False,
    }, [[7, -6, 95, -95], [123456, -1000, 1234, -1234]], [[6, -6, 100, -100], [7, -5, 100, -100], [7, -6, 94, -100], [7, -6, 100, -1235]]),
]


def run(tool, *args, stdin=None):
    r = subprocess.run([tool, *args], input=stdin, capture_output=True, text=True, encoding="utf-8")
    if r.returncode != 0:
        raise RuntimeError(f"{tool} {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def main():
    tool = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    seed = sys.argv[3] if len(sys.argv) > 3 else "12345"
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, schema, good, bad in CASES:
            path = os.path.join(tmp, name + ".json")
            with open(path, "w") as f:
                json.dump(schema, f)
            validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
            samples = [json.loads(line) for line in run(tool, "--sample", path, str(n), seed).split("\n") if line]
            bad_samples = 0
            for text in samples:
                try:
                    doc = json.loads(text)
                except ValueError as e:
                    bad_samples += 1
                    print(f"FAIL {name}: sample is not JSON ({e}): {text!r}")
                    continue
                errors = list(validator.iter_errors(doc))
                if errors:
                    bad_samples += 1
                    print(f"FAIL {name}: sample {text!r} does not validate: {errors[0].message}")
            failures += bad_samples
            docs = [json.dumps(d, ensure_ascii=False) for d in good + bad]
            if name == "additional_schema":  # a duplicate key, which json.dumps cannot write
                docs[-1] = '{"id": 1, "id": "d"}'
            verdicts = run(tool, "--accept", path, stdin="".join(json.dumps(d) + "\n" for d in docs)).split()
            for i, (doc, v) in enumerate(zip(docs, verdicts)):
                want = "1" if i < len(good) else "0"
                if want == "1":
                    assert not list(validator.iter_errors(json.loads(doc))), f"{name}: test document {doc} is invalid"
                if v != want:
                    failures += 1
                    print(f"FAIL {name}: grammar {'refused' if want == '1' else 'accepted'} {doc}")
            print(f"{name}: {len(samples) - bad_samples}/{len(samples)} samples valid, {len(docs)} documents judged")
    print("OK" if failures == 0 else f"{failures} FAILURES")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
