// Wire-level parity through ZooKeeper 3.8's own Java client: the result types of creates in
// a multi (the client's MultiResponse knows only create and create2, and drops the
// connection on any other), null data in a multi, and 1,000 watches on 200-byte paths
// re-armed after the server restarts (the client sends them in several SetWatches2 frames of
// at most 128 KB). Against ZooKeeper itself, TTL nodes need zookeeper.extendedTypesEnabled.
// Run as a single source file: java -cp <jars> JavaWire.java ADDR MARKER
// After arming the watches it creates the file MARKER and waits for the connection to drop
// and come back (the test restarts the server meanwhile). Prints one fact per line; exits
// non-zero on anything unexpected.

import java.io.*;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.zookeeper.*;
import org.apache.zookeeper.data.*;

public class JavaWire {
    static final long LIMIT = 60;
    static final int WATCHES = 1000;

    static class Events implements Watcher {
        final BlockingQueue<String> q = new LinkedBlockingQueue<>();
        public void process(WatchedEvent e) {
            if (e.getType() != Event.EventType.None) q.add(e.getType() + " " + e.getPath());
            else q.add("state " + e.getState());
        }
        String next() throws InterruptedException {
            String s = q.poll(LIMIT, TimeUnit.SECONDS);
            if (s == null) fail("no event in time");
            return s;
        }
        /** The next node event, skipping connection state changes. */
        String nextNode() throws InterruptedException {
            while (true) { String s = next(); if (!s.startsWith("state ")) return s; }
        }
        void waitState(String state) throws InterruptedException {
            while (true) { if (next().equals("state " + state)) return; }
        }
    }

    static void fail(String why) { System.err.println("FAIL: " + why); System.exit(1); }

    static void out(Object... parts) {
        StringBuilder b = new StringBuilder();
        for (Object p : parts) { if (b.length() > 0) b.append(' '); b.append(p); }
        System.out.println(b);
    }

    /** Runs `op` on every path, pipelined, and waits for all of their callbacks. */
    static void each(List<String> paths, java.util.function.BiConsumer<String, CountDownLatch> op) throws Exception {
        CountDownLatch done = new CountDownLatch(paths.size());
        for (String p : paths) op.accept(p, done);
        if (!done.await(LIMIT, TimeUnit.SECONDS)) fail("pipelined ops did not finish in time");
    }

    public static void main(String[] args) throws Exception {
        String addr = args[0];
        File marker = new File(args[1]);
        List<ACL> open = ZooDefs.Ids.OPEN_ACL_UNSAFE;
        Events ev = new Events();
        ZooKeeper zk = new ZooKeeper(addr, 30000, ev);
        ev.waitState("SyncConnected");
        zk.create("/jw", new byte[0], open, CreateMode.PERSISTENT);

        // A plain create answers `create` (the path alone); a container or TTL create answers
        // `create2` (path and stat), as every create but the plain one does.
        byte[] d = "d".getBytes();
        List<OpResult> results = zk.multi(Arrays.asList(
            Op.create("/jw/plain", d, open, CreateMode.PERSISTENT),
            Op.create("/jw/seq-", d, open, CreateMode.PERSISTENT_SEQUENTIAL),
            Op.create("/jw/eph", d, open, CreateMode.EPHEMERAL),
            Op.create("/jw/container", d, open, CreateMode.CONTAINER),
            Op.create("/jw/ttl", d, open, CreateMode.PERSISTENT_WITH_TTL, 600000),
            Op.create("/jw/ttl-seq-", d, open, CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, 600000),
            Op.create("/jw/null", null, open, CreateMode.PERSISTENT),
            Op.create("/jw/empty", new byte[0], open, CreateMode.PERSISTENT),
            Op.setData("/jw/plain", null, -1)));
        for (OpResult r : results) {
            if (r instanceof OpResult.CreateResult) {
                OpResult.CreateResult c = (OpResult.CreateResult) r;
                out("multi create type", r.getType(), c.getPath(), c.getStat() == null ? "no stat" : "stat dataLength=" + c.getStat().getDataLength());
            } else {
                out("multi result type", r.getType(), r.getClass().getSimpleName());
            }
        }
        byte[] empty = zk.getData("/jw/empty", false, null);
        out("null data in multi", zk.getData("/jw/null", false, null) == null, zk.getData("/jw/plain", false, null) == null);
        out("empty data in multi", empty != null && empty.length == 0);

        // Watches on paths of 200 bytes: 200 KB of paths, more than one SetWatches2 holds.
        zk.create("/jw/w", new byte[0], open, CreateMode.PERSISTENT);
        List<String> paths = new ArrayList<>();
        for (int i = 0; i < WATCHES; i++) paths.add(String.format("/jw/w/%0194d", i));
        each(paths, (p, done) -> zk.create(p, d, open, CreateMode.PERSISTENT, (rc, path, ctx, name) -> {
            if (rc != 0) fail("create " + path + ": " + rc);
            done.countDown();
        }, null));
        AtomicInteger fired = new AtomicInteger();
        Set<String> firedPaths = ConcurrentHashMap.newKeySet();
        Watcher dataWatch = e -> {
            if (e.getType() == Watcher.Event.EventType.NodeDataChanged && firedPaths.add(e.getPath())) fired.incrementAndGet();
        };
        each(paths, (p, done) -> zk.getData(p, dataWatch, (rc, path, ctx, data, stat) -> {
            if (rc != 0) fail("getData " + path + ": " + rc);
            done.countDown();
        }, null));
        Events persistent = new Events();
        zk.addWatch("/jw/w", persistent, AddWatchMode.PERSISTENT);
        out("armed", paths.size(), "data watches of", paths.get(0).length(), "bytes and one persistent watch");
        if (!marker.createNewFile()) fail("marker " + marker + " exists already");
        ev.waitState("Disconnected");
        ev.waitState("SyncConnected");
        out("reconnected, same session");

        each(paths, (p, done) -> zk.setData(p, "changed".getBytes(), -1, (rc, path, ctx, stat) -> {
            if (rc != 0) fail("setData " + path + ": " + rc);
            done.countDown();
        }, null));
        zk.setData("/jw/w", "changed".getBytes(), -1);
        long deadline = System.currentTimeMillis() + LIMIT * 1000;
        while (fired.get() < WATCHES && System.currentTimeMillis() < deadline) Thread.sleep(10);
        out("data watches fired after the restart", fired.get());
        out("persistent watch after the restart", persistent.nextNode());

        zk.close();
        out("done");
        System.exit(0);
    }
}
