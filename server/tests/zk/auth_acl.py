"""kazoo's own authentication and ACL tests against a ZooKeeper port.

The tests of kazoo/tests/test_client.py on authentication and ACLs (TestAuthentication,
and from TestClient and TestClientTransactions the ones on ACLs), their bodies as kazoo has
them, each in a fresh chroot the way kazoo's harness gives one; `raises` stands in for
pytest's. Then what they leave unsaid: what a client without the right credentials gets
for each operation on a digest-protected node, getACL as a client without ADMIN sees it,
setACL's versions, and the super user. The expected output (auth_acl.expected) was
recorded against Apache ZooKeeper 3.8.0 started with kazoo's harness super digest
(`super:test`).

Not run: test_no_super_auth (reconfig: Ward has no dynamic reconfiguration, and answers
RECONFIG_DISABLED as a ZooKeeper without it does).
"""
import contextlib
import socket
import sys
import time
import types
import uuid

from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.exceptions import (AuthFailedError, BadVersionError, InvalidACLError, NoAuthError,
                              NoNodeError)
from kazoo.protocol.states import KeeperState
from kazoo.security import (CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_acl,
                            make_digest_acl, make_digest_acl_credential)

from common import client as connect, outcome, stat

addr = sys.argv[1]
CI_ZK_VERSION = (3, 8)
admin = connect(addr, auth_data=[("digest", "super:test")])
root = "/t-auth"
if admin.exists(root):  # a run that failed half-way
    admin.delete(root, recursive=True)
admin.create(root)


@contextlib.contextmanager
def raises(kind):
    try:
        yield
    except kind:
        return
    raise AssertionError("expected %s" % kind.__name__)


class pytest:  # noqa: N801 - kazoo's tests say pytest.raises
    raises = staticmethod(raises)


class Case:
    """What kazoo's KazooTestCase gives a test: a started client in a fresh chroot, and more
    clients in the same chroot on request."""

    def __init__(self, name):
        self.chroot = root + "/" + name
        admin.create(self.chroot)
        self.clients = []
        self.client = self._get_client()
        self.client.start()

    cluster = [types.SimpleNamespace(address=addr)]

    def _makeOne(self, *args):
        return SequentialThreadingHandler(*args)

    def _makeAuth(self, *args, **kwargs):
        return make_digest_acl(*args, **kwargs)

    def _get_client(self, **kw):
        kw.setdefault("timeout", 15)
        c = KazooClient(hosts=addr + self.chroot, **kw)
        self.clients.append(c)
        return c

    def close(self):
        for c in self.clients:
            with contextlib.suppress(Exception):
                c.stop()
                c.close()


# TestAuthentication

def test_auth(self):
    username = uuid.uuid4().hex
    password = uuid.uuid4().hex

    digest_auth = "%s:%s" % (username, password)
    acl = self._makeAuth(username, password, all=True)

    client = self._get_client()
    client.start()
    client.add_auth("digest", digest_auth)
    client.default_acl = (acl,)

    try:
        client.create("/1")
        client.create("/1/2")
        client.ensure_path("/1/2/3")

        eve = self._get_client()

        eve.start()

        with pytest.raises(NoAuthError):
            eve.get("/1/2")

        # try again with the wrong auth token
        eve.add_auth("digest", "badbad:bad")

        with pytest.raises(NoAuthError):
            eve.get("/1/2")

    finally:
        # Ensure we remove the ACL protected nodes
        client.delete("/1", recursive=True)
        eve.stop()
        eve.close()


def test_connect_auth(self):
    username = uuid.uuid4().hex
    password = uuid.uuid4().hex

    digest_auth = "%s:%s" % (username, password)
    acl = self._makeAuth(username, password, all=True)

    client = self._get_client(auth_data=[("digest", digest_auth)])
    client.start()
    try:
        client.create("/1", acl=(acl,))
        # give ZK a chance to copy data to other node
        time.sleep(0.1)

        with pytest.raises(NoAuthError):
            self.client.get("/1")

    finally:
        client.delete("/1")
        client.stop()
        client.close()


