"""Null data versus empty data on a ZooKeeper port.

The four tests from kazoo's own suite (kazoo/tests/test_client.py: test_create_null_data,
test_create_empty_string, test_set_null_data, test_set_empty_string), their bodies as kazoo
has them, each in a fresh chroot; then the nodes' stats, and data set again. (A kazoo
transaction cannot send null data: the Java client's multi does, in JavaMulti.java.) The
expected output (null_data.expected) was recorded against Apache ZooKeeper 3.8.0.
"""
import sys

from common import client, stat

addr = sys.argv[1]
admin = client(addr)
root = "/t-null"
if admin.exists(root):  # a run that failed half-way
    admin.delete(root, recursive=True)
admin.create(root)


def in_chroot(name):
    admin.create(root + "/" + name)
    return client(addr + root + "/" + name)


def test_create_null_data(client):
    client.create("/nulldata", None)
    value, _ = client.get("/nulldata")
    assert value is None


def test_create_empty_string(client):
    client.create("/empty", b"")
    value, _ = client.get("/empty")
    assert value == b""


def test_set_null_data(client):
    client.create("/nulldata", b"not none")
    client.set("/nulldata", None)
    value, _ = client.get("/nulldata")
    assert value is None


def test_set_empty_string(client):
    client.create("/empty", b"not empty")
    client.set("/empty", b"")
    value, _ = client.get("/empty")
    assert value == b""


for test in [test_create_null_data, test_create_empty_string, test_set_null_data, test_set_empty_string]:
    zk = in_chroot(test.__name__)
    test(zk)
    zk.stop()
    print(test.__name__, "passed")

zk = admin
for path in ["/test_create_null_data/nulldata", "/test_create_empty_string/empty", "/test_set_null_data/nulldata"]:
    value, s = zk.get(root + path)
    print(path, repr(value), stat(s))
zk.set(root + "/test_set_null_data/nulldata", b"data again")
print("set after null", repr(zk.get(root + "/test_set_null_data/nulldata")[0]))
zk.delete(root, recursive=True)
zk.stop()
