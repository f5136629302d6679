package kchaos;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaException;

/**
 * `transactional-producer` (harness/transactional_producer.py): writes in transactions across `topics`,
 * each committed or aborted as a whole, every step in transactions.jsonl. Per transaction: begin, its
 * writes (writes.jsonl, with `txn`), then commit, or abort as drawn: once its records were acknowledged
 * (waiting up to call_timeout_ms), or, for a seeded share of the aborts (`early_abort_rate`), at once:
 * records still in the client's queue then end `fail` (TransactionAbortedException, never sent), those
 * already sent complete as the broker answers. A failed call is classed by {@link Outcomes#TRANSACTION_ERRORS}: retriable calls
 * are made again (up to MAX_ATTEMPTS), an abortable failure aborts, a fatal one replaces the client
 * (its initTransactions fences the old one and aborts what it left open).
 *
 * <p>Spec: `transactional_id`, `topics`, `partitions`, `seed`, `transactions` (TransactionSpec: `records`,
 * `abort_rate`, `early_abort_rate`, `transaction_timeout_ms`, `call_timeout_ms`, `on_commit_timeout`,
 * `hold_ms`, `rewind_on_abort`), and optionally `rate_per_s`, `message_size`. call_timeout_ms bounds
 * each transaction call: it is the client's max.block.ms.
 */
class TransactionalRole extends ProducerRole {
    static final int MAX_ATTEMPTS = 3;
    static final String COMMIT = "commit", ABORT = "abort", EARLY_ABORT = "early-abort";

    protected final String transactionalId;
    protected final int[] records;
    protected final double abortRate, earlyAbortRate;
    protected final int callTimeoutMs, holdMs;
    protected final boolean abortOnCommitTimeout, rewindOnAbort;
    protected final Random random;
    protected final Writes writes;
    private Producer<byte[], byte[]> producer;

