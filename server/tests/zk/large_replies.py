"""Replies larger than the 1 MiB request limit, read back through kazoo (which applies no
limit of its own to what it reads): a node of 1,048,500 bytes (its get reply is larger than
ZooKeeper's default jute.maxbuffer, the create request is not), and a listing of 80,000
children with 10-byte names (about 1.1 MB). Leaves both in place for zkCli to read too.
The expected output (large_replies.expected) was recorded against Apache ZooKeeper 3.8.0.
"""
import sys

from common import client, stat

CHILDREN = 80_000
# Creates per transaction: 80 of them make the listing quickly.
BATCH = 1_000

zk = client(sys.argv[1])
for path in ["/big", "/wide"]:
    if zk.exists(path):  # a run that failed half-way
        zk.delete(path, recursive=True)

zk.create("/big", b"x" * 1048500)
data, s = zk.get("/big")
print("get /big", len(data), data == b"x" * 1048500, stat(s))

zk.create("/wide")
names = ["%010d" % i for i in range(CHILDREN)]
for start in range(0, CHILDREN, BATCH):
    t = zk.transaction()
    for name in names[start:start + BATCH]:
        t.create("/wide/" + name)
    t.commit()
kids = zk.get_children("/wide")
print("get_children /wide", len(kids), sorted(kids) == names)
kids, s = zk.get_children("/wide", include_data=True)
print("get_children2 /wide", len(kids), stat(s))
print("exists /big after", stat(zk.exists("/big")))
zk.stop()
