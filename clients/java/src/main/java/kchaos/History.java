package kchaos;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The process's history lines on stdout (docs/CLIENTS.md): the history file's name, a space, the event's
 * JSON object as HISTORY_FORMAT.md defines it, a newline; each line one write(2) of at most 4,096 bytes
 * (PIPE_BUF), so a process killed mid-event leaves no torn line. Times are the run clock's:
 * System.nanoTime() (CLOCK_MONOTONIC on Linux, Python's time.monotonic_ns()) less the spec's origin_ns.
 */
final class History {
    static final String WRITES = "writes";
    static final String TRANSACTIONS = "transactions";
    static final String CONSUMES = "consumes";
    static final String CLIENT = "client";
    static final int MAX_LINE_BYTES = 4096;
    /** Ends a client line's message cut to fit (harness.process_protocol.CUT). */
    static final String CUT = " [cut]";

    private static final ObjectMapper JSON = new ObjectMapper();

    final String process;
    private final long originNs;
    // The file descriptor itself: no buffer between an event and its write(2).
    private final FileOutputStream stdout = new FileOutputStream(FileDescriptor.out);

    History(String process, long originNs) {
        this.process = process;
        this.originNs = originNs;
    }

    long nowNs() {
        return System.nanoTime() - originNs;
    }

    /** A new event {"type", "time_ns", "process"}; its other fields are put in the format's order, its time
     * when it is written. */
    ObjectNode event(String type) {
        ObjectNode event = JSON.createObjectNode();
        event.put("type", type);
        event.put("time_ns", nowNs());
        event.put("process", process);
        return event;
    }

    ObjectNode object() {
        return JSON.createObjectNode();
    }

    /**
     * Write one event of history file `file`, whole, its `time_ns` now: stamped and written under one lock,
     * so that the lines of the process's threads (the application's, the client's callbacks) are in the
     * order of their times.
     */
    synchronized void emit(String file, ObjectNode event) {
        event.put("time_ns", nowNs());
        byte[] line = line(file, event);
        if (line.length > MAX_LINE_BYTES) {
            // Still written, whole but not atomically: a kill at that moment could tear it.
            System.err.println("kchaos-client: a " + file + " line of " + line.length + " bytes exceeds "
                    + MAX_LINE_BYTES + " (PIPE_BUF)");
        }
        write(line);
    }

    /** A client.jsonl line of what the client logged, its message cut (and marked CUT) to fit one line. */
    synchronized void client(String level, String facility, String message) {
        ObjectNode event = JSON.createObjectNode();
        event.put("time_ns", nowNs());
        event.put("process", process);
        event.put("level", level);
        event.put("facility", facility);
        event.put("message", message);
        byte[] line = line(CLIENT, event);
        String kept = message;
        while (line.length > MAX_LINE_BYTES && !kept.isEmpty()) {
            // a character may take up to 6 bytes of JSON: cut by at least a sixth of the excess
            int cut = Math.max(1, (line.length - MAX_LINE_BYTES) / 6);
            kept = kept.substring(0, Math.max(0, kept.length() - cut));
            event.put("message", kept + CUT);
            line = line(CLIENT, event);
        }
        write(line);
    }

    private static byte[] line(String file, ObjectNode event) {
        try {
            return (file + " " + JSON.writeValueAsString(event) + "\n").getBytes(StandardCharsets.UTF_8);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("an event that is not JSON: " + event, e);
        }
    }

    private synchronized void write(byte[] line) {
        try {
            stdout.write(line);
        } catch (IOException e) {
            // The conductor's end of the pipe is gone: nobody records this process any more.
            Runtime.getRuntime().halt(3);
        }
    }
}