    TransactionalRole(Spec spec, History history) {
        super(spec, history);
        transactionalId = spec.text("transactional_id");
        Spec transactions = spec.child("transactions");
        records = transactions.range("records", new int[] {1, 10});
        abortRate = transactions.number("abort_rate", 0, 1, 0.1);
        earlyAbortRate = transactions.number("early_abort_rate", 0, 1, 0.1);
        int transactionTimeoutMs = transactions.integer("transaction_timeout_ms", 1, Integer.MAX_VALUE, 10_000);
        callTimeoutMs = transactions.integer("call_timeout_ms", 1, Integer.MAX_VALUE, 10_000);
        holdMs = transactions.integer("hold_ms", 0, Integer.MAX_VALUE, 0);
        String onCommitTimeout = transactions.text("on_commit_timeout", "retry");
        if (!onCommitTimeout.equals("retry") && !onCommitTimeout.equals("abort")) {
            throw new Spec.SpecError("field 'transactions.on_commit_timeout': expected retry or abort, got "
                    + onCommitTimeout);
        }
        abortOnCommitTimeout = onCommitTimeout.equals("abort");
        rewindOnAbort = transactions.flag("rewind_on_abort", true);
        random = new Random((spec.integer("seed") + ":" + history.process).hashCode());
        config.setProperty(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        config.setProperty(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Integer.toString(transactionTimeoutMs));
        config.setProperty(ProducerConfig.MAX_BLOCK_MS_CONFIG, Integer.toString(callTimeoutMs));
        config.setProperty(ProducerConfig.ACKS_CONFIG, "all");
        writes = writes();
    }

    @Override
    void run() throws InterruptedException {
        List<String> topics = spec.texts("topics");
        int partitions = spec.integer("partitions", 1, 1 << 20);
        Pacer pacer = new Pacer(ratePerS);
        Producer<byte[], byte[]> client = started();
        long sequence = 0;
        long txn = 0;
        while (client != null && !stopping()) {
            int size = records[0] + random.nextInt(records[1] - records[0] + 1);
            String ending = drawEnding();
            try {
                client.beginTransaction();
            } catch (KafkaException | IllegalStateException e) {
                client = replaced();
                continue;
            }
            begun(txn);
            for (int i = 0; i < size; i++) {
                pacer.next(this);
                int target = (int) (sequence % ((long) topics.size() * partitions));
                // (topic, partition) pairs in the order of harness's targets: partitions outer, topics inner
                writes.send(client, topics.get(target % topics.size()), target / topics.size(), txn, sequence, "");
                sequence++;
            }
            whileFrozen();
            pause(holdMs);
            String outcome = finish(client, txn, ending, false);
            txn++;
            if (outcome.equals("fatal")) {
                client = replaced();
            }
        }
        closeWithin(callTimeoutMs);
    }

    /** How the next transaction is to end: COMMIT, ABORT (after its records are acknowledged) or
     * EARLY_ABORT (before they were sent). */
    String drawEnding() {
        if (random.nextDouble() >= abortRate) {
            return COMMIT;
        }
        return random.nextDouble() < earlyAbortRate ? EARLY_ABORT : ABORT;
    }

    /** Record the begin of transaction `txn` (a step local to the client: no phase). */
    void begun(long txn) {
        history.emit(History.TRANSACTIONS, step("begin", txn, null));
    }

    /** A transactions.jsonl line of step `kind` (`txn` null for init, `phase` null for begin). */
    ObjectNode step(String kind, Long txn, String phase) {
        ObjectNode event = history.event(kind);
        event.put("transactional_id", transactionalId);
        if (txn != null) {
            event.put("txn", txn);
        }
        if (phase != null) {
            event.put("phase", phase);
        }
        return event;
    }

    /** A transaction call, as `_call` of harness/transactional_producer.py. */
    interface Call {
        void call();
    }

    /**
     * Make a transaction call, again while its failure is retriable, up to `attempts` calls; record each
     * (its line completed by `fields`). Returns `ok`, `abortable`, `fatal` or `retriable` (the attempts
     * ran out).
     */
    String call(String kind, Long txn, Call call, int attempts, java.util.function.Consumer<ObjectNode> fields) {
        for (int attempt = 0; attempt < attempts; attempt++) {
            ObjectNode invoke = step(kind, txn, "invoke");
            fields.accept(invoke);
            history.emit(History.TRANSACTIONS, invoke);
            try {
                call.call();
            } catch (KafkaException | IllegalStateException e) {
                Outcomes.TxnError error = Outcomes.transactionError(e);
                ObjectNode failed = step(kind, txn, error.phase());
                failed.put("error", Outcomes.name(e));
                failed.put("error_class", error.errorClass().text());
                fields.accept(failed);
                history.emit(History.TRANSACTIONS, failed);
                if (error.errorClass() != Outcomes.ErrorClass.RETRIABLE) {
                    return error.errorClass().text();
                }
                continue;
            }
            ObjectNode ok = step(kind, txn, "ok");
            fields.accept(ok);
            history.emit(History.TRANSACTIONS, ok);
            return "ok";
        }
        return "retriable";
    }

    String call(String kind, Long txn, Call call) {
        return call(kind, txn, call, MAX_ATTEMPTS, event -> { });
    }

    /**
     * End transaction `txn` as drawn (`ending`), or abort it when a step of it `failed`; an abortable
     * failure of its commit is aborted. Returns `committed`, `aborted` or `fatal` (neither known: the
     * client is to be replaced).
     */
    String finish(Producer<byte[], byte[]> client, long txn, String ending, boolean failed)
            throws InterruptedException {
        if (ending.equals(COMMIT) && !failed) {
            // After a commit that timed out, retry it (the default) or abort (`on_commit_timeout`).
            int attempts = abortOnCommitTimeout ? 1 : MAX_ATTEMPTS;
            String outcome = call("commit", txn, client::commitTransaction, attempts, event -> { });
            if (outcome.equals("ok")) {
                return "committed";
            }
            if (outcome.equals("fatal") || (outcome.equals("retriable") && attempts > 1)) {
                return "fatal";
            }
        }
        if (ending.equals(ABORT)) {
            // Its records acknowledged first (up to the call timeout): in the log, where the abort marker
            // must hide them. Not flush(): it has no bound; the client sends them after linger.ms.
            writes.awaitCompleted(callTimeoutMs);
        }
        String reason = ending.equals(ABORT) ? "drawn" : ending.equals(EARLY_ABORT) ? "drawn-early" : "failure";
        String aborted = call("abort", txn, client::abortTransaction, MAX_ATTEMPTS, event -> event.put("reason", reason));
        return aborted.equals("ok") ? "aborted" : "fatal";
    }

    /** A new client with the process's transactional.id, initialized (fencing any older one); null when
     * stopped before one could be. */
    Producer<byte[], byte[]> started() throws InterruptedException {
        while (true) {
            producer = new KafkaProducer<>(config);
            if (call("init", null, producer::initTransactions).equals("ok")) {
                return producer;
            }
            close();
            if (stopping()) {
                return null;
            }
            pause(1000); // the coordinator may be down: a pause before the next client
        }
    }

    /** The client in use (null: none initialized). */
    Producer<byte[], byte[]> current() {
        return producer;
    }

    /** After a fatal error: a new client, or null when stopping. */
    Producer<byte[], byte[]> replaced() throws InterruptedException {
        close();
        return started();
    }

    /** Close the client at once: what it still holds completes now, as unknown. */
    void close() {
        closeWithin(0);
    }

    void closeWithin(long ms) {
        if (producer != null) {
            producer.close(Duration.ofMillis(ms));
            producer = null;
        }
    }
}
