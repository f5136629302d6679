package kchaos;

import java.io.PrintStream;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.config.ConfigException;

/**
 * kafka-chaos's Java workload process (docs/CLIENTS.md): `java -cp 'lib/*' kchaos.Main SPEC`. It runs one
 * role with the Java client (org.apache.kafka:kafka-clients), reports each event as a tagged history
 * line on stdout and takes `stop`, `freeze`, `thaw` and `stack` on stdin.
 *
 * <p>Exit status: 0 after a clean stop (or a producer's `max_writes`); 2 for a spec or client setting
 * it cannot use (stderr says which field); 3 when stdin ended first (the conductor is gone,
 * {@link Commands#ORPHANED}); 1 when the role failed (its stack trace on stderr).
 */
public final class Main {
    static final int BAD_INPUT = 2;
    static final int FAILED = 1;

    private static final Set<String> COMMON = Set.of("role", "process", "origin_ns", "config");

    /** Each role's spec fields beyond COMMON (its spec class in the harness). */
    static final Map<String, Set<String>> ROLE_FIELDS = Map.of(
            "producer", Set.of("topic", "partitions", "acks", "rate_per_s", "message_size", "max_writes"),
            "transactional-producer", Set.of("transactional_id", "topics", "partitions", "transactions", "seed",
                    "rate_per_s", "message_size"),
            "pipeline", Set.of("transactional_id", "inputs", "output", "partitions", "transactions",
                    "consumer_config", "seed"),
            "member", Set.of("group", "topics", "commit", "commit_async", "processing_ms", "commit_interval_s"));

    /** harness.transactional_producer.TransactionSpec's fields (some are the workload's, unused here). */
    static final Set<String> TRANSACTION_FIELDS = Set.of("producers", "topics", "records", "abort_rate",
            "early_abort_rate", "transaction_timeout_ms", "call_timeout_ms", "on_commit_timeout", "hold_ms",
            "pipelines", "rewind_on_abort");

    private Main() {}

    public static void main(String[] args) {
        PrintStream stderr = System.err;
        System.setOut(stderr); // stdout carries history lines only (History writes its descriptor)
        if (args.length != 1) {
            stderr.println("usage: java -cp 'lib/*' kchaos.Main SPEC (one JSON object: docs/CLIENTS.md)");
            System.exit(BAD_INPUT);
        }
        Role role;
        try {
            role = role(Spec.parse(args[0]));
        } catch (Spec.SpecError e) {
            stderr.println("kchaos-client: workload process spec: " + e.getMessage());
            System.exit(BAD_INPUT);
            return;
        }
        new Commands(role).start();
        try {
            role.run();
        } catch (Spec.SpecError e) {
            stderr.println("kchaos-client: workload process spec: " + e.getMessage());
            System.exit(BAD_INPUT);
        } catch (ConfigException e) {
            stderr.println("kchaos-client: the client refused its settings: " + e.getMessage());
            System.exit(BAD_INPUT);
        } catch (Throwable e) {
            stderr.println("kchaos-client: the role failed");
            e.printStackTrace(stderr);
            System.exit(FAILED);
        }
        System.exit(0);
    }

    static Role role(Spec spec) {
        String name = spec.text("role");
        Set<String> fields = ROLE_FIELDS.get(name);
        if (fields == null) {
            throw new Spec.SpecError("field 'role': expected one of " + String.join(", ", ROLE_FIELDS.keySet())
                    + ", got " + name);
        }
        spec.only(union(COMMON, fields));
        spec.child("transactions").only(TRANSACTION_FIELDS);
        History history = new History(spec.text("process"), spec.integer("origin_ns"));
        ClientLog.install(history);
        return switch (name) {
            case "producer" -> new ProducerRole(spec, history);
            case "transactional-producer" -> new TransactionalRole(spec, history);
            case "pipeline" -> new PipelineRole(spec, history);
            default -> new MemberRole(spec, history);
        };
    }

    private static Set<String> union(Set<String> a, Set<String> b) {
        java.util.HashSet<String> all = new java.util.HashSet<>(a);
        all.addAll(b);
        return all;
    }
}
