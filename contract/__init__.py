"""The run-directory contract (docs/HISTORY_FORMAT.md, docs/RESULT_FORMAT.md): what the harness
writes and the checkers and reports read, and nothing else: file names and writing (`history`),
events and their fields (`events`, `history_fields`), strict reading (`strictjson`,
`history_readers`, `history_scan`), the kinds and guarantees (`anomaly_kinds`), broker log lines
(`broker_logs`), scenario expectations' outcomes (`expectation_outcomes`), node names (`nodes`) and
group coordinators (`coordinators`). checkers/ and reports/ import from here (and `contract.errors`,
`contract.limits`) only; this package imports nothing else of the harness.
"""
