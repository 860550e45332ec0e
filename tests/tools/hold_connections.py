#!/usr/bin/env python3
"""Strangers at a job's ports: holds COUNT idle TCP connections to each PORT on 127.0.0.1,
sending nothing, and opens a new one as soon as one is closed (a port that is not open yet
is tried again), until SECONDS have passed or it is killed. Prints "holding PORT" once PORT
has all COUNT at once, and at the end how many it reopened.

    hold_connections.py COUNT SECONDS PORT...
"""
import selectors
import socket
import sys
import time

count, seconds = int(sys.argv[1]), float(sys.argv[2])
ports = [int(p) for p in sys.argv[3:]]
sel = selectors.DefaultSelector()
held = {p: 0 for p in ports}
announced = set()
reopened = 0


def open_one(port):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
    except OSError:
        return False
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, port)
    held[port] += 1
    return True


end = time.time() + seconds
while time.time() < end:
    for port in ports:
        while held[port] < count and open_one(port):
            if port in announced:
                reopened += 1
        if held[port] == count and port not in announced:
            announced.add(port)
            print("holding", port, flush=True)
    for key, _ in sel.select(timeout=0.1):
        s = key.fileobj
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:  # closed by the gate
            sel.unregister(s)
            s.close()
            held[key.data] -= 1
print("reopened", reopened, flush=True)
