"""Reports: what people look at after a run.

    write_report(run_dir)  -> RUN/report/index.html (+ junit.xml, summary.json beside it)
    write_index(runs_dir)  -> RUNS/index.html over many runs, with trends per scenario

Reads run.json, check/result.json and the small history files (faults, cluster) only.
"""

from __future__ import annotations

from reports.index import write_index
from reports.write import write_report

__all__ = ["write_index", "write_report"]
