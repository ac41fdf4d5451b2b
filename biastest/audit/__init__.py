"""Audits: many models × many specifications × methods × seeds in one run, resumable, in process or on Ray.

- :mod:`biastest.audit.grid` reads and checks the grid file (YAML, through :mod:`biastest.audit.safe_yaml`)
  before anything loads, with :mod:`~biastest.audit.grid_common`, :mod:`~biastest.audit.grid_models` (the
  models), :mod:`~biastest.audit.grid_data` (the test data) and :mod:`~biastest.audit.grid_options` (each cell's
  options, checked by its measure's ``Options``);
- :mod:`biastest.audit.uses` says how an audit uses each measure of :data:`biastest.measures.MEASURES` (its
  items, defaults and table row);
- :mod:`biastest.audit.plan` freezes the test data and expands the grid into cells keyed by content;
- :mod:`biastest.audit.cells` runs one cell's measure (``measure.run(options, items)``) and reads its row;
- :mod:`biastest.audit.run` runs the cells (in this process) and writes each cell once and the results table;
- :mod:`biastest.audit.ray_runner` runs them on a Ray cluster (the only module that imports ray, an optional extra);
- :mod:`biastest.audit.progress` is the progress bar of both, :mod:`biastest.audit.report` the HTML report.

``python -m biastest audit GRID.yaml --out DIR [--ray ADDRESS|local]`` is the command line.
"""

from __future__ import annotations

from biastest.audit.grid import Grid, GridError, load_grid, parse_grid
from biastest.audit.run import AuditSummary, read_table, run_audit

__all__ = ["AuditSummary", "Grid", "GridError", "load_grid", "parse_grid", "read_table", "run_audit"]
