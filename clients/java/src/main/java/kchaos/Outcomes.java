package kchaos;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.kafka.common.KafkaException;

/**
 * How the Java client's exceptions become history outcomes (docs/HISTORY_FORMAT.md), the three tables
 * of harness/outcomes.py, harness/transactional_producer.py and harness/group_member.py for this client.
 * When in doubt the outcome is `info` (unknown), never `fail`.
 *
 * <p>Exceptions are matched by simple class name, the exception's own and then its superclasses',
 * so one source compiles against every kafka-clients release although classes come and go
 * (TransactionAbortableException from 3.8, NotLeaderForPartitionException until 4.0).
 */
final class Outcomes {
    private Outcomes() {}

    /** What an `error` field holds: the exception's class, and its cause's for a bare wrapper. */
    static String name(Throwable error) {
        String name = error.getClass().getSimpleName();
        Throwable cause = error.getCause();
        boolean wrapper = error.getClass() == KafkaException.class;
        return wrapper && cause != null ? name + "(" + cause.getClass().getSimpleName() + ")" : name;
    }

    /** An `error` field with the exception's message (consumes.jsonl's commits). */
    static String described(Throwable error) {
        return name(error) + ": " + error.getMessage();
    }

    /** The simple names of `type` and of its superclasses, the most specific first. */
    private static List<String> lineage(Class<?> type) {
        List<String> names = new ArrayList<>();
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            names.add(c.getSimpleName());
        }
        return names;
    }

    private static <T> T lookup(Map<String, T> table, Class<?> type) {
        return lineage(type).stream().map(table::get).filter(Objects::nonNull).findFirst().orElse(null);
    }

    private static boolean named(Set<String> names, Class<?> type) {
        return lineage(type).stream().anyMatch(names::contains);
    }

    // ---- Writes: the completion of a send that failed (harness/outcomes.py) ----

    /** Rejected on every attempt, or never sent: `fail`, whatever the retries. */
    static final Set<String> ALWAYS_DEFINITE = Set.of(
            "RecordTooLargeException",
            "RecordBatchTooLargeException",
            "InvalidTopicException",
            "TopicAuthorizationException",
            "InvalidRequiredAcksException",
            "CorruptRecordException",
            "InvalidRecordException",
            "SerializationException",
            // a batch still in the client's queue when its transaction was aborted: never sent
            "TransactionAbortedException");

    /** The broker refused before appending: `fail` only without retries (an earlier, timed-out attempt
     * may have been appended). */
    static final Set<String> DEFINITE_WITHOUT_RETRIES = Set.of(
            "NotEnoughReplicasException",
            "NotLeaderOrFollowerException",
            "NotLeaderForPartitionException",
            "LeaderNotAvailableException",
            "UnknownTopicOrPartitionException");

    /**
     * `fail` or `info` for a write that ended with `error`; `sent` false: the client refused it before
     * queueing it (send() threw, or called back before returning: no metadata within max.block.ms, a
     * full buffer, a record too large, a transaction in an error state).
     */
    static String writeCompletion(Throwable error, int retries, boolean sent) {
        if (!sent || named(ALWAYS_DEFINITE, error.getClass())) {
            return "fail";
        }
        if (retries == 0 && named(DEFINITE_WITHOUT_RETRIES, error.getClass())) {
            return "fail";
        }
        return "info"; // a timeout, a lost connection, NotEnoughReplicasAfterAppend, anything else
    }

    // ---- Transactions: how a failed init, offsets, commit or abort call is classed ----

    enum ErrorClass {
        FATAL, ABORTABLE, RETRIABLE;

        String text() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** A failed transaction call: how the client says to go on, and whether the call surely did nothing
     * (`fail`) or may have taken effect (`info`). */
    record TxnError(ErrorClass errorClass, boolean definite) {
        String phase() {
            return definite ? "fail" : "info";
        }
    }

    /**
     * THE mapping of the Java client's exceptions to transactions.jsonl's error_class and phase
     * (docs/HISTORY_FORMAT.md, transactions; clients/java/README.md has it as a table). The first
     * class of the exception's hierarchy listed here decides. A bare KafkaException is the client
     * saying the transaction cannot go on ("Cannot execute transactional method because we are in
     * an error state": a send failed, or a TxnOffsetCommit was refused): abortable, unless its cause
     * is fatal (the client is then in its fatal state).
     */
    static final Map<String, TxnError> TRANSACTION_ERRORS = new LinkedHashMap<>();

    static {
        // fatal: the producer is unusable (fenced, refused, or a bug); the call did nothing
        TRANSACTION_ERRORS.put("ProducerFencedException", new TxnError(ErrorClass.FATAL, true));
        TRANSACTION_ERRORS.put("InvalidProducerEpochException", new TxnError(ErrorClass.FATAL, true));
        TRANSACTION_ERRORS.put("InvalidTxnStateException", new TxnError(ErrorClass.FATAL, true));
        TRANSACTION_ERRORS.put("AuthorizationException", new TxnError(ErrorClass.FATAL, true));
        TRANSACTION_ERRORS.put("UnsupportedVersionException", new TxnError(ErrorClass.FATAL, true));
        TRANSACTION_ERRORS.put("IllegalStateException", new TxnError(ErrorClass.FATAL, true));
        // retriable: the same call may be made again; it may have taken effect meanwhile
        TRANSACTION_ERRORS.put("TimeoutException", new TxnError(ErrorClass.RETRIABLE, false));
        TRANSACTION_ERRORS.put("RetriableException", new TxnError(ErrorClass.RETRIABLE, false));
        // abortable: the transaction must be aborted; the call was refused
        TRANSACTION_ERRORS.put("TransactionAbortableException", new TxnError(ErrorClass.ABORTABLE, true));
        TRANSACTION_ERRORS.put("KafkaException", new TxnError(ErrorClass.ABORTABLE, true));
    }

    static TxnError transactionError(Throwable error) {
        TxnError found = lookup(TRANSACTION_ERRORS, error.getClass());
        if (found == null) {
            throw new IllegalArgumentException("not a client error: " + error, error);
        }
        Throwable cause = error.getCause();
        if (error.getClass() == KafkaException.class && cause != null && cause != error) {
            TxnError underlying = lookup(TRANSACTION_ERRORS, cause.getClass());
            if (underlying != null && underlying.errorClass() == ErrorClass.FATAL) {
                return underlying;
            }
        }
        return found;
    }

    // ---- Group commits (harness/group_member.py) ----

    /** The coordinator surely did not store the offsets: it refused them (not in the group's
     * generation, rebalancing, not the coordinator) or the client never sent them. */
    static final Set<String> COMMIT_NOT_STORED = Set.of(
            "CommitFailedException",
            "RebalanceInProgressException",
            "IllegalGenerationException",
            "UnknownMemberIdException",
            "FencedInstanceIdException",
            "StaleMemberEpochException",
            "NotCoordinatorException",
            "CoordinatorNotAvailableException",
            "CoordinatorLoadInProgressException",
            "OffsetMetadataTooLarge",
            "InvalidCommitOffsetSizeException",
            "IllegalStateException");

    /** `ok`, `fail` (surely not stored) or `info` (unknown) for a commit that ended with `error`. */
    static String commitOutcome(Throwable error) {
        if (error == null) {
            return "ok";
        }
        // An asynchronous commit's retriable failure is wrapped: its cause says what happened.
        if (error.getClass().getSimpleName().equals("RetriableCommitFailedException")) {
            return error.getCause() != null ? commitOutcome(error.getCause()) : "info";
        }
        return named(COMMIT_NOT_STORED, error.getClass()) ? "fail" : "info";
    }
}
