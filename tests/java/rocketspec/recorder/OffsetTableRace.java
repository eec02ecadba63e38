package rocketspec.recorder;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Plays ConsumerOffsetManager.commitOffset's first-commit race against the recorder's table view
 * and prints what the view reports, one line per report. commitOffset reads the key's map, and
 * when there is none puts a new one under the key; two threads doing their group's first commits
 * at once can leave a third thread holding a map that is no longer under the key (4.9.8 and 5.x).
 */
public final class OffsetTableRace {
    public static void main(String[] args) {
        ConcurrentMap<String, ConcurrentMap<Integer, Long>> raw = new ConcurrentHashMap<>();
        ObservedOffsetTable table = new ObservedOffsetTable(raw, new Object(), new ObservedOffsetTable.Listener() {
            @Override
            public void committed(String key, int queue, long offset, Long previous) {
                System.out.println("committed " + key + " " + queue + " " + offset + " " + previous);
            }

            @Override
            public void erased(String key, int queue, long previous) {
                System.out.println("erased " + key + " " + queue + " " + previous);
            }
        });
        String key = "TopicR@GID_r0";
        // thread A finds no map: a new one with queue 3's commit goes under the key
        ConcurrentMap<Integer, Long> first = new ConcurrentHashMap<>();
        first.put(3, 21L);
        table.put(key, first);
        // thread C reads that map (and will commit queue 2 into it later)
        ConcurrentMap<Integer, Long> held = table.get(key);
        // thread B, which read no map before A's existed, puts its own over it
        ConcurrentMap<Integer, Long> second = new ConcurrentHashMap<>();
        second.put(0, 19L);
        table.put(key, second);
        // thread C commits into the map the table no longer holds
        held.put(2, 20L);
        held.putIfAbsent(1, 5L);
        // a commit into the live map is reported
        table.get(key).put(2, 29L);
        System.out.println("table " + new java.util.TreeMap<>(raw.get(key)));
    }
}
