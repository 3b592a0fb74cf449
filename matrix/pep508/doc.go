// Package pep508 parses the environment markers of Python requirements
// (PEP 508, as packaging.python.org's "Dependency specifiers" gives it):
// `sys_platform == "linux" and (platform_machine == "x86_64" or extra ==
// "cuda12")`, and evaluates them for a target platform and Python. Version
// variables compare as PEP 440 versions (package pep440), the others as
// strings, as pypa/packaging does. A variable the target does not give
// makes the outcome unknown, never true: see Evaluate.
package pep508
