"""Audits: many models × many specifications × methods × seeds in one run, resumable, in process or on Ray.

- :mod:`biastest.audit.grid` reads and checks the grid file (YAML) before anything loads;
- :mod:`biastest.audit.plan` freezes the test data and expands the grid into cells keyed by content;
- :mod:`biastest.audit.cells` runs one cell with the runners the apps and the command line use;
- :mod:`biastest.audit.run` runs the cells (in this process) and writes each cell once and the results table;
- :mod:`biastest.audit.ray_runner` runs them on a Ray cluster (the only module that imports ray, an optional extra).

``python -m biastest audit GRID.yaml --out DIR [--ray ADDRESS|local]`` is the command line.
"""

from __future__ import annotations

from biastest.audit.grid import Grid, GridError, load_grid, parse_grid
from biastest.audit.run import AuditSummary, read_table, run_audit

__all__ = ["AuditSummary", "Grid", "GridError", "load_grid", "parse_grid", "read_table", "run_audit"]
