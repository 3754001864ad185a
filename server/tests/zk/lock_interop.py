"""A kazoo Lock on a directory a native Ward client also locks.

  lock_interop.py ADDR DIR try    prints "acquired" or "busy" (a non-blocking acquire)
  lock_interop.py ADDR DIR hold   prints "held" once it holds, releases on a line on stdin
  lock_interop.py ADDR DIR wait   waits for the lock, prints "acquired MS" (the wall clock in
                                  ms since the epoch when it got it), releases
"""
import sys
import time

from common import client

addr, path, mode = sys.argv[1:4]
zk = client(addr)
lock = zk.Lock(path, "kazoo")
if mode == "try":
    got = lock.acquire(blocking=False)
    print("acquired" if got else "busy", flush=True)
    if got:
        lock.release()
elif mode == "wait":
    lock.acquire(timeout=60)
    print("acquired", int(time.time() * 1000), flush=True)
    lock.release()
else:
    lock.acquire(timeout=60)
    print("held", sorted(lock.contenders()), flush=True)
    sys.stdin.readline()
    lock.release()
    print("released", flush=True)
zk.stop()
zk.close()
