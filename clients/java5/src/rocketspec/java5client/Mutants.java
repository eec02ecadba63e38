package rocketspec.java5client;

import java.util.Map;
import java.util.TreeMap;

/**
 * Deliberate faults of the driver program (`--mutant NAME`), the same mistakes as the Go driver's
 * (clients/go/mutants.go): each a real change of what the program gives the library, never an edit
 * of its reports after the fact.
 */
final class Mutants {
    static final Map<String, String> DOC = new TreeMap<>();

    static {
        DOC.put("ack-failed", "a failed listener call is handed to the library as success: the message is acked "
            + "(the listener's own status is what the application saw, and is reported)");
        DOC.put("skip-message", "a message at a queue offset that is 4 mod 5 is acked on its first delivery "
            + "without reaching the listener");
        DOC.put("orderly-as-concurrent", "an ORDERLY group's consumer registers a MessageListenerConcurrently: "
            + "the library consumes it concurrently");
        DOC.put("stop-early", "on shutdown, `stopped` is reported at once and the consumer shut down 3 s later: "
            + "it keeps consuming after it said it stopped");
        DOC.put("nack-succeeded", "a succeeded first delivery at a queue offset that is 2 mod 5 is handed to the "
            + "library as a failure: the message the application consumed comes back");
        DOC.put("ack-before-listener", "the library is told success at once and the listener runs on its own "
            + "thread: acked before it returns");
    }

    private Mutants() {
    }

    /** The mutant the arguments name (null for none); IllegalArgumentException on a bad argument. */
    static String parse(String[] args) {
        String mutant = null;
        for (int i = 0; i < args.length; i++) {
            if ("--mutant".equals(args[i]) && i + 1 < args.length) {
                mutant = args[++i];
            } else if (args[i].startsWith("--mutant=")) {
                mutant = args[i].substring("--mutant=".length());
            } else {
                throw new IllegalArgumentException("unknown argument \"" + args[i] + "\" (known: --mutant NAME)");
            }
        }
        if (mutant != null && !DOC.containsKey(mutant)) {
            throw new IllegalArgumentException("unknown mutant \"" + mutant + "\"; known: " + String.join(", ", DOC.keySet()));
        }
        if (mutant != null) {
            System.err.println("rocketspec-java5-client: MUTANT " + mutant + ": " + DOC.get(mutant));
        }
        return mutant;
    }
}
