// Apache Curator's own recipes (Debian's libcurator-recipes-java, Curator 5.4) against a
// server whose container cleanup runs every 100 ms: an InterProcessMutex handed from one
// client to another, a LeaderLatch, and a transaction creating a container and a TTL node.
// Curator creates the parents of its lock and latch nodes as containers
// (creatingParentContainersIfNeeded), which the server deletes once their last child has
// gone; the transaction's results are read as ZooKeeper 3.8 gives them (create2 for the
// container and TTL creates), so the client keeps its connection.
// Run as a single source file: java -cp <jars> CuratorRecipes.java ADDR
// Prints one fact per line; exits non-zero on anything unexpected.

import java.util.*;
import java.util.concurrent.*;
import org.apache.curator.framework.*;
import org.apache.curator.framework.api.transaction.*;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;

public class CuratorRecipes {
    static final long LIMIT = 30;

    static void fail(String why) { System.err.println("FAIL: " + why); System.exit(1); }

    static void out(Object... parts) {
        StringBuilder b = new StringBuilder();
        for (Object p : parts) { if (b.length() > 0) b.append(' '); b.append(p); }
        System.out.println(b);
    }

    /** Polls until `path` is gone; fails after LIMIT seconds. */
    static void waitGone(CuratorFramework c, String path) throws Exception {
        long deadline = System.currentTimeMillis() + LIMIT * 1000;
        while (c.checkExists().forPath(path) != null) {
            if (System.currentTimeMillis() > deadline) fail(path + " was not deleted in time");
            Thread.sleep(20);
        }
    }

    static CuratorFramework client(String addr, List<ConnectionState> states) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder().connectString(addr)
            .sessionTimeoutMs(10000).connectionTimeoutMs(10000).retryPolicy(new RetryOneTime(100)).build();
        c.getConnectionStateListenable().addListener((client, state) -> states.add(state));
        c.start();
        if (!c.blockUntilConnected((int) LIMIT, TimeUnit.SECONDS)) fail("not connected");
        return c;
    }

    public static void main(String[] args) throws Exception {
        List<ConnectionState> states = new CopyOnWriteArrayList<>();
        CuratorFramework a = client(args[0], states);
        CuratorFramework b = client(args[0], states);

        // A mutex taken by one client, waited for by another, handed over on release.
        InterProcessMutex first = new InterProcessMutex(a, "/curator/locks/db");
        InterProcessMutex second = new InterProcessMutex(b, "/curator/locks/db");
        if (!first.acquire(LIMIT, TimeUnit.SECONDS)) fail("first acquire");
        out("lock parents are containers", a.checkExists().forPath("/curator").getEphemeralOwner() == 0,
            a.checkExists().forPath("/curator/locks/db").getEphemeralOwner() == 0);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        // Curator's mutex belongs to the thread that took it: that thread releases it too.
        Future<Boolean> waiting = pool.submit(() -> {
            boolean got = second.acquire(LIMIT, TimeUnit.SECONDS);
            if (got) second.release();
            return got;
        });
        long deadline = System.currentTimeMillis() + LIMIT * 1000;
        while (a.getChildren().forPath("/curator/locks/db").size() < 2) {
            if (System.currentTimeMillis() > deadline) fail("the second client did not queue");
            Thread.sleep(20);
        }
        out("second waits", !waiting.isDone());
        first.release();
        out("second acquires after the release", waiting.get(LIMIT, TimeUnit.SECONDS));
        pool.shutdown();
        waitGone(a, "/curator");
        out("lock directory and parents gone");

        // A leader latch: elected alone, its parents go once it closes.
        LeaderLatch latch = new LeaderLatch(a, "/curator/leader/app", "a");
        latch.start();
        out("leader", latch.await(LIMIT, TimeUnit.SECONDS));
        latch.close();
        waitGone(a, "/curator/leader");
        out("latch parents gone");

        // A transaction with a container and a TTL create: ZooKeeper 3.8's result types.
        CuratorOp box = a.transactionOp().create().withMode(CreateMode.CONTAINER).forPath("/tx-box");
        CuratorOp ttl = a.transactionOp().create().withTtl(200).withMode(CreateMode.PERSISTENT_WITH_TTL).forPath("/tx-ttl");
        CuratorOp item = a.transactionOp().create().forPath("/tx-box/item");
        for (CuratorTransactionResult r : a.transaction().forOperations(box, ttl, item)) {
            out("transaction", r.getType(), r.getForPath(), r.getResultPath(), r.getResultStat() != null);
        }
        waitGone(a, "/tx-ttl");
        out("ttl node gone");
        a.delete().forPath("/tx-box/item");
        waitGone(a, "/tx-box");
        out("container gone");

        out("connection states", states);
        a.close();
        b.close();
        out("done");
    }
}
