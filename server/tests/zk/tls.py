"""kazoo on Ward's ZooKeeper secure port (`--zk-tls-listen`), as `KazooClient(use_ssl=True,
ca=..., certfile=..., keyfile=...)` connects to ZooKeeper's secureClientPort.

tls.py ADDR CA CERT KEY serve: connects with that CA and client certificate, writes and
reads a node, prints what it read.
tls.py ADDR CA CERT KEY refused: tries to connect (CA "-" means no TLS at all, CERT "-" no
client certificate) and prints "refused" if no session opens within a few seconds,
"connected" if one does.
"""
import sys

from kazoo.client import KazooClient

addr, ca, cert, key, mode = sys.argv[1:6]
opt = lambda value: None if value == "-" else value  # noqa: E731
if ca == "-":
    kw = {}
else:
    kw = dict(use_ssl=True, ca=ca, certfile=opt(cert), keyfile=opt(key), verify_certs=True)

if mode == "serve":
    zk = KazooClient(hosts=addr, timeout=15, **kw)
    zk.start(timeout=30)
    zk.create("/tls-kazoo", b"secret")
    data, stat = zk.get("/tls-kazoo")
    print(data, stat.version)
    zk.stop()
    zk.close()
else:
    zk = KazooClient(hosts=addr, timeout=5, **kw)
    try:
        zk.start(timeout=5)
        print("connected")
    except Exception:  # noqa: BLE001 - any failure to open a session is the refusal
        print("refused")
    finally:
        zk.stop()
        zk.close()
