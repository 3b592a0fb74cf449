"""Vendor pypa/packaging's own test tables as JSON for gpuimg's Go tests.

Usage: python3 extract_pypa.py PACKAGING_CHECKOUT COMMIT > pypa-packaging.json

It imports tests/test_version.py, tests/test_specifiers.py and
tests/test_markers.py and tests/test_utils.py from the checkout with a stub pytest whose
mark.parametrize records the arguments instead of running anything, and
writes the tables the Go tests read. A packaging Version object in a
table is written as {"version": str(v)} (the tests pass both strings and
Version objects). Nothing here is edited by hand.
"""
import importlib
import json
import sys
import types

records = {}


class Mark:
    def parametrize(self, names, values, **kw):
        def deco(fn):
            records.setdefault(fn.__qualname__, []).append({"names": names, "values": list(values)})
            return fn
        return deco

    def __getattr__(self, name):
        def deco(*a, **k):
            if len(a) == 1 and callable(a[0]) and not k:
                return a[0]
            return lambda fn: fn
        return deco


pytest = types.ModuleType("pytest")
pytest.mark = Mark()
pytest.param = lambda *a, **k: a
pytest.MonkeyPatch = object
sys.modules["pytest"] = pytest
sys.modules["pretend"] = types.ModuleType("pretend")
sys.path[:0] = [sys.argv[1] + "/src", sys.argv[1]]

from packaging.tags import Tag  # noqa: E402
from packaging.version import Version  # noqa: E402


def clean(v):
    if isinstance(v, Version):
        return {"version": str(v)}
    if isinstance(v, Tag):
        return str(v)
    if isinstance(v, (set, frozenset)):
        return sorted(clean(x) for x in v)
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()}
    if v is None or isinstance(v, (str, bool, int, float)):
        return v
    raise TypeError(repr(v))


def table(name, i=0):
    return clean(records[name][i]["values"])


importlib.import_module("tests.test_version")
tv = importlib.import_module("tests.test_version")
importlib.import_module("tests.test_specifiers")
importlib.import_module("tests.test_markers")
importlib.import_module("tests.test_utils")

out = {
    "source": "https://github.com/pypa/packaging",
    "commit": sys.argv[2],
    "version": {
        "ordered": tv.VERSIONS,
        "invalid": table("TestVersion.test_invalid_versions"),
        "normalized": table("TestVersion.test_normalized_versions"),
        "public": table("TestVersion.test_version_public"),
        "base_version": table("TestVersion.test_version_base_version"),
        "local": table("TestVersion.test_version_local"),
        "is_prerelease": table("TestVersion.test_version_is_prerelease"),
        "is_devrelease": table("TestVersion.test_version_is_devrelease"),
        "is_postrelease": table("TestVersion.test_version_is_postrelease"),
    },
    "specifier": {
        # (version, specifier, expected), prereleases=True
        "contains": table("TestSpecifier.test_specifiers"),
        "valid": importlib.import_module("tests.test_specifiers").SPECIFIERS,
        "invalid": table("TestSpecifier.test_specifiers_invalid"),
        # (specifier, version, spec_pre, contains_pre, expected)
        "prereleases": table("TestSpecifier.test_specifiers_prereleases"),
        # (version, specifier, expected)
        "arbitrary": table("TestSpecifier.test_arbitrary_equality"),
        # (specifier, version, expected)
        "arbitrary_normalization": table("TestSpecifier.test_arbitrary_equality_normalization"),
    },
    "specifier_set": {
        # (version, specifier set, expected)
        "arbitrary": table("TestSpecifierSet.test_contains_arbitrary_equality_contains"),
        # (specifier set, prereleases, version, expected)
        "exclusionary_bridges": table("TestSpecifierSet.test_contains_exclusionary_bridges"),
        # (specifier set, version, expected)
        "post_release_boundary": table("TestSpecifierSet.test_contains_post_release_boundary_intersection"),
    },
    "wheel_filename": {
        # (filename, normalized name, version, build tag, tags)
        "valid": table("test_parse_wheel_filename"),
        "invalid": table("test_parse_wheel_invalid_filename"),
    },
    "marker": {
        "valid": table("TestMarker.test_parses_valid"),
        "invalid": table("TestMarker.test_parses_invalid"),
        # (marker, environment overrides, expected)
        "evaluates": table("TestMarker.test_evaluates"),
        "version_like_equality": table("TestMarker.test_version_like_equality"),
        # (expression with {0} for the variable, result)
        "extras": table("TestMarker.test_extras_and_dependency_groups"),
    },
}
json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
sys.stdout.write("\n")
