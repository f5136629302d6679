package kchaos;

import com.fasterxml.jackson.databind.node.ArrayNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * `pipeline` (harness/pipeline.py): consume-transform-produce, the exactly-once pipeline users build on
 * transactions. A member of group kchaos-pipe reading `inputs` read_committed; per batch polled, in one
 * transaction: one write per input record to `output` (value `<process>:<sequence>/<input value>`), then
 * the batch's input offsets with the consumer's group metadata (sendOffsetsToTransaction: a member fenced
 * out of its generation cannot commit them, KIP-447), then commit or abort as drawn. A batch not
 * committed is processed again: the consumer is sought back to the group's committed offsets, which the
 * client does not do by itself after an abort (KAFKA-17582); when it cannot be, it leaves and joins
 * again.
 *
 * <p>Spec: the transactional producer's (`transactional_id`, `partitions`, `transactions`, `seed`), plus
 * `inputs`, `output` and `consumer_config` (the consumer's settings; the group, isolation, offset reset
 * and the timings below go over them, as harness.pipeline.PIPELINE_CONSUMER_CONFIG does).
 */
final class PipelineRole extends TransactionalRole {
    /** harness.pipeline.PIPELINE_GROUP */
    static final String GROUP = "kchaos-pipe";
    static final Duration POLL_TIMEOUT = Duration.ofMillis(200);

    private final Properties consumerConfig;
    private long sequence;
    private long txn;

    PipelineRole(Spec spec, History history) {
        super(spec, history);
        consumerConfig = spec.settings("consumer_config");
        consumerConfig.setProperty(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
        consumerConfig.setProperty(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        consumerConfig.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        consumerConfig.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerConfig.setProperty(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(records[1]));
        consumerConfig.setProperty(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        // A member stalled longer than this leaves the group (its heartbeats go on from the client's own
        // thread, so the session alone would never expire): its partitions move, and it wakes a zombie.
        consumerConfig.setProperty(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "8000");
        if (!"consumer".equalsIgnoreCase(consumerConfig.getProperty("group.protocol", "classic"))) {
            // KIP-848's protocol takes the session and heartbeat from the broker; the client refuses them
            consumerConfig.setProperty(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            consumerConfig.setProperty(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        }
        consumerConfig.setProperty(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        consumerConfig.setProperty(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    }

    /** The consumer's position could not be rewound: leave the group and join again. */
    private static final class Rejoin extends Exception {
        private static final long serialVersionUID = 1L;

        Rejoin(Throwable cause) {
            super(cause);
        }
    }

    @Override
    void run() throws InterruptedException {
        List<String> inputs = spec.texts("inputs");
        String output = spec.text("output");
        int partitions = spec.integer("partitions", 1, 1 << 20);
        Producer<byte[], byte[]> client = started();
        while (client != null && !stopping()) {
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig)) {
                consumer.subscribe(inputs);
                client = pipe(consumer, client, output, partitions);
            } catch (Rejoin e) {
                System.err.println("kchaos-client: the pipeline's consumer joins again: " + e.getCause());
                client = current(); // the client goes on; the consumer starts over
            }
        }
        closeWithin(callTimeoutMs);
    }

    /** Process batches until stopped; returns the client (another after a fatal error), or null. */
    private Producer<byte[], byte[]> pipe(KafkaConsumer<byte[], byte[]> consumer, Producer<byte[], byte[]> client,
            String output, int partitions) throws InterruptedException, Rejoin {
        while (!stopping()) {
            List<ConsumerRecord<byte[], byte[]>> batch = new java.util.ArrayList<>();
            try {
                consumer.poll(POLL_TIMEOUT).forEach(batch::add);
            } catch (KafkaException e) {
                throw new Rejoin(e);
            }
            if (batch.isEmpty()) {
                continue;
            }
            String ending = drawEnding();
            try {
                client.beginTransaction();
            } catch (KafkaException | IllegalStateException e) {
                Producer<byte[], byte[]> replacement = replaced();
                rewind(consumer);
                if (replacement == null) {
                    return null;
                }
                client = replacement;
                continue;
            }
            begun(txn);
            Map<TopicPartition, OffsetAndMetadata> positions = new TreeMap<>(
                    Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            for (ConsumerRecord<byte[], byte[]> record : batch) {
                String text = record.value() == null ? "" : new String(record.value(), StandardCharsets.UTF_8).split("\\|", 2)[0];
                writes.send(client, output, record.partition() % partitions, txn, sequence, "/" + text);
                sequence++;
                positions.put(new TopicPartition(record.topic(), record.partition()), new OffsetAndMetadata(record.offset() + 1));
            }
            whileFrozen();
            Producer<byte[], byte[]> sender = client;
            String sent = call("offsets", txn, () -> sender.sendOffsetsToTransaction(positions, consumer.groupMetadata()),
                    MAX_ATTEMPTS, event -> {
                        event.put("group", GROUP);
                        ArrayNode offsets = event.putArray("offsets");
                        positions.forEach((tp, offset) -> offsets.addObject().put("topic", tp.topic())
                                .put("partition", tp.partition()).put("offset", offset.offset()));
                    });
            String outcome = finish(client, txn, ending, !sent.equals("ok"));
            txn++;
            if (outcome.equals("fatal")) {
                client = replaced();
                if (client == null) {
                    return null;
                }
            }
            if (!outcome.equals("committed") && rewindOnAbort) {
                rewind(consumer);
            }
        }
        return client;
    }

    /** Seek every assigned partition back to the group's committed offset (its beginning when none is
     * committed): the batch not committed is to be processed again. */
    private void rewind(KafkaConsumer<byte[], byte[]> consumer) throws Rejoin {
        try {
            Set<TopicPartition> assigned = consumer.assignment();
            if (assigned.isEmpty()) {
                return;
            }
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned, Duration.ofMillis(callTimeoutMs));
            for (TopicPartition partition : assigned) {
                OffsetAndMetadata offset = committed.get(partition);
                if (offset == null) {
                    consumer.seekToBeginning(List.of(partition));
                } else {
                    consumer.seek(partition, offset.offset());
                }
            }
        } catch (KafkaException | IllegalStateException e) {
            throw new Rejoin(e);
        }
    }
}
