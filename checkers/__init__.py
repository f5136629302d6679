"""The judge: checks a run directory's history on Spark and writes check/result.json.

from checkers import check_run
result = check_run(Path("runs/20261121-142233-leader-kill"))       # local[*]
result = check_run(run_dir, master="spark://spark-master:7077")    # a real Spark cluster
"""

from checkers.check import check_run, start_checking
from checkers.guarantees import derive_guarantees
from checkers.result import EXAMPLE_CAP, RESULT_FORMAT
from checkers.session import get_spark

__all__ = ["EXAMPLE_CAP", "RESULT_FORMAT", "check_run", "derive_guarantees", "get_spark", "start_checking"]
