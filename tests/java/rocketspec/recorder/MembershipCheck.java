package rocketspec.recorder;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Feeds Membership.outOfGroup a run's end state read from stdin, one fact a line:
 * `live NAME GROUP ID` (a live client and the id it reported) and `registered GROUP ID` (an id the
 * broker lists in the group); prints the names it finds out of their group, one a line.
 */
public final class MembershipCheck {
    public static void main(String[] args) throws Exception {
        Map<String, String> groupOf = new HashMap<>();
        Map<String, String> idOf = new HashMap<>();
        Map<String, List<String>> registered = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            if (f[0].equals("live")) {
                groupOf.put(f[1], f[2]);
                idOf.put(f[1], f[3]);
            } else if (f[0].equals("registered")) {
                registered.computeIfAbsent(f[1], k -> new ArrayList<>()).add(f[2]);
            }
        }
        for (String name : Membership.outOfGroup(groupOf, idOf, registered)) {
            System.out.println(name);
        }
    }
}