def test_unicode_auth(self):
    username = r"xe4/\hm"
    password = r"/\xe4hm"
    digest_auth = "%s:%s" % (username, password)
    acl = self._makeAuth(username, password, all=True)

    client = self._get_client()
    client.start()
    client.add_auth("digest", digest_auth)
    client.default_acl = (acl,)

    try:
        client.create("/1")
        client.ensure_path("/1/2/3")

        eve = self._get_client()
        eve.start()

        with pytest.raises(NoAuthError):
            eve.get("/1/2")

        # try again with the wrong auth token
        eve.add_auth("digest", "badbad:bad")

        with pytest.raises(NoAuthError):
            eve.get("/1/2")

    finally:
        # Ensure we remove the ACL protected nodes
        client.delete("/1", recursive=True)
        eve.stop()
        eve.close()


def test_invalid_auth(self):
    client = self._get_client()
    client.start()

    with pytest.raises(TypeError):
        client.add_auth("digest", ("user", "pass"))

    with pytest.raises(TypeError):
        client.add_auth(None, ("user", "pass"))


def test_async_auth(self):
    client = self._get_client()
    client.start()
    username = uuid.uuid4().hex
    password = uuid.uuid4().hex
    digest_auth = "%s:%s" % (username, password)
    result = client.add_auth_async("digest", digest_auth)
    assert result.get() is True


def test_async_auth_failure(self):
    client = self._get_client()
    client.start()
    username = uuid.uuid4().hex
    password = uuid.uuid4().hex
    digest_auth = "%s:%s" % (username, password)

    with pytest.raises(AuthFailedError):
        client.add_auth("unknown-scheme", digest_auth)


def test_add_auth_on_reconnect(self):
    client = self._get_client()
    client.start()
    client.add_auth("digest", "jsmith:jsmith")
    client._connection._socket.shutdown(socket.SHUT_RDWR)
    while not client.connected:
        time.sleep(0.1)
    assert ("digest", "jsmith:jsmith") in client.auth_data


# TestClient

def test_create_acl_duplicate(self):
    single_acl = OPEN_ACL_UNSAFE[0]
    client = self.client
    client.create("/1", acl=[single_acl, single_acl])
    acls, stat = client.get_acls("/1")
    # ZK >3.4 removes duplicate ACL entries
    if CI_ZK_VERSION:
        version = CI_ZK_VERSION
    else:
        version = client.server_version()
    assert len(acls) == 1 if version > (3, 4) else 2


def test_create_acl_empty_list(self):
    client = self.client
    client.create("/1", acl=[])
    acls, stat = client.get_acls("/1")
    assert acls == OPEN_ACL_UNSAFE


def test_create_makepath_incompatible_acls(self):
    credential = make_digest_acl_credential("username", "password")
    alt_client = KazooClient(
        self.cluster[0].address + self.client.chroot,
        max_retries=5,
        auth_data=[("digest", credential)],
        handler=self._makeOne(),
    )
    alt_client.start()
    alt_client.create("/1/2", b"val2", makepath=True, acl=CREATOR_ALL_ACL)

    try:
        with pytest.raises(NoAuthError):
            self.client.create("/1/2/3/4/5", b"val2", makepath=True)

    finally:
        alt_client.delete("/", recursive=True)
        alt_client.stop()


def test_get_acls(self):
    user = "user"
    passw = "pass"
    acl = make_digest_acl(user, passw, all=True)
    client = self.client
    try:
        client.create("/a", acl=[acl])
        client.add_auth("digest", "{}:{}".format(user, passw))
        assert acl in client.get_acls("/a")[0]
    finally:
        client.delete("/a")


def test_get_acls_invalid_arguments(self):
    client = self.client
    with pytest.raises(TypeError):
        client.get_acls(("a", "b"))


def test_set_acls(self):
    user = "user"
    passw = "pass"
    acl = make_digest_acl(user, passw, all=True)
    client = self.client
    client.create("/a")
    try:
        client.set_acls("/a", [acl])
        client.add_auth("digest", "{}:{}".format(user, passw))
        assert acl in client.get_acls("/a")[0]
    finally:
        client.delete("/a")


def test_set_acls_empty(self):
    client = self.client
    client.create("/a")
    with pytest.raises(InvalidACLError):
        client.set_acls("/a", [])


def test_set_acls_no_node(self):
    client = self.client
    with pytest.raises(NoNodeError):
        client.set_acls("/a", OPEN_ACL_UNSAFE)


def test_set_acls_invalid_arguments(self):
    single_acl = OPEN_ACL_UNSAFE[0]
    client = self.client
    with pytest.raises(TypeError):
        client.set_acls(("a", "b"), ())
    with pytest.raises(TypeError):
        client.set_acls("a", single_acl)
    with pytest.raises(TypeError):
        client.set_acls("a", "all")
    with pytest.raises(TypeError):
        client.set_acls("a", [single_acl], "V1")


