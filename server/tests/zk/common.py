"""Shared bits of the kazoo scripts the zk_* tests run against Ward's ZooKeeper port.

Each script takes the ZooKeeper address as its first argument, prints what it observed
(one fact per line, with no zxids or times in it, so the output can be compared with what
a real ZooKeeper 3.8 prints) and exits non-zero on any unexpected error.
"""
import sys
import threading

from kazoo.client import KazooClient


def client(addr, **kw):
    kw.setdefault("timeout", 15)
    zk = KazooClient(hosts=addr, **kw)
    zk.start(timeout=30)
    return zk


def stat(s):
    """The fields of a stat that do not depend on clocks or on other traffic."""
    if s is None:
        return "None"
    return "version=%d cversion=%d aversion=%d ephemeral=%s dataLength=%d numChildren=%d" % (
        s.version, s.cversion, s.aversion, s.ephemeralOwner != 0, s.dataLength, s.numChildren)


def outcome(f, *args, **kw):
    """What a call returned, or the name of the exception it raised."""
    try:
        return f(*args, **kw)
    except Exception as e:  # noqa: BLE001 - the name is the observation
        return type(e).__name__


class Events:
    """Collects watch events; wait() blocks (bounded) until n have arrived."""

    def __init__(self):
        self.events = []
        self.cond = threading.Condition()

    def __call__(self, event):
        with self.cond:
            self.events.append((event.type, event.path))
            self.cond.notify_all()

    def wait(self, n, timeout=30):
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.events) >= n, timeout):
                sys.exit("timed out waiting for %d events, have %r" % (n, self.events))
            return list(self.events)
