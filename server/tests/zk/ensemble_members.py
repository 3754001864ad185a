"""ZooKeeper clients on every member of an ensemble, one member each.

  ensemble_members.py HOST1 HOST2 ...

Through each member in turn: a session, a node /zk-from-N made through it. Then through each
member: sync, and read every node made through the others. Prints one line per member,
"member N reads A B C", and "done".
"""
import sys

from kazoo.client import KazooClient

hosts = sys.argv[1:]
clients = []
for i, host in enumerate(hosts, start=1):
    zk = KazooClient(hosts=host, timeout=10, randomize_hosts=False)
    zk.start(timeout=30)
    zk.create(f"/zk-from-{i}", str(i).encode())
    clients.append(zk)
for i, zk in enumerate(clients, start=1):
    zk.sync("/")
    seen = [zk.get(f"/zk-from-{j}")[0].decode() for j in range(1, len(hosts) + 1)]
    print(f"member {i} reads {' '.join(seen)}", flush=True)
for zk in clients:
    zk.stop()
    zk.close()
print("done", flush=True)
