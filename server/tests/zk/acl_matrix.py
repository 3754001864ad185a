"""The ACL matrix through a ZooKeeper port: every operation on a node whose ACL grants one
permission set to one identity, as a client that is or is not that identity.

Arguments: the ZooKeeper address, and the super user's credentials (to set the nodes up).
Prints one line per cell: `scheme grant matches op outcome`, where outcome is `ok`,
`NoAuth` or another exception's name. The test (acl_matrix.rs) holds the model of
ZooKeeper's rules and compares.
"""
import sys

from kazoo.exceptions import NoAuthError
from kazoo.security import make_acl, make_digest_acl_credential

from common import client

addr, super_auth = sys.argv[1], sys.argv[2]
root = "/matrix-zk"
admin = client(addr, auth_data=[("digest", super_auth)])
alice = client(addr, auth_data=[("digest", "alice:secret")])
eve = client(addr, auth_data=[("digest", "alice:wrong")])
plain = client(addr)
if admin.exists(root):
    admin.delete(root, recursive=True)
admin.create(root)

GRANTS = [0, 1, 2, 4, 8, 16, 31]
NAMES = {1: "read", 2: "write", 4: "create", 8: "delete", 16: "admin"}


def entry(scheme, grant, matches):
    flags = {name: bool(grant & bit) for bit, name in NAMES.items()}
    if scheme == "world":
        return make_acl("world", "anyone", **flags), plain
    if scheme == "digest":
        credential = make_digest_acl_credential("alice", "secret")
        return make_acl("digest", credential, **flags), alice if matches else eve
    network = "127.0.0.1" if matches else "10.0.0.0/8"
    return make_acl("ip", network, **flags), plain


def attempt(f):
    try:
        f()
        return "ok"
    except NoAuthError:
        return "NoAuth"
    except Exception as e:  # noqa: BLE001 - the name is the observation
        return type(e).__name__


def check(zk, path):
    t = zk.transaction()
    t.check(path, -1)
    results = t.commit()
    if isinstance(results[0], Exception):
        raise results[0]


for scheme in ["world", "digest", "ip"]:
    for grant in GRANTS:
        for matches in ([True] if scheme == "world" else [True, False]):
            acl, zk = entry(scheme, grant, matches)
            node = "%s/%s-%d-%s" % (root, scheme, grant, "yes" if matches else "no")
            admin.create(node, b"d", acl=[acl])
            admin.create(node + "/c")
            ops = [
                ("get", lambda: zk.get(node)),
                ("exists", lambda: zk.exists(node)),
                ("children", lambda: zk.get_children(node)),
                ("set", lambda: zk.set(node, b"x")),
                ("create", lambda: zk.create(node + "/n")),
                ("delete", lambda: zk.delete(node + "/c")),
                ("get_acl", lambda: zk.get_acls(node)),
                ("set_acl", lambda: zk.set_acls(node, [acl])),
                ("check", lambda: check(zk, node)),
                ("sync", lambda: zk.sync(node)),
            ]
            for name, op in ops:
                print(scheme, grant, "yes" if matches else "no", name, attempt(op))
                # Put back what a successful write changed, for the next cell.
                if admin.exists(node + "/n"):
                    admin.delete(node + "/n")
                if not admin.exists(node + "/c"):
                    admin.create(node + "/c")
admin.delete(root, recursive=True)
for zk in [admin, alice, eve, plain]:
    zk.stop()
