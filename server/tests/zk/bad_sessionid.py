"""kazoo's own test_with_bad_sessionid, against every member of an ensemble.

  bad_sessionid.py HOSTS

Starts a client with a session id the ensemble never had and a random password, as kazoo's
suite does (TestConnectionHandler.test_with_bad_sessionid): the ensemble must call that
session expired, so that kazoo starts a new session and reaches CONNECTED. Prints
"connected: True", whether the session is a new one, and that it writes.
"""
import os
import sys
import threading

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

BAD_SESSION_ID = 82838284824

connected = threading.Event()


def listener(state):
    if state == KazooState.CONNECTED:
        connected.set()


zk = KazooClient(hosts=sys.argv[1], timeout=10, client_id=(BAD_SESSION_ID, os.urandom(16)))
zk.add_listener(listener)
zk.start_async()
# kazoo's test waits 15 s; a loaded machine gets more.
connected.wait(45)
print("connected: %s" % connected.is_set(), flush=True)
if connected.is_set():
    print("new session: %s" % (zk.client_id[0] != BAD_SESSION_ID), flush=True)
    zk.create("/bad-sessionid-", b"", ephemeral=True, sequence=True)
    print("writes: True", flush=True)
zk.stop()
zk.close()
