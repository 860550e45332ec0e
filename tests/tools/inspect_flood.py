#!/usr/bin/env python3
"""Attacks on the inspection endpoint's HTTP before any authentication, from loopback
addresses 127.0.0.2 and up (so that the client the test checks, on 127.0.0.1, is another
address):

    inspect_flood.py line HOST:PORT MEGABYTES       an endless request line
    inspect_flood.py headers HOST:PORT MEGABYTES    a request line, then header lines without end
    inspect_flood.py idle HOST:PORT ADDRESSES COUNT SECONDS
                                                    COUNT idle connections from each of
                                                    ADDRESSES addresses, reopened when closed

line and headers send until MEGABYTES were taken by the kernel, over as many connections as
the endpoint closes, and print "sent N MB over C connection(s)". idle prints "held N"
(connections it held at the end) and "reopened R"."""
import selectors
import socket
import sys
import time


def connect(host, port, source, timeout=2):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((host, port))
    return s


def flood(host, port, megabytes, first, filler):
    total, conns, goal = 0, 0, megabytes << 20
    chunk = filler * (65536 // len(filler))
    while total < goal:
        try:
            s = connect(host, port, f"127.0.0.{2 + conns % 200}")
        except OSError:
            time.sleep(0.01)
            continue
        conns += 1
        try:
            total += s.send(first)
            while total < goal:
                total += s.send(chunk)
        except OSError:
            pass
        s.close()
    print(f"sent {total >> 20} MB over {conns} connection(s)", flush=True)


def idle(host, port, addresses, count, seconds):
    sel = selectors.DefaultSelector()
    held = {a: 0 for a in range(addresses)}
    reopened = 0
    end = time.time() + seconds
    while time.time() < end:
        for a in held:
            while held[a] < count:
                try:
                    s = connect(host, port, f"127.0.0.{2 + a}", timeout=0.5)
                except OSError:
                    break
                s.setblocking(False)
                sel.register(s, selectors.EVENT_READ, a)
                held[a] += 1
                reopened += 1
        for key, _ in sel.select(timeout=0.05):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                held[key.data] -= 1
    print("held", sum(held.values()), flush=True)
    print("reopened", reopened - addresses * count, flush=True)


mode = sys.argv[1]
host, port = sys.argv[2].rsplit(":", 1)
port = int(port)
if mode == "line":
    flood(host, port, int(sys.argv[3]), b"GET /", b"a")
elif mode == "headers":
    flood(host, port, int(sys.argv[3]), b"GET /api/snapshot HTTP/1.1\r\n", b"X-Filler: 0123456789\r\n")
else:
    idle(host, port, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
