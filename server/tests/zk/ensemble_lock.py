"""A kazoo session holding an ephemeral node and a Lock while the test kills a member.

  ensemble_lock.py HOSTS EPHEMERAL LOCKDIR

HOSTS is tried in order (the test puts the leader first, so the member this session is
served by is the one killed). Prints "ready SESSION" once the ephemeral exists and the lock
is held, then waits for a line on stdin. After it, waits (bounded) to be served again and
prints what it finds, one fact per line, then "checked". On a second line it releases the
lock, closes the session and prints "closed".
"""
import sys
import threading

from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry

hosts, ephemeral, lockdir = sys.argv[1:4]
seen = []
changed = threading.Condition()


def listener(state):
    with changed:
        seen.append(state)
        changed.notify_all()


# A 10 s session: the kill and the election fit well inside it.
zk = KazooClient(hosts=hosts, timeout=10, randomize_hosts=False)
zk.add_listener(listener)
zk.start(timeout=30)
session = zk.client_id[0]
zk.create(ephemeral, b"kazoo", ephemeral=True)
lock = zk.Lock(lockdir, "kazoo")
if not lock.acquire(timeout=30):
    sys.exit("the lock was not acquired")
print("ready %d" % (session & 0xFFFFFFFFFFFFFFFF), flush=True)

sys.stdin.readline()
# A request sent before kazoo notices the dead connection fails with ConnectionLoss: ask
# again (bounded) until a surviving member answers.
retry = KazooRetry(max_tries=-1, delay=0.1, max_delay=1, deadline=30, ignore_expire=False)
retry(zk.sync, "/")
with changed:
    if not changed.wait_for(lambda: zk.state == KazooState.CONNECTED, 30):
        sys.exit("not connected again within 30 s; states seen: %r" % seen)
node = retry(zk.exists, ephemeral)
lock_node = retry(zk.exists, lockdir + "/" + lock.node)
print("connection lost and resumed:", KazooState.SUSPENDED in seen and zk.state == KazooState.CONNECTED)
print("session lost:", KazooState.LOST in seen)
print("same session:", zk.client_id[0] == session)
print("ephemeral is ours:", node is not None and node.ephemeralOwner == session)
print("lock acquired:", lock.is_acquired)
print("lock node is ours:", lock_node is not None and lock_node.ephemeralOwner == session)
print("contenders:", retry(lock.contenders))
print("checked", flush=True)

sys.stdin.readline()
lock.release()
zk.stop()
zk.close()
print("closed", flush=True)
