#!/usr/bin/env python3
"""Each installed header includes the standard header of every standard
facility it names (include what you use): what a header compiled alone cannot
show when one standard header happens to bring in another.
Usage: std_includes_check.py INCLUDE_DIR | --self-test"""
import pathlib
import re
import sys

# std::NAME -> the header that declares it.
HEADER_OF = {
    "string": "string", "to_string": "string",
    "vector": "vector", "span": "span", "string_view": "string_view",
    "move": "utility", "pair": "utility", "exchange": "utility",
    "shared_ptr": "memory", "unique_ptr": "memory", "make_shared": "memory", "make_unique": "memory",
    "enable_shared_from_this": "memory",
    "mutex": "mutex", "lock_guard": "mutex", "unique_lock": "mutex", "once_flag": "mutex", "call_once": "mutex",
    "atomic": "atomic", "memory_order_relaxed": "atomic", "memory_order_acquire": "atomic",
    "memory_order_release": "atomic",
    "unordered_map": "unordered_map", "unordered_set": "unordered_set", "map": "map",
    "optional": "optional", "nullopt": "optional",
    "function": "functional", "less": "functional", "equal_to": "functional", "hash": "functional",
    "array": "array", "chrono": "chrono", "thread": "thread", "this_thread": "thread",
    "condition_variable": "condition_variable",
    "memcpy": "cstring", "strcmp": "cstring", "strtoll": "cstdlib", "vsnprintf": "cstdio",
    "system_error": "system_error", "errc": "system_error",
    "max": "algorithm", "min": "algorithm", "sort": "algorithm", "clamp": "algorithm",
    "bad_alloc": "new", "exception": "exception",
    "type_identity_t": "type_traits", "remove_pointer_t": "type_traits", "remove_cvref_t": "type_traits",
    "is_trivially_copyable_v": "type_traits",
    "mt19937_64": "random", "random_device": "random",
    "variant": "variant", "holds_alternative": "variant", "tuple": "tuple",
    "numeric_limits": "limits", "initializer_list": "initializer_list",
}

def code_of(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)

def missing_includes(root):
    problems = []
    for header in sorted(root.rglob("*.h")):
        text = header.read_text()
        included = set(re.findall(r"^\s*#\s*include\s*<([^>]+)>", text, re.M))
        missing = {}
        for name in re.findall(r"\bstd::([A-Za-z_0-9]+)", code_of(text)):
            need = HEADER_OF.get(name)
            if need and need not in included:
                missing.setdefault(need, name)
        for need, name in sorted(missing.items()):
            problems.append(f"{header.relative_to(root)}: uses std::{name} without #include <{need}>")
    return problems


def self_test():
    """The check finds what it is for, and nothing in comments or strings."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        (root / "bad.h").write_text("#include <string>\nstd::vector<std::string> f(); // std::map\n")
        (root / "good.h").write_text('#include <vector>\nstd::vector<int> g(); /* std::map */ const char* s = "std::map";\n')
        found = missing_includes(root)
        expected = ["bad.h: uses std::vector without #include <vector>"]
        if found != expected:
            sys.exit(f"self-test: expected {expected}, found {found}")
    print("std_includes_check finds a missing standard include and ignores comments and strings")


if sys.argv[1:] == ["--self-test"]:
    self_test()
    sys.exit(0)
problems = missing_includes(pathlib.Path(sys.argv[1]))
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(f"{len(problems)} missing standard include(s) in the installed headers")
