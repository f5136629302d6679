package kchaos;

import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * `producer`: unique values to one topic under one acks mode (plain or idempotent, as `config` says),
 * round robin over its partitions by sequence, until stopped or `max_writes` were sent
 * (harness/producer.py). Spec: `topic`, `partitions`, `acks`, and optionally `rate_per_s` (0: as fast
 * as the client takes them), `message_size`, `max_writes`.
 */
class ProducerRole extends Role {
    protected final Spec spec;
    protected final Properties config;
    protected final int retries;
    protected final double ratePerS;

    ProducerRole(Spec spec, History history) {
        super(history);
        this.spec = spec;
        this.config = spec.settings("config");
        config.setProperty(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        config.setProperty(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        this.ratePerS = spec.number("rate_per_s", 0, 1e9, 0);
        this.retries = retries(config);
    }

    /** The client's `retries` (its default: as many as delivery.timeout.ms allows). */
    static int retries(Properties config) {
        String retries = config.getProperty(ProducerConfig.RETRIES_CONFIG);
        try {
            return retries == null ? Integer.MAX_VALUE : Integer.parseInt(retries.strip());
        } catch (NumberFormatException e) {
            throw new Spec.SpecError("field 'config.retries': expected an integer, got " + retries);
        }
    }

    Writes writes() {
        return new Writes(history, retries, spec.integer("message_size", 0, 1 << 20, 0));
    }

    @Override
    void run() throws InterruptedException {
        String topic = spec.text("topic");
        int partitions = spec.integer("partitions", 1, 1 << 20);
        config.setProperty(ProducerConfig.ACKS_CONFIG, spec.text("acks"));
        long maxWrites = spec.integer("max_writes", Long.MAX_VALUE);
        Writes writes = writes();
        Pacer pacer = new Pacer(ratePerS);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config)) {
            for (long sequence = 0; !stopping() && sequence < maxWrites; sequence++) {
                if (!pacer.next(this)) {
                    break;
                }
                writes.send(producer, topic, (int) (sequence % partitions), null, sequence, "");
            }
            // Every invoked write gets its completion: within delivery.timeout.ms each ends.
            producer.flush();
        }
    }

    /** Spaces sends `1 / rate` apart (no pacing at rate 0), each wait seeing `stop`. */
    static final class Pacer {
        private final long intervalNs;
        private long next = System.nanoTime();

        Pacer(double ratePerS) {
            intervalNs = ratePerS > 0 ? (long) (1e9 / ratePerS) : 0;
        }

        /** Wait for the next send's time; false when the role stopped meanwhile. */
        boolean next(Role role) throws InterruptedException {
            if (intervalNs == 0) {
                return true;
            }
            long delay;
            while ((delay = next - System.nanoTime()) > 0) {
                if (role.stopping()) {
                    return false;
                }
                Thread.sleep(Math.max(1, Math.min(Role.MAX_WAIT_MS, delay / 1_000_000)));
            }
            next += intervalNs;
            return true;
        }
    }
}
