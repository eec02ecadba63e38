package rocketspec.recorder;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Which live clients the broker does not list in their group (for the driver's quiescence).
 *
 * The broker unregisters a client whose channel closed (its idle handler, `ClientHousekeepingService`),
 * while the client runs on: it keeps its queues and its own pull offsets, and it registers again
 * only at its next heartbeat (rocketmq-client-go: every 30 s), when the group rebalances. Until
 * then it may pull and consume again what the group's broker commit has passed: a run is not
 * settled while a live client is out of its group.
 */
final class Membership {
    private Membership() {
    }

    /**
     * The names of the clients of `groupOf` (live client name to its group) that their group's
     * registration on the broker (`registered`: group to the client ids it lists) does not hold under
     * the id `idOf` gives (the id the client registers with; a client with no id known is out).
     */
    static List<String> outOfGroup(Map<String, String> groupOf, Map<String, String> idOf,
                                   Map<String, ? extends Collection<String>> registered) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, String> e : new TreeMap<>(groupOf).entrySet()) {
            String id = idOf.get(e.getKey());
            Collection<String> ids = registered.get(e.getValue());
            if (id == null || ids == null || !ids.contains(id)) {
                out.add(e.getKey());
            }
        }
        return Collections.unmodifiableList(out);
    }
}
