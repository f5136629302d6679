package kchaos;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * `member` (harness/group_member.py): one consumer-group member. It subscribes, polls, processes
 * (recording a `poll` event is the processing) and commits by its group's commit mode: `after-process`
 * (commit what was processed, after each batch or every `commit_interval_s`, on revoke and at a clean
 * stop: at least once), `before-process` (commit a batch, and process it only once the commit is `ok`:
 * at most once) or `auto` (the client's periodic auto-commit). `config` passes through: isolation.level,
 * group.protocol (`consumer`: KIP-848 on 4.x), timeouts.
 *
 * <p>Spec: `group`, `topics`, `commit`, `commit_async`, and optionally `processing_ms`, `commit_interval_s`.
 */
final class MemberRole extends Role {
    static final int BATCH = 100; // records per poll: one commit per batch
    static final Duration POLL_TIMEOUT = Duration.ofMillis(200);
    private static final Comparator<TopicPartition> ORDER =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    private final Spec spec;
    private final String group;
    private final String commit;
    private final boolean commitAsync;
    private final double processingMs;
    private final double commitIntervalS;
    private final Properties config;
    private final AtomicLong commitId = new AtomicLong();
    private final Map<TopicPartition, Long> processed = new HashMap<>(); // next offset to consume
    private final Map<TopicPartition, Long> committed = new HashMap<>();
    private long lastCommitNs = System.nanoTime();
    // The generation as last read on the polling thread: auto-commits are reported from the client's.
    private volatile Long generation;
    private KafkaConsumer<byte[], byte[]> consumer;

    MemberRole(Spec spec, History history) {
        super(history);
        this.spec = spec;
        group = spec.text("group");
        commit = spec.text("commit");
        if (!List.of("after-process", "before-process", "auto").contains(commit)) {
            throw new Spec.SpecError("field 'commit': expected after-process, before-process or auto, got " + commit);
        }
        commitAsync = spec.flag("commit_async");
        processingMs = spec.number("processing_ms", 0, 3_600_000, 0);
        commitIntervalS = spec.number("commit_interval_s", 0, 86_400, 0);
        config = spec.settings("config");
        config.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(BATCH));
        config.setProperty(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, Boolean.toString(commit.equals("auto")));
        config.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.setProperty(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        config.setProperty(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (commit.equals("auto")) {
            // The Java client reports an auto-commit only to interceptors, and only once it succeeded.
            config.setProperty(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG, AutoCommits.class.getName());
            AutoCommits.member = this;
        }
    }

    private ObjectNode event(String type) {
        ObjectNode event = history.event(type);
        event.put("group", group);
        return event;
    }

    private void emit(ObjectNode event) {
        history.emit(History.CONSUMES, event);
    }

    private Long readGeneration() {
        int id = consumer.groupMetadata().generationId();
        generation = id >= 0 ? (long) id : null;
        return generation;
    }

    private static void putGeneration(ObjectNode event, Long generation) {
        if (generation == null) {
            event.putNull("generation");
        } else {
            event.put("generation", generation);
        }
    }

    @Override
    void run() throws InterruptedException {
        emit(event("start"));
        consumer = new KafkaConsumer<>(config);
        consumer.subscribe(spec.texts("topics"), new Rebalances());
        while (!stopping()) {
            ConsumerRecords<byte[], byte[]> records;
            try {
                records = consumer.poll(POLL_TIMEOUT);
            } catch (KafkaException e) {
                System.err.println("kchaos-client: poll: " + e);
                pause(MAX_WAIT_MS);
                continue;
            }
            readGeneration();
            if (!records.isEmpty()) {
                handle(records);
            }
        }
        if (commit.equals("after-process")) {
            commitProcessed(false);
        }
        consumer.close();
        ObjectNode stop = event("stop");
        stop.put("reason", "closed");
        emit(stop);
    }

    private void handle(ConsumerRecords<byte[], byte[]> records) throws InterruptedException {
        Map<TopicPartition, Long> batchNext = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            batchNext.merge(new TopicPartition(record.topic(), record.partition()), record.offset() + 1, Math::max);
        }
        // At most once: a batch whose commit is not known stored is never processed, but read again
        // (a commit not known stored costs a second read of the batch, not the batch).
        if (commit.equals("before-process") && !"ok".equals(commit(batchNext, false))) {
            rewind(records);
            return;
        }
        Long generation = readGeneration();
        for (ConsumerRecord<byte[], byte[]> record : records) {
            if (processingMs > 0) {
                Thread.sleep((long) processingMs, (int) ((processingMs % 1) * 1_000_000));
            }
            ObjectNode poll = event("poll");
            putGeneration(poll, generation);
            poll.put("topic", record.topic());
            poll.put("partition", record.partition());
            poll.put("offset", record.offset());
            byte[] value = record.value();
            if (value == null || value.length == 0) {
                poll.putNull("value");
            } else {
                poll.put("value", new String(value, StandardCharsets.UTF_8).split("\\|", 2)[0]);
            }
            emit(poll);
            processed.put(new TopicPartition(record.topic(), record.partition()), record.offset() + 1);
        }
        boolean due = System.nanoTime() - lastCommitNs >= commitIntervalS * 1e9;
        if (commit.equals("after-process") && due) {
            commitProcessed(commitAsync);
        }
    }

    /**
     * Seek each partition of `records` the member still owns back to the batch's first offset there.
     * A partition it lost is its next owner's, from the commit.
     */
    private void rewind(ConsumerRecords<byte[], byte[]> records) {
        Set<TopicPartition> owned = consumer.assignment();
        for (TopicPartition tp : records.partitions()) {
            if (owned.contains(tp)) {
                try {
                    consumer.seek(tp, records.records(tp).get(0).offset());
                } catch (KafkaException | IllegalStateException e) { // revoked meanwhile, or no answer
                    System.err.println("kchaos-client: no rewind of " + tp + ": " + e);
                }
            }
        }
    }

    /** Commit what was processed and not yet committed (after a batch, before a revoke, at a clean stop). */
    private void commitProcessed(boolean asynchronous) {
        Map<TopicPartition, Long> due = new HashMap<>();
        processed.forEach((tp, offset) -> {
            if (!offset.equals(committed.get(tp))) {
                due.put(tp, offset);
            }
        });
        if (!due.isEmpty()) {
            commit(due, asynchronous);
        }
    }

    /** Commit `offsets`: the outcome, or null for an asynchronous commit (recorded when it completes). */
    private String commit(Map<TopicPartition, Long> offsets, boolean asynchronous) {
        lastCommitNs = System.nanoTime();
        long id = commitId.incrementAndGet();
        Map<TopicPartition, OffsetAndMetadata> sent = new TreeMap<>(ORDER);
        offsets.forEach((tp, offset) -> sent.put(tp, new OffsetAndMetadata(offset)));
        emit(commitEvent("invoke", id, readGeneration(), sent, null));
        try {
            if (asynchronous) {
                consumer.commitAsync(sent, (done, error) -> outcome(id, sent, error));
                return null;
            }
            consumer.commitSync(sent);
        } catch (KafkaException | IllegalStateException e) {
            return outcome(id, sent, e);
        }
        return outcome(id, sent, null);
    }

    private String outcome(long id, Map<TopicPartition, OffsetAndMetadata> sent, Exception error) {
        String outcome = Outcomes.commitOutcome(error);
        emit(commitEvent(outcome, id, readGeneration(), sent, error));
        if (outcome.equals("ok")) {
            sent.forEach((tp, offset) -> committed.put(tp, offset.offset()));
        }
        return outcome;
    }

    private ObjectNode commitEvent(String phase, long id, Long generation, Map<TopicPartition, OffsetAndMetadata> offsets,
            Exception error) {
        ObjectNode event = event("commit");
        putGeneration(event, generation);
        event.put("phase", phase);
        event.put("commit_id", id);
        ArrayNode listed = event.putArray("offsets");
        offsets.forEach((tp, offset) -> listed.addObject().put("topic", tp.topic()).put("partition", tp.partition())
                .put("offset", offset.offset()));
        if (error != null) {
            event.put("error", Outcomes.described(error));
        }
        return event;
    }

    /** An auto-commit the client reports done (from whichever of its threads completed it): its invoke
     * is recorded now, just before its outcome, as harness/group_member.py does. */
    synchronized void autoCommitted(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (offsets.isEmpty()) {
            return; // nothing to commit: no commit was sent
        }
        Map<TopicPartition, OffsetAndMetadata> sent = new TreeMap<>(ORDER);
        sent.putAll(offsets);
        long id = commitId.incrementAndGet();
        emit(commitEvent("invoke", id, generation, sent, null));
        emit(commitEvent("ok", id, generation, sent, null));
    }

    private void partitions(String type, Collection<TopicPartition> partitions) {
        ObjectNode event = event(type);
        putGeneration(event, readGeneration());
        ArrayNode listed = event.putArray("partitions");
        partitions.stream().sorted(ORDER).forEach(tp -> listed.addObject().put("topic", tp.topic())
                .put("partition", tp.partition()));
        emit(event);
    }

    private final class Rebalances implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            partitions("assign", partitions);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            // The rebalance listener of an at-least-once consumer: commit what was processed while the
            // partitions are still ours, so their next owner starts after it.
            if (commit.equals("after-process")) {
                commitProcessed(false);
            }
            partitions("revoke", partitions);
            for (TopicPartition tp : partitions) {
                processed.remove(tp);
                committed.remove(tp);
            }
        }
    }

    /** The consumer interceptor through which auto-commits are seen (`interceptor.classes`). */
    public static final class AutoCommits implements ConsumerInterceptor<byte[], byte[]> {
        static volatile MemberRole member;

        @Override
        public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
            return records;
        }

        @Override
        public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
            MemberRole role = member;
            if (role != null) {
                role.autoCommitted(offsets);
            }
        }

        @Override
        public void close() {}

        @Override
        public void configure(Map<String, ?> configs) {}
    }
}
