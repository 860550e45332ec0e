"""Prints N free TCP ports on 127.0.0.1 (default 3) for a test's node processes, below
Linux's ephemeral range (32768-60999): inside it, a node's own outgoing connection may be
given the very port another node is about to listen on."""
import random
import socket
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 3
ports = []
while len(ports) < count:
    p = random.randrange(20000, 32000)
    with socket.socket() as x:
        try:
            x.bind(("127.0.0.1", p))
        except OSError:
            continue
    if p not in ports:
        ports.append(p)
print(*ports)
