#!/bin/bash
# kchaos-entrypoint ROLE: run a Kafka broker (ROLE=kafka), a KRaft controller (ROLE=controller) or a
# ZooKeeper node (ROLE=zookeeper).
# The JVM is started directly (not through bin/*.sh), because the launchers of old Kafka versions
# pass GC-log options that Java 9+ rejects. Configuration arrives in $KCHAOS_CONFIG (the whole
# properties file, rendered by the harness for this Kafka version).
set -euo pipefail
role=${1:?usage: kchaos-entrypoint kafka|controller|zookeeper}
conf=/etc/kchaos/$role.properties
mkdir -p /etc/kchaos
# KCHAOS_CONFIG_COMMON (optional) is shared settings, for hand-written compose files; the harness
# renders everything into KCHAOS_CONFIG. Both are written as they are (%s, never %b or echo -e):
# the harness escapes values for Java's properties reader, and a shell must not interpret them again.
printf '%s\n%s\n' "${KCHAOS_CONFIG_COMMON:-}" "${KCHAOS_CONFIG:?KCHAOS_CONFIG must hold the $role properties}" > "$conf"

case "$role" in
  kafka|controller) main=kafka.Kafka ;;
  zookeeper)
    main=org.apache.zookeeper.server.quorum.QuorumPeerMain
    if [ -n "${KCHAOS_ZK_MYID:-}" ]; then echo "$KCHAOS_ZK_MYID" > /var/lib/zookeeper/myid; fi ;;
  *) echo "unknown role '$role' (expected kafka, controller or zookeeper)" >&2; exit 2 ;;
esac

# KRaft: the log directory is formatted with the cluster's id (and KCHAOS_KRAFT_FEATURES, "name=level"
# separated by spaces) before its first start. A restart finds meta.properties there and starts no
# JVM for it: a heal's restart takes as long as in ZooKeeper mode.
log_dir=$(sed -n 's/^log\.dirs=//p' "$conf" | tail -1)
if [ -n "${KCHAOS_KRAFT_CLUSTER_ID:-}" ] && [ ! -f "${log_dir:-/nonexistent}/meta.properties" ]; then
  features=()
  for feature in ${KCHAOS_KRAFT_FEATURES:-}; do features+=(--feature "$feature"); done
  java -Xmx128m -cp '/opt/kafka/libs/*' -Dlog4j.configuration=file:/etc/kchaos/log4j.properties \
    -Dlog4j2.configurationFile=/etc/kchaos/log4j2.properties -Dkafka.logs.dir=/var/log/kafka \
    kafka.tools.StorageTool format -t "$KCHAOS_KRAFT_CLUSTER_ID" -c "$conf" --ignore-formatted "${features[@]}"
fi

heap=${KCHAOS_HEAP:-256m}
# One logging setup for every release: log4j 1 (or reload4j) reads the first property, log4j 2 (4.x)
# the second. ZooKeeper's log4j JMX beans are off: reload4j, the backend of 1.1-3.x here, has none.
exec java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -Djava.awt.headless=true \
  -Dlog4j.configuration=file:/etc/kchaos/log4j.properties \
  -Dlog4j2.configurationFile=/etc/kchaos/log4j2.properties -Dkafka.logs.dir=/var/log/kafka \
  -Dzookeeper.4lw.commands.whitelist='*' -Dzookeeper.jmx.log4j.disable=true \
  -cp '/opt/kafka/libs/*' "$main" "$conf"
