package kchaos;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The conductor's commands on stdin, one per line, read on a thread of their own so that a process
 * whose main thread is blocked in a client call still answers `stack` (docs/CLIENTS.md). At the end of
 * stdin the conductor is gone and the process exits at once.
 */
final class Commands extends Thread {
    /** Exit status when stdin ends: the conductor is gone, nothing records this process any more. */
    static final int ORPHANED = 3;

    /** Written after the stacks `stack` asked for: the conductor waits for it
     * (harness.process_protocol.STACK_END). */
    static final String STACK_END = "-- end of stacks --\n";

    private final Role role;

    Commands(Role role) {
        super("kchaos-commands");
        this.role = role;
        setDaemon(true);
    }

    @Override
    public void run() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                switch (line.strip()) {
                    case "stop" -> role.stop();
                    case "freeze" -> role.freeze();
                    case "thaw" -> role.thaw();
                    case "stack" -> {
                        System.err.print(stacks() + STACK_END);
                        System.err.flush();
                    }
                    case "" -> { }
                    default -> System.err.println("kchaos-client: not a command, ignored: " + line.strip());
                }
            }
        } catch (IOException e) {
            System.err.println("kchaos-client: stdin: " + e);
        }
        Runtime.getRuntime().halt(ORPHANED);
    }

    /** Every thread's stack, as evidence of where a process that does not stop is stuck. */
    static String stacks() {
        StringBuilder out = new StringBuilder("-- stacks of every thread --\n");
        for (Map.Entry<Thread, StackTraceElement[]> entry : Thread.getAllStackTraces().entrySet()) {
            Thread thread = entry.getKey();
            out.append('"').append(thread.getName()).append('"').append(thread.isDaemon() ? " daemon" : "")
                    .append(' ').append(thread.getState()).append('\n');
            for (StackTraceElement frame : entry.getValue()) {
                out.append("\tat ").append(frame).append('\n');
            }
            out.append('\n');
        }
        return out.toString();
    }
}
