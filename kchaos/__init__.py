"""kafka-chaos's app, the top floor: the `kchaos` command, scenarios, the runner, replay and shrink,
the plain summary and the pytest plugin. It assembles the floors below (docs/ARCHITECTURE.md).

Public API (imported from its module):

- `kchaos.scenario`: `load_scenario`, `Scenario`; `kchaos.runner`: `run_scenario`, `RunOutcome`.
- `kchaos.cli`: `main`, the command line and its exit codes.
- `kchaos.pytest_plugin`: the `kchaos` pytest fixtures for chaos tests of your own.
"""
