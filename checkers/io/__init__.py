"""All file I/O of the checkers: history files in, Parquet cache, check/result.json out.

run.json and the small files (faults.jsonl, cluster.jsonl, client.jsonl, replicas.jsonl,
consumes.jsonl, broker logs) are validated in Python (`layout`) before Spark starts. writes.jsonl
and reads.jsonl are parsed (by pyarrow, `arrow_parse`, when it takes a file whole, else by Spark)
and converted by Spark once per run, in one job when pyarrow took reads.jsonl, into a Parquet cache
(`cache`), with pyarrow's parses of consumes.jsonl, replicas.jsonl and cluster.jsonl when it takes
those files; the first offending line of a bad file is named by an extra, slower pass (`bad_lines`).
`history`
gathers all of it into the `History` the checkers take, and writes check/result.json.
Every file written under the run directory goes through `contract.history`'s no-link writers.
"""

from checkers.io.cache import ParsedFiles, parsed_files
from checkers.io.history import History, discard_result, load_history, write_result
from checkers.io.layout import Layout, check_layout, history_bytes
from checkers.io.sources import CONSUME_SCHEMA, partitions_of, topic_acks

__all__ = [
    "CONSUME_SCHEMA",
    "History",
    "Layout",
    "ParsedFiles",
    "check_layout",
    "discard_result",
    "history_bytes",
    "load_history",
    "parsed_files",
    "partitions_of",
    "topic_acks",
    "write_result",
]
