package kchaos;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;

/**
 * One producer process's writes (writes.jsonl, harness/recorder.py): the `invoke` line before a record
 * is handed to the client, then at most one completion, `ok`, `fail` or `info`, when the client reports
 * it. Values are `<process>:<sequence>` (a pipeline's followed by `/<input value>`), unique in the run.
 */
final class Writes {
    private final History history;
    private final int retries;
    private final String padding;
    private final Object completions = new Object();
    private long inFlight; // writes invoked and not completed, guarded by `completions`

    /** `retries`: the client's, for which failures are definite; `messageSize` > 0: each record's body
     * is its value, then `|` and padding up to that many bytes. */
    Writes(History history, int retries, int messageSize) {
        this.history = history;
        this.retries = retries;
        this.padding = messageSize > 0 ? "|" + "x".repeat(messageSize - 1) : "";
    }

    /**
     * Record write `sequence`'s invoke (in transaction `txn`, or null) and send it to `partition`. A
     * send the client refuses, by throwing or by calling back before send() returns, completes as
     * never sent.
     */
    void send(Producer<byte[], byte[]> producer, String topic, int partition, Long txn, long sequence, String rest) {
        String value = history.process + ":" + sequence + rest;
        ObjectNode invoke = history.event("invoke");
        where(invoke, topic, partition, txn);
        invoke.put("value", value);
        history.emit(History.WRITES, invoke);
        synchronized (completions) {
            inFlight++;
        }
        Completion completion = new Completion(topic, partition, txn, value);
        byte[] body = (value + padding).getBytes(StandardCharsets.UTF_8);
        try {
            producer.send(new ProducerRecord<>(topic, partition, null, body), completion);
        } catch (KafkaException | IllegalStateException e) {
            completion.complete(null, e, false);
        } finally {
            completion.returned();
        }
    }

    /** Wait until every write invoked so far has completed, at most `ms`; false when some had not. */
    boolean awaitCompleted(long ms) throws InterruptedException {
        long until = System.nanoTime() + ms * 1_000_000;
        synchronized (completions) {
            long left;
            while (inFlight > 0 && (left = until - System.nanoTime()) > 0) {
                completions.wait(Math.max(1, left / 1_000_000));
            }
            return inFlight == 0;
        }
    }

    private static void where(ObjectNode event, String topic, int partition, Long txn) {
        event.put("topic", topic);
        event.put("partition", partition);
        if (txn != null) {
            event.put("txn", txn);
        }
    }

    /** A write's completion: the first the client reports (a record refused by a transaction in an error
     * state is also failed again when its queue is aborted). */
    private final class Completion implements Callback {
        private final String topic;
        private final int partition;
        private final Long txn;
        private final String value;
        private final Thread sender = Thread.currentThread();
        private volatile boolean inSend = true;
        private final AtomicBoolean done = new AtomicBoolean();

        Completion(String topic, int partition, Long txn, String value) {
            this.topic = topic;
            this.partition = partition;
            this.txn = txn;
            this.value = value;
        }

        void returned() {
            inSend = false;
        }

        @Override
        public void onCompletion(RecordMetadata metadata, Exception error) {
            // Called back from within send(), on its own thread: the record never left the client.
            complete(metadata, error, !(inSend && Thread.currentThread() == sender));
        }

        void complete(RecordMetadata metadata, Throwable error, boolean sent) {
            if (!done.compareAndSet(false, true)) {
                return;
            }
            String kind = error == null ? "ok" : Outcomes.writeCompletion(error, retries, sent);
            ObjectNode event = history.event(kind);
            where(event, topic, partition, txn);
            // acks=0 is told no offset (-1): null
            if (error == null && metadata != null && metadata.offset() >= 0) {
                event.put("offset", metadata.offset());
            } else {
                event.putNull("offset");
            }
            if (error != null) {
                event.put("error", Outcomes.name(error));
            }
            event.put("value", value);
            history.emit(History.WRITES, event);
            synchronized (completions) {
                inFlight--;
                completions.notifyAll();
            }
        }
    }
}
