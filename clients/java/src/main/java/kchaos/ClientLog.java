package kchaos;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * The client's log (slf4j, bound to java.util.logging): each line to stderr, the process's log, and to
 * client.jsonl as a `client` line, as librdkafka's trouble lines are. Warnings and errors from every
 * logger; informational lines only from the loggers that report trouble (dropped connections, request
 * timeouts, transaction state changes, rebalances), not the configuration dumps.
 */
final class ClientLog extends Handler {
    static final List<String> TROUBLE_AT_INFO = List.of(
            "org.apache.kafka.clients.NetworkClient",
            "org.apache.kafka.clients.producer.internals.TransactionManager",
            "org.apache.kafka.clients.consumer.internals");

    // java.util.logging keeps loggers weakly: a level set on one nobody holds is forgotten.
    private static final List<Logger> KEPT = new ArrayList<>();

    private final History history;
    private final SimpleFormatter formatter = new SimpleFormatter();

    private ClientLog(History history) {
        this.history = history;
    }

    static void install(History history) {
        LogManager.getLogManager().reset();
        Logger root = Logger.getLogger("");
        root.setLevel(Level.WARNING);
        root.addHandler(new ClientLog(history));
        KEPT.add(root);
        for (String name : TROUBLE_AT_INFO) {
            Logger logger = Logger.getLogger(name);
            logger.setLevel(Level.INFO);
            KEPT.add(logger);
        }
    }

    @Override
    public void publish(LogRecord record) {
        String message = formatter.formatMessage(record);
        if (record.getThrown() != null) {
            message += ": " + record.getThrown();
        }
        String logger = record.getLoggerName() == null ? "" : record.getLoggerName();
        System.err.println(Instant.ofEpochMilli(record.getMillis()) + " " + record.getLevel() + " " + logger + " - "
                + message);
        if (record.getThrown() != null) {
            record.getThrown().printStackTrace();
        }
        history.client(level(record.getLevel()), logger.substring(logger.lastIndexOf('.') + 1), message);
    }

    /** The level as Python's logging names it, as client.jsonl's librdkafka lines have it. */
    private static String level(Level level) {
        if (level.intValue() >= Level.SEVERE.intValue()) {
            return "error";
        }
        if (level.intValue() >= Level.WARNING.intValue()) {
            return "warning";
        }
        return level.intValue() >= Level.INFO.intValue() ? "info" : "debug";
    }

    @Override
    public void flush() {
        System.err.flush();
    }

    @Override
    public void close() {}
}
