package kchaos;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * What a workload process does (docs/CLIENTS.md), run on the main thread until it has stopped cleanly.
 * The commands thread asks it to stop, freeze or thaw.
 */
abstract class Role {
    /** How soon a waiting role sees `stop`. */
    static final long MAX_WAIT_MS = 100;

    protected final History history;
    private volatile boolean stopping;
    private volatile CountDownLatch frozen = new CountDownLatch(0);

    Role(History history) {
        this.history = history;
    }

    abstract void run() throws InterruptedException;

    /** A clean stop: finish the unit of work in hand, complete what is in flight, close, return. */
    void stop() {
        stopping = true;
    }

    boolean stopping() {
        return stopping;
    }

    /** Transactional roles: hold the next transaction open once its records are written, until thaw. */
    synchronized void freeze() {
        if (frozen.getCount() == 0) {
            frozen = new CountDownLatch(1);
        }
    }

    synchronized void thaw() {
        frozen.countDown();
    }

    /** Wait while frozen (the client's own threads go on), unless stopping. */
    void whileFrozen() throws InterruptedException {
        while (!frozen.await(MAX_WAIT_MS, TimeUnit.MILLISECONDS) && !stopping) {
            // waiting for thaw
        }
    }

    /** Sleep `ms`, in slices that see `stop`; returns early when stopping. */
    void pause(long ms) throws InterruptedException {
        long until = System.nanoTime() + ms * 1_000_000;
        long left;
        while (!stopping && (left = until - System.nanoTime()) > 0) {
            Thread.sleep(Math.max(1, Math.min(MAX_WAIT_MS, left / 1_000_000)));
        }
    }
}
