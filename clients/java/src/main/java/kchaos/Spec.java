package kchaos;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A process's spec (docs/CLIENTS.md): one JSON object, read field by field. A field that is missing or
 * of the wrong type is a {@link SpecError} naming it and what was expected.
 */
final class Spec {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final JsonNode node;
    private final String path; // where this object is in the spec, "" at the top

    private Spec(JsonNode node, String path) {
        this.node = node;
        this.path = path;
    }

    static Spec parse(String text) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new SpecError("the spec is not JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new SpecError("the spec is not a JSON object");
        }
        return new Spec(root, "");
    }

    /** A SpecError for a field not among `known` (a spec of another version of the protocol). */
    void only(java.util.Collection<String> known) {
        for (String key : (Iterable<String>) node::fieldNames) {
            if (!known.contains(key)) {
                throw new SpecError("unknown field '" + name(key) + "'");
            }
        }
    }

    private String name(String key) {
        return path.isEmpty() ? key : path + "." + key;
    }

    private SpecError wrong(String key, String expected) {
        JsonNode value = node.get(key);
        String got = value == null ? "nothing" : value.toString();
        if (got.length() > 80) {
            got = got.substring(0, 77) + "...";
        }
        return new SpecError("field '" + name(key) + "': expected " + expected + ", got " + got);
    }

    private boolean absent(String key) {
        JsonNode value = node.get(key);
        return value == null || value.isNull();
    }

    String text(String key) {
        JsonNode value = node.get(key);
        if (value == null || !value.isTextual()) {
            throw wrong(key, "a string");
        }
        return value.textValue();
    }

    String text(String key, String fallback) {
        return absent(key) ? fallback : text(key);
    }

    long integer(String key) {
        JsonNode value = node.get(key);
        if (value == null || !value.isIntegralNumber() || !value.canConvertToLong()) {
            throw wrong(key, "an integer");
        }
        return value.longValue();
    }

    long integer(String key, long fallback) {
        return absent(key) ? fallback : integer(key);
    }

    /** An integer from low to high (a count, a partition, milliseconds). */
    int integer(String key, int low, int high) {
        long value = integer(key);
        if (value < low || value > high) {
            throw wrong(key, "an integer from " + low + " to " + high);
        }
        return (int) value;
    }

    int integer(String key, int low, int high, int fallback) {
        return absent(key) ? fallback : integer(key, low, high);
    }

    double number(String key, double low, double high, double fallback) {
        if (absent(key)) {
            return fallback;
        }
        JsonNode value = node.get(key);
        if (!value.isNumber() || value.doubleValue() < low || value.doubleValue() > high) {
            throw wrong(key, "a number from " + low + " to " + high);
        }
        return value.doubleValue();
    }

    boolean flag(String key) {
        JsonNode value = node.get(key);
        if (value == null || !value.isBoolean()) {
            throw wrong(key, "true or false");
        }
        return value.booleanValue();
    }

    boolean flag(String key, boolean fallback) {
        return absent(key) ? fallback : flag(key);
    }

    /** A non-empty list of strings. */
    List<String> texts(String key) {
        JsonNode value = node.get(key);
        List<String> texts = new ArrayList<>();
        if (value != null && value.isArray()) {
            for (JsonNode item : value) {
                if (!item.isTextual()) {
                    throw wrong(key, "a non-empty list of strings");
                }
                texts.add(item.textValue());
            }
        }
        if (texts.isEmpty()) {
            throw wrong(key, "a non-empty list of strings");
        }
        return texts;
    }

    /** Two integers [low, high] with 1 <= low <= high. */
    int[] range(String key, int[] fallback) {
        if (absent(key)) {
            return fallback;
        }
        JsonNode value = node.get(key);
        if (!value.isArray() || value.size() != 2 || !value.get(0).canConvertToInt() || !value.get(1).canConvertToInt()
                || !value.get(0).isIntegralNumber() || !value.get(1).isIntegralNumber()) {
            throw wrong(key, "[low, high], two integers");
        }
        int low = value.get(0).intValue();
        int high = value.get(1).intValue();
        if (low < 1 || high < low) {
            throw wrong(key, "[low, high] with 1 <= low <= high");
        }
        return new int[] {low, high};
    }

    /** A nested object; an absent one reads as empty. */
    Spec child(String key) {
        if (absent(key)) {
            return new Spec(JSON.createObjectNode(), name(key));
        }
        JsonNode value = node.get(key);
        if (!value.isObject()) {
            throw wrong(key, "an object");
        }
        return new Spec(value, name(key));
    }

    /** Client settings (required): an object of strings, numbers and booleans, passed on as text. */
    Properties settings(String key) {
        Properties settings = new Properties();
        if (absent(key)) {
            throw wrong(key, "an object of client settings");
        }
        Spec object = child(key);
        for (Map.Entry<String, JsonNode> entry : object.node.properties()) {
            JsonNode value = entry.getValue();
            if (!value.isValueNode() || value.isNull()) {
                throw object.wrong(entry.getKey(), "a string, number or boolean");
            }
            settings.setProperty(entry.getKey(), value.asText());
        }
        return settings;
    }

    /** The spec is unusable: the process says why and exits 2. */
    static final class SpecError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        SpecError(String message) {
            super(message);
        }
    }
}
