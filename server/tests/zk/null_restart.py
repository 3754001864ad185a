"""Null data across a restart of a durable server: `write` creates and sets nodes with null
and with empty data; `read`, after the restart, prints what each holds (None for null).
"""
import sys

from common import client

addr, phase = sys.argv[1], sys.argv[2]
zk = client(addr)
if phase == "write":
    zk.create("/r-null", None)
    zk.create("/r-empty", b"")
    zk.create("/r-set", b"data")
    zk.set("/r-set", None)
else:
    for path in ["/r-null", "/r-empty", "/r-set"]:
        print(path, repr(zk.get(path)[0]))
zk.stop()
