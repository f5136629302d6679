"""kafka-chaos harness: real Kafka clusters in containers, the workload, and its history.

Two floors. This package is the ground floor, which `faults`, `checkers` and `reports` build on;
`kchaos` is the top floor (CLI, runner, scenarios, pytest plugin, consoles) that assembles
them. `scripts/check_layers.py` (in `make lint` and the tests) keeps it that way.

Public API (imported from its module, so `import contract.errors` stays cheap for checkers/reports):

- `harness.cluster`: `KafkaCluster`, `ClusterSpec` (context manager over one Docker network).
- `harness.services`: `KafkaBroker`, `KRaftController`, `ZooKeeperNode` (kill, start, stop, pause,
  resume, exec, logs, ip).
- `harness.cluster_state`: `ClusterSnapshot`, `ClusterSampler`, `MetadataReader`, read by
  `harness.zkstate.ZkStateReader` or `harness.kraft_state.KRaftStateReader`.
- `harness.images`: `KafkaDistribution` (a release by version, tarball or directory), `ensure_kafka_image`.
- `harness.workload`: `Workload`, `WorkloadSpec`; `harness.experiment`: `run_experiment`, `ExperimentSpec`.
- `kchaos.scenario`: `load_scenario`, `Scenario`; `kchaos.runner`: `run_scenario`, `RunOutcome`.
- `contract.history`: run-directory layout, `RunClock`, `HistoryWriter`;
  `contract.history_readers`: run.json and the small history files, read strictly.
- `contract.errors`: the `HarnessError` tree.
"""
