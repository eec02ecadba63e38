package rocketspec.recorder;

/**
 * A recorder's poller: a daemon thread that reads the state RocketMQ has no hook for (tables,
 * ProcessQueues, offset stores) every period, under the recorder's lock so that a poll never
 * interleaves with the recorder's hooks. A failed poll is reported and the next one runs.
 */
final class Poller {
    private final Thread thread;
    private volatile boolean running = true;

    private Poller(String name, long periodMs, Object lock, Runnable poll) {
        thread = new Thread(() -> {
            while (running) {
                try {
                    Thread.sleep(periodMs);
                    synchronized (lock) {
                        poll.run();
                    }
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    System.err.println(name + ": " + e);
                }
            }
        }, name);
        thread.setDaemon(true);
    }

    static Poller start(String name, long periodMs, Object lock, Runnable poll) {
        Poller p = new Poller(name, periodMs, lock, poll);
        p.thread.start();
        return p;
    }

    boolean running() {
        return running;
    }

    /** Ends the polling and waits for a poll under way (at most 2 s). */
    void stop() {
        running = false;
        thread.interrupt();
        try {
            thread.join(2000);
        } catch (InterruptedException ignored) {
            Thread.currentThread().interrupt();
        }
    }
}
