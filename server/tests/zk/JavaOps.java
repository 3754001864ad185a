// The ops kazoo lacks, through ZooKeeper 3.8's own Java client: persistent and recursive
// watches, removeWatches/checkWatches, getEphemerals, getAllChildrenNumber, containers,
// multiRead, whoAmI, watches carried over a reconnect (setWatches2), session
// reattach and session expiry. Run as a single source file: java -cp <jars> JavaOps.java ADDR
// Prints one fact per line; exits non-zero on anything unexpected.

import java.io.*;
import java.net.*;
import java.util.*;
import java.util.concurrent.*;
import org.apache.zookeeper.*;
import org.apache.zookeeper.data.*;

public class JavaOps {
    static final long LIMIT = 30;

    /** A TCP proxy to Ward that can cut every connection and refuse new ones for a while. */
    static class Proxy implements Runnable {
        final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final String target;
        final List<Socket> open = Collections.synchronizedList(new ArrayList<>());
        volatile boolean refusing = false;

        Proxy(String target) throws IOException { this.target = target; }

        String addr() { return "127.0.0.1:" + server.getLocalPort(); }

        public void run() {
            while (!server.isClosed()) {
                try {
                    Socket in = server.accept();
                    if (refusing) { in.close(); continue; }
                    String[] hp = target.split(":");
                    Socket out = new Socket(hp[0], Integer.parseInt(hp[1]));
                    open.add(in); open.add(out);
                    pump(in, out); pump(out, in);
                } catch (IOException e) { /* closed */ }
            }
        }

