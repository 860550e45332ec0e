#!/usr/bin/env python3
"""Opens the inspection endpoint's stream and never reads it: a client as slow as can be.

    inspect_stuck_client.py HOST:PORT SECONDS [TOKEN]

Its receive buffer is made small so that the endpoint's frames back up at once; it holds the
connection open for SECONDS (or until the endpoint drops it) and prints how it ended."""
import socket
import sys
import time

host, port = sys.argv[1].rsplit(":", 1)
seconds = float(sys.argv[2])
token = sys.argv[3] if len(sys.argv) > 3 else ""
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
s.connect((host, int(port)))
auth = f"Authorization: Bearer {token}\r\n" if token else ""
s.sendall(f"GET /api/stream HTTP/1.1\r\nHost: {host}\r\n{auth}\r\n".encode())
print("stuck: connected", flush=True)
time.sleep(seconds)
s.close()
print("stuck: closed", flush=True)
