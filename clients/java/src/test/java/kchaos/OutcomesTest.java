package kchaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import kchaos.Outcomes.ErrorClass;
import kchaos.Outcomes.TxnError;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.RetriableCommitFailedException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.CoordinatorNotAvailableException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.NotEnoughReplicasAfterAppendException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionAbortedException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.junit.jupiter.api.Test;

/** The exception mapping, against the classes of the kafka-clients release the program is built with. */
class OutcomesTest {
    private static TxnError txn(Throwable error) {
        return Outcomes.transactionError(error);
    }

    @Test
    void fencedProducersAreFatalAndTheCallDidNothing() {
        assertEquals(new TxnError(ErrorClass.FATAL, true), txn(new ProducerFencedException("fenced")));
        assertEquals(new TxnError(ErrorClass.FATAL, true), txn(new InvalidProducerEpochException("old epoch")));
        assertEquals(new TxnError(ErrorClass.FATAL, true), txn(new InvalidTxnStateException("state")));
        assertEquals(new TxnError(ErrorClass.FATAL, true), txn(new TransactionalIdAuthorizationException("no")));
        assertEquals(new TxnError(ErrorClass.FATAL, true), txn(new IllegalStateException("no transaction")));
        assertEquals("fail", txn(new ProducerFencedException("fenced")).phase());
    }

    @Test
    void timeoutsAreRetriableAndUnknown() {
        assertEquals(new TxnError(ErrorClass.RETRIABLE, false), txn(new TimeoutException("max.block.ms")));
        assertEquals(new TxnError(ErrorClass.RETRIABLE, false), txn(new CoordinatorNotAvailableException("down")));
        assertEquals("info", txn(new TimeoutException("max.block.ms")).phase());
    }

    @Test
    void aCommitAfterAFailedSendIsAbortableUnlessTheClientIsInItsFatalState() {
        // what commitTransaction throws after a send timed out: the transaction must be aborted
        KafkaException abortable = new KafkaException(
                "Cannot execute transactional method because we are in an error state", new TimeoutException("expired"));
        assertEquals(new TxnError(ErrorClass.ABORTABLE, true), txn(abortable));
        assertEquals("KafkaException(TimeoutException)", Outcomes.name(abortable));
        KafkaException fatal = new KafkaException(
                "Cannot execute transactional method because we are in an error state",
                new TransactionalIdAuthorizationException("no"));
        assertEquals(new TxnError(ErrorClass.FATAL, true), txn(fatal));
        assertEquals(new TxnError(ErrorClass.ABORTABLE, true), txn(new CommitFailedException()));
    }

    @Test
    void theBrokersAbortableErrorIsAbortableWhereTheReleaseHasIt() throws ReflectiveOperationException {
        Class<?> type;
        try {
            type = Class.forName("org.apache.kafka.common.errors.TransactionAbortableException");
        } catch (ClassNotFoundException e) {
            assumeTrue(false, "kafka-clients before 3.8 has no TransactionAbortableException");
            return;
        }
        Throwable error = (Throwable) type.getConstructor(String.class).newInstance("abort it");
        assertEquals(new TxnError(ErrorClass.ABORTABLE, true), txn(error));
    }

    @Test
    void writesFailOnlyWhenSurelyNotAppended() {
        assertEquals("fail", Outcomes.writeCompletion(new RecordTooLargeException("big"), 3, true));
        assertEquals("fail", Outcomes.writeCompletion(new TransactionAbortedException("queued"), 3, true));
        assertEquals("fail", Outcomes.writeCompletion(new TimeoutException("no metadata"), 3, false));
        assertEquals("fail", Outcomes.writeCompletion(new NotEnoughReplicasException("isr"), 0, true));
        assertEquals("info", Outcomes.writeCompletion(new NotEnoughReplicasException("isr"), 3, true));
        assertEquals("info", Outcomes.writeCompletion(new NotEnoughReplicasAfterAppendException("appended"), 0, true));
        assertEquals("info", Outcomes.writeCompletion(new TimeoutException("expired"), 0, true));
        assertEquals("info", Outcomes.writeCompletion(new NetworkException("gone"), 0, true));
    }

    @Test
    void commitsRefusedByTheCoordinatorFailTheRestAreUnknown() {
        assertEquals("ok", Outcomes.commitOutcome(null));
        assertEquals("fail", Outcomes.commitOutcome(new CommitFailedException()));
        assertEquals("fail", Outcomes.commitOutcome(
                new RetriableCommitFailedException(new CoordinatorNotAvailableException("down"))));
        assertEquals("info", Outcomes.commitOutcome(new RetriableCommitFailedException(new TimeoutException("lost"))));
        assertEquals("info", Outcomes.commitOutcome(new TimeoutException("lost")));
    }
}
