// Containers and TTL nodes through ZooKeeper 3.8's own Java client, against a Ward whose
// cleanup runs every 100 ms: TTL nodes (plain and sequential) go once unused for their TTL,
// containers once their last child has gone, and lock parents made the way Curator's
// recipes make them (creatingParentContainersIfNeeded) go after the lock is released.
// Run as a single source file: java -cp <jars> ContainersAndTtl.java ADDR
// Prints one fact per line; exits non-zero on anything unexpected.

import java.util.*;
import java.util.concurrent.*;
import org.apache.zookeeper.*;
import org.apache.zookeeper.data.*;

public class ContainersAndTtl {
    static final long LIMIT = 30;
    static final List<ACL> OPEN = ZooDefs.Ids.OPEN_ACL_UNSAFE;

    static void fail(String why) { System.err.println("FAIL: " + why); System.exit(1); }

    static void out(Object... parts) {
        StringBuilder b = new StringBuilder();
        for (Object p : parts) { if (b.length() > 0) b.append(' '); b.append(p); }
        System.out.println(b);
    }

    /** Polls until `path` is gone; fails after LIMIT seconds. */
    static void waitGone(ZooKeeper zk, String path) throws Exception {
        long deadline = System.currentTimeMillis() + LIMIT * 1000;
        while (zk.exists(path, false) != null) {
            if (System.currentTimeMillis() > deadline) fail(path + " was not deleted in time");
            Thread.sleep(20);
        }
    }

    /** Curator's ZKPaths.mkdirs with asContainers: every missing ancestor as a container. */
    static void mkdirsAsContainers(ZooKeeper zk, String path) throws Exception {
        for (int at = path.indexOf('/', 1); ; at = path.indexOf('/', at + 1)) {
            String prefix = at == -1 ? path : path.substring(0, at);
            try { zk.create(prefix, new byte[0], OPEN, CreateMode.CONTAINER); }
            catch (KeeperException.NodeExistsException e) { /* there already */ }
            if (at == -1) return;
        }
    }

    public static void main(String[] args) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        ZooKeeper zk = new ZooKeeper(args[0], 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) connected.countDown();
            if (e.getType() != Watcher.Event.EventType.None) events.add(e.getType() + " " + e.getPath());
        });
        if (!connected.await(LIMIT, TimeUnit.SECONDS)) fail("not connected");

        // Created first, each with a child: due whenever the childless ones below are, but kept.
        zk.create("/ttl-parent", new byte[0], OPEN, CreateMode.PERSISTENT_WITH_TTL, new Stat(), 200);
        zk.create("/ttl-parent/child", new byte[0], OPEN, CreateMode.PERSISTENT);
        out("container", zk.create("/box", new byte[0], OPEN, CreateMode.CONTAINER));
        zk.create("/box/item", new byte[0], OPEN, CreateMode.PERSISTENT);

        // ZooKeeper takes TTL nodes only with zookeeper.extendedTypesEnabled; Ward always does.
        Stat stat = new Stat();
        out("ttl", zk.create("/ttl", "x".getBytes(), OPEN, CreateMode.PERSISTENT_WITH_TTL, stat, 200));
        out("ttl stat", stat.getDataLength(), stat.getNumChildren());
        String seq = zk.create("/ttl-seq-", new byte[0], OPEN, CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, new Stat(), 200);
        out("sequential ttl", seq.matches("/ttl-seq-[0-9]{10}"));
        waitGone(zk, "/ttl");
        out("ttl gone");
        waitGone(zk, seq);
        out("sequential ttl gone");
        out("ttl with a child stays", zk.exists("/ttl-parent", false) != null);
        out("container with a child stays", zk.exists("/box", false) != null);

        // The cleanup's delete fires watches like any other.
        zk.exists("/box", true);
        zk.delete("/box/item", -1);
        String event = events.poll(LIMIT, TimeUnit.SECONDS);
        out("container watch", event);
        waitGone(zk, "/box");
        zk.delete("/ttl-parent/child", -1);
        waitGone(zk, "/ttl-parent");
        out("emptied ttl gone");

        // A Curator-style lock: container parents, an ephemeral sequential lock node.
        mkdirsAsContainers(zk, "/curator/locks/m");
        String lock = zk.create("/curator/locks/m/_c_" + UUID.randomUUID() + "-lock-", new byte[0], OPEN,
            CreateMode.EPHEMERAL_SEQUENTIAL);
        out("curator lock held", zk.getChildren("/curator/locks/m", false).size());
        zk.delete(lock, -1);
        waitGone(zk, "/curator");
        out("curator lock parents gone");
        zk.close();
        out("done");
    }
}
