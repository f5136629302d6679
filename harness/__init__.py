"""kafka-chaos harness: real Kafka clusters in containers, and the workload that runs against them.

A room of the second floor (docs/ARCHITECTURE.md): it builds on `contract` only; `faults` build on
it, and `kchaos` (the app) assembles it with the rest.

Public API (imported from its module):

- `harness.cluster`: `KafkaCluster`, `ClusterSpec` (context manager over one Docker network).
- `harness.services`: `KafkaBroker`, `KRaftController`, `ZooKeeperNode` (kill, start, stop, pause,
  resume, exec, logs, ip).
- `harness.cluster_state`: `ClusterSnapshot`, `ClusterSampler`, `MetadataReader`, read by
  `harness.zkstate.ZkStateReader` or `harness.kraft_state.KRaftStateReader`.
- `harness.images`: `KafkaDistribution` (a release by version, tarball or directory), `ensure_kafka_image`.
- `harness.workload`: `Workload`, `WorkloadSpec`; `harness.experiment`: `run_experiment`, `ExperimentSpec`.
"""