        void pump(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[65536];
                try (InputStream i = from.getInputStream(); OutputStream o = to.getOutputStream()) {
                    int n;
                    while ((n = i.read(buf)) > 0) { o.write(buf, 0, n); o.flush(); }
                } catch (IOException e) { /* cut */ }
                try { from.close(); to.close(); } catch (IOException e) { }
            });
            t.setDaemon(true);
            t.start();
        }

        void cut() throws IOException {
            synchronized (open) { for (Socket s : open) s.close(); open.clear(); }
        }
    }

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

    static ZooKeeper connect(String addr, int timeout, Events ev) throws Exception {
        ZooKeeper zk = new ZooKeeper(addr, timeout, ev);
        ev.waitState("SyncConnected");
        return zk;
    }

    static String err(Callable<?> c) {
        try { return String.valueOf(c.call()); }
        catch (KeeperException e) { return e.code().toString(); }
        catch (Exception e) { return e.getClass().getSimpleName(); }
    }

    public static void main(String[] args) throws Exception {
        String addr = args[0];
        List<ACL> open = ZooDefs.Ids.OPEN_ACL_UNSAFE;
        Events ev = new Events();
        ZooKeeper zk = connect(addr, 10000, ev);

        // Containers and TTL nodes, and their cleanup: ContainersAndTtl.java.
        out("container", zk.create("/j", new byte[0], open, CreateMode.CONTAINER));

        zk.create("/j/p", new byte[0], open, CreateMode.PERSISTENT);
        zk.create("/j/p/e1", new byte[0], open, CreateMode.EPHEMERAL);
        zk.create("/j/p/q", new byte[0], open, CreateMode.PERSISTENT);
        zk.create("/j/p/q/e2", new byte[0], open, CreateMode.EPHEMERAL);
        List<String> eph = zk.getEphemerals("/j/p/q");
        Collections.sort(eph);
        out("ephemerals under prefix", eph);
        out("ephemerals all", zk.getEphemerals().size());
        out("all children number", zk.getAllChildrenNumber("/j"), zk.getAllChildrenNumber("/j/p/q/e2"));
        out("all children missing", err(() -> zk.getAllChildrenNumber("/nope")));

        List<OpResult> reads = zk.multi(Arrays.asList(Op.getChildren("/j/p"), Op.getData("/j/p/q"), Op.getData("/nope")));
        StringBuilder r = new StringBuilder();
        for (OpResult res : reads) {
            if (res instanceof OpResult.GetChildrenResult) r.append("children").append(new TreeSet<>(((OpResult.GetChildrenResult) res).getChildren()));
            else if (res instanceof OpResult.GetDataResult) r.append(" data").append(((OpResult.GetDataResult) res).getStat().getNumChildren());
            else if (res instanceof OpResult.ErrorResult) r.append(" error").append(((OpResult.ErrorResult) res).getErr());
        }
        out("multiRead", r);
        out("whoAmI", zk.whoAmI().get(0).getAuthScheme());

        // Persistent watches stay armed; recursive ones cover descendants and skip
        // NodeChildrenChanged.
        Events pw = new Events();
        zk.addWatch("/j/p", pw, AddWatchMode.PERSISTENT);
        Events rw = new Events();
        zk.addWatch("/j", rw, AddWatchMode.PERSISTENT_RECURSIVE);
        ZooKeeper other = connect(addr, 10000, new Events());
        other.setData("/j/p", "1".getBytes(), -1);
        other.setData("/j/p", "2".getBytes(), -1);
        other.create("/j/p/k", new byte[0], open, CreateMode.PERSISTENT);
        other.delete("/j/p/k", -1);
        out("persistent", pw.nextNode(), pw.nextNode(), pw.nextNode(), pw.nextNode());
        out("recursive", rw.nextNode(), rw.nextNode(), rw.nextNode(), rw.nextNode());

        // removeWatches: one watcher is a check on the server; all watches a removal.
        Events dw = new Events();
        zk.getData("/j/p/q", dw, null);
        zk.removeWatches("/j/p/q", dw, Watcher.WatcherType.Data, false);
        out("removed data watch", dw.nextNode());
        out("remove again", err(() -> { zk.removeAllWatches("/j/p/q", Watcher.WatcherType.Any, false); return "removed"; }));
        zk.removeAllWatches("/j/p", Watcher.WatcherType.Any, false);
        other.setData("/j/p", "3".getBytes(), -1);
        other.setData("/j", "x".getBytes(), -1);
        // The Java client also hands this connection's NodeChildrenChanged to the recursive
        // watcher, and its NodeDeleted /j/p/k is still queued: as with ZooKeeper 3.8.0.
        out("recursive, next", rw.nextNode());

        // Watches survive a reconnect: the client re-sends them (setWatches2) and a change
        // made while it was away fires at once.
        Proxy proxy = new Proxy(addr);
        new Thread(proxy).start();
        Events cw = new Events();
        ZooKeeper viaProxy = connect(proxy.addr(), 10000, cw);
        Events sw = new Events();
        viaProxy.getData("/j/p/q", sw, null);
        viaProxy.exists("/j/later", sw);
        viaProxy.addWatch("/j/p/q", sw, AddWatchMode.PERSISTENT);
        proxy.refusing = true;
        proxy.cut();
        cw.waitState("Disconnected");
        other.setData("/j/p/q", "changed".getBytes(), -1);
        other.create("/j/later", new byte[0], open, CreateMode.PERSISTENT);
        proxy.refusing = false;
        cw.waitState("SyncConnected");
        TreeSet<String> missed = new TreeSet<>(Arrays.asList(sw.nextNode(), sw.nextNode()));
        out("missed while away", missed);
        other.setData("/j/p/q", "again".getBytes(), -1);
        out("persistent after reconnect", sw.nextNode());

        // Reattach: a second client with the same id and password is the same session.
        ZooKeeper again = new ZooKeeper(addr, 10000, new Events(), viaProxy.getSessionId(), viaProxy.getSessionPasswd());
        long deadline = System.currentTimeMillis() + LIMIT * 1000;
        while (again.getState() != ZooKeeper.States.CONNECTED && System.currentTimeMillis() < deadline) Thread.sleep(10);
        out("reattached same session", again.getSessionId() == viaProxy.getSessionId());
        again.create("/j/mine", new byte[0], open, CreateMode.EPHEMERAL);
        out("ephemeral owner", again.exists("/j/mine", false).getEphemeralOwner() == viaProxy.getSessionId());
        again.close();
        out("closed session's ephemeral gone", zk.exists("/j/mine", false) == null);

        // Expiry: a session cut off past its timeout loses its ephemerals, and its client is
        // told Expired when it comes back.
        Events xw = new Events();
        ZooKeeper doomed = connect(proxy.addr(), 1000, xw);
        doomed.create("/j/doomed", new byte[0], open, CreateMode.EPHEMERAL);
        Events gone = new Events();
        zk.exists("/j/doomed", gone);
        proxy.refusing = true;
        proxy.cut();
        out("expired ephemeral", gone.nextNode());
        proxy.refusing = false;
        xw.waitState("Expired");
        out("expired client told");

        zk.close();
        other.close();
        viaProxy.close();
        doomed.close();
        proxy.server.close();
        out("done");
        System.exit(0);
    }
}
