"""kazoo's recipes against a ZooKeeper port, each with several contenders (one session each),
checking the property the recipe promises. Prints one line per recipe; exits non-zero on a
violation or when anything takes too long.
"""
import sys
import threading
import time

from common import client

addr = sys.argv[1]
LIMIT = 60  # seconds for any one wait


class Inside:
    """Counts who is in a critical section and remembers the most seen at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now = {"r": 0, "w": 0}
        self.most = {"r": 0, "w": 0}
        self.overlap = False

    def enter(self, kind="w"):
        with self.lock:
            self.now[kind] += 1
            self.most[kind] = max(self.most[kind], self.now[kind])
            if self.now["w"] > 1 or (self.now["w"] and self.now["r"]):
                self.overlap = True

    def leave(self, kind="w"):
        with self.lock:
            self.now[kind] -= 1


def run_all(targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIMIT)
        if t.is_alive():
            sys.exit("a contender did not finish in time")


def hold(inside, kind, turns=1):
    inside.enter(kind)
    time.sleep(0.002 * turns)
    inside.leave(kind)


clients = [client(addr) for _ in range(4)]
for path in ["/r-lock", "/r-rw", "/r-sem", "/r-elect", "/r-barrier", "/r-dbarrier"]:
    clients[0].delete(path, recursive=True)

# Lock: mutual exclusion among four sessions, five turns each.
inside = Inside()
done = []


def locker(zk, name):
    def go():
        lock = zk.Lock("/r-lock", name)
        for _ in range(5):
            if not lock.acquire(timeout=LIMIT):
                sys.exit("lock not acquired in time")
            hold(inside, "w")
            lock.release()
        done.append(name)
    return go


run_all([locker(zk, "c%d" % i) for i, zk in enumerate(clients)])
print("Lock", "exclusive" if not inside.overlap and inside.most["w"] == 1 else "OVERLAP", len(done))

# ReadLock/WriteLock: readers share, a writer is alone.
r1, r2 = clients[0].ReadLock("/r-rw"), clients[1].ReadLock("/r-rw")
shared = r1.acquire(timeout=LIMIT) and r2.acquire(timeout=LIMIT)
blocked = not clients[2].WriteLock("/r-rw").acquire(blocking=False)
r1.release()
r2.release()
inside = Inside()


def reader(zk):
    def go():
        lock = zk.ReadLock("/r-rw")
        for _ in range(3):
            lock.acquire(timeout=LIMIT)
            hold(inside, "r")
            lock.release()
    return go


def writer(zk):
    def go():
        lock = zk.WriteLock("/r-rw")
        for _ in range(3):
            lock.acquire(timeout=LIMIT)
            hold(inside, "w")
            lock.release()
    return go


run_all([reader(clients[0]), reader(clients[1]), writer(clients[2]), writer(clients[3])])
print("ReadLock/WriteLock", "readers share" if shared else "READERS EXCLUDED",
      "writer waits" if blocked else "WRITER GOT IN", "ok" if not inside.overlap else "OVERLAP")

# Semaphore with two leases among four sessions.
inside = Inside()
sem_most = [0]


def leaser(zk):
    def go():
        sem = zk.Semaphore("/r-sem", max_leases=2)
        for _ in range(3):
            if not sem.acquire(timeout=LIMIT):
                sys.exit("lease not acquired in time")
            inside.enter("r")
            time.sleep(0.003)
            inside.leave("r")
            sem.release()
    return go


run_all([leaser(zk) for zk in clients])
print("Semaphore", "within 2 leases" if inside.most["r"] <= 2 else "OVER %d" % inside.most["r"])

# Election: every contender leads once, one at a time.
inside = Inside()
leaders = []


def candidate(zk, name):
    def go():
        election = zk.Election("/r-elect", name)

        def lead():
            hold(inside, "w", 2)
            leaders.append(name)

        election.run(lead)
    return go


run_all([candidate(zk, "c%d" % i) for i, zk in enumerate(clients[:3])])
print("Election", len(set(leaders)), "leaders", "alone" if not inside.overlap else "OVERLAP")

# Barrier: waiters pass only once it is removed.
barrier = clients[0].Barrier("/r-barrier")
barrier.create()
passed = []


def waiter(zk):
    def go():
        if zk.Barrier("/r-barrier").wait(LIMIT):
            passed.append(1)
    return go


threads = [threading.Thread(target=waiter(zk)) for zk in clients[1:]]
for t in threads:
    t.start()
# Every waiter has its exists-watch set once it shows in the server's watch count.
deadline = time.time() + LIMIT
while len(passed) == 0 and time.time() < deadline:
    wchs = clients[0].command(b"wchs")
    if "Total watches:3" in wchs:
        break
    time.sleep(0.01)
before = len(passed)
barrier.remove()
for t in threads:
    t.join(LIMIT)
print("Barrier", "held" if before == 0 else "LEAKED", "then released", len(passed))

# DoubleBarrier: nobody enters before all three arrive, nobody leaves before all are done.
entered = []


def participant(zk, name):
    def go():
        b = zk.DoubleBarrier("/r-dbarrier", 3, identifier=name)
        b.enter()
        entered.append(name)
        b.leave()
    return go


run_all([participant(zk, "p%d" % i) for i, zk in enumerate(clients[:3])])
print("DoubleBarrier", len(entered), "entered and left")

for zk in clients:
    zk.stop()
    zk.close()
