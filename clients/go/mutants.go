package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Deliberate faults of the driver program (`--mutant NAME`): each is a mistake the author of a
// client (or of its glue to the application) could make, a real change of what the program does
// with the library, never an edit of its reports after the fact. docs/notes/go-client.md lists
// each with the invariant or guarantee that kills it; bench/client_mutants.py runs them.
var mutantDoc = map[string]string{
	"ack-failed": "a failed listener call is handed to the library as success: the message is acked " +
		"(the listener's own status is what the application saw, and is reported)",
	"skip-message": "a message at a queue offset that is 4 mod 5 is acked on its first delivery " +
		"without reaching the listener",
	"orderly-as-concurrent": "an ORDERLY group's consumer is built without WithConsumerOrder(true): " +
		"the library consumes it concurrently",
	"stop-early": "on shutdown, `stopped` is reported at once and the consumer shut down 3 s later: " +
		"it keeps consuming after it said it stopped",
	"nack-succeeded": "a succeeded first delivery at a queue offset that is 2 mod 5 is handed to the " +
		"library as a failure: the message the application consumed comes back",
	"ack-before-listener": "the library is told success at once and the listener runs on its own " +
		"goroutine: acked before it returns",
}

// mutant is the fault this process runs with ("" for none).
var mutant string

func parseArgs(args []string) error {
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--mutant" && i+1 < len(args):
			mutant = args[i+1]
			i++
		case strings.HasPrefix(args[i], "--mutant="):
			mutant = strings.TrimPrefix(args[i], "--mutant=")
		default:
			return fmt.Errorf("unknown argument %q (known: --mutant NAME)", args[i])
		}
	}
	if _, ok := mutantDoc[mutant]; mutant != "" && !ok {
		names := make([]string, 0, len(mutantDoc))
		for n := range mutantDoc {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown mutant %q; known: %s", mutant, strings.Join(names, ", "))
	}
	if mutant != "" {
		fmt.Fprintf(os.Stderr, "rocketspec-go-client: MUTANT %s: %s\n", mutant, mutantDoc[mutant])
	}
	return nil
}
