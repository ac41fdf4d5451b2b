#!/usr/bin/env sh
# Count the hostile cases in tests/ (issue 27): every collected test case, parametrized ones one by one, of the
# files that hold hostile inputs -- the command line, API, policy and app cases (test_hostile.py), hostile data
# (test_hostile_data.py), numbers (test_hostile_numbers.py), endpoint answers and over-long questions
# (test_hostile_answers.py), pinned connections and rebinding (test_remote.py), pickles and bombs
# (test_safe_loading.py), the local Ray instance's sockets (test_ray_loopback.py).
# Usage: sh scripts/hostile_cases.sh [python]   (prints one number; nothing is run, pytest only collects)
PY="${1:-.venv/bin/python}"
"$PY" -m pytest --collect-only -q -p no:cacheprovider \
    tests/test_hostile.py tests/test_hostile_data.py tests/test_hostile_numbers.py tests/test_hostile_answers.py \
    tests/test_remote.py tests/test_safe_loading.py tests/test_ray_loopback.py 2>/dev/null | grep -c '::'