def test_invalid_auth_state(self):
    client = self.client
    client.stop()
    client._state = KeeperState.AUTH_FAILED

    with pytest.raises(AuthFailedError):
        client.get("/")


# TestClientTransactions

def test_default_acl(self):
    username = uuid.uuid4().hex
    password = uuid.uuid4().hex

    digest_auth = "%s:%s" % (username, password)
    acl = make_digest_acl(username, password, all=True)

    self.client.add_auth("digest", digest_auth)
    self.client.default_acl = (acl,)

    t = self.client.transaction()
    t.create("/freddy")
    results = t.commit()
    assert results[0] == "/freddy"


tests = [test_auth, test_connect_auth, test_unicode_auth, test_invalid_auth, test_async_auth,
         test_async_auth_failure, test_add_auth_on_reconnect, test_create_acl_duplicate,
         test_create_acl_empty_list, test_create_makepath_incompatible_acls, test_get_acls,
         test_get_acls_invalid_arguments, test_set_acls, test_set_acls_empty,
         test_set_acls_no_node, test_set_acls_invalid_arguments, test_invalid_auth_state,
         test_default_acl]
for test in tests:
    case = Case(test.__name__)
    try:
        test(case)
    finally:
        case.close()
    print(test.__name__, "passed")

# Beyond kazoo's tests: a digest-protected node, as alice, eve and nobody see it.
base = root + "/protected"
alice = connect(addr, auth_data=[("digest", "alice:secret")])
eve = connect(addr, auth_data=[("digest", "alice:wrong")])
nobody = connect(addr)
owner = make_digest_acl("alice", "secret", all=True)
reader = make_acl("world", "anyone", read=True)
alice.create(base, b"d", acl=[owner])
alice.create(base + "/kid", b"k", acl=[owner])
for name, zk in [("alice", alice), ("eve", eve), ("nobody", nobody)]:
    t = zk.transaction()
    t.check(base, 0)
    print(name, "get", outcome(lambda: zk.get(base)[0]))
    print(name, "exists missing", outcome(zk.exists, base + "/none"))
    print(name, "children", outcome(zk.get_children, base))
    print(name, "set", outcome(lambda: stat(zk.set(base, b"x"))))
    print(name, "create", outcome(zk.create, base + "/new"))
    print(name, "delete missing child", outcome(zk.delete, base + "/none"))
    print(name, "get acl", outcome(lambda: [(a.perms, a.id.scheme, a.id.id) for a in zk.get_acls(base)[0]]))
    print(name, "set acl", outcome(lambda: stat(zk.set_acls(base, [owner], version=99))))
    print(name, "check in multi", outcome(lambda: [type(r).__name__ for r in t.commit()]))
    print(name, "sync", outcome(zk.sync, base))
alice.delete(base + "/new")

# getACL with READ but not ADMIN: digests masked; setACL's versions.
alice.set_acls(base, [owner, reader], version=0)
print("masked", [(a.perms, a.id.scheme, a.id.id) for a in nobody.get_acls(base)[0]])
print("full", [(a.perms, a.id.scheme, a.id.id) for a in alice.get_acls(base)[0]])
print("stale aversion", outcome(alice.set_acls, base, [owner], version=0))
print("aversion", stat(alice.set_acls(base, [owner], version=1)))
print("invalid", outcome(alice.set_acls, base, [make_acl("ip", "not-an-address", all=True)]))
print("auth without identity", outcome(nobody.create, root + "/auth-only", acl=CREATOR_ALL_ACL))
print("auth as alice", [(a.perms, a.id.scheme, a.id.id)
                        for a in alice.get_acls(alice.create(root + "/auth-only", acl=CREATOR_ALL_ACL))[0]])
print("ip acl", outcome(nobody.create, root + "/ip", acl=[make_acl("ip", "127.0.0.1", all=True)]),
      outcome(lambda: nobody.get(root + "/ip")[0]))
print("ip acl elsewhere", outcome(nobody.create, root + "/ip-other", acl=[make_acl("ip", "10.0.0.0/8", all=True)]),
      outcome(lambda: nobody.get(root + "/ip-other")[0]))
print("super reads", admin.get(base)[0], outcome(admin.delete, base, recursive=True))
for zk in [alice, eve, nobody]:
    zk.stop()
admin.delete(root, recursive=True)
admin.stop()
