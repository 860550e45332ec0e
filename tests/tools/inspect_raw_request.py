#!/usr/bin/env python3
"""Sends raw bytes to HOST:PORT and prints the status line of the answer, or "no answer" when
the server closes the connection without one (or says nothing for 7 s).

    inspect_raw_request.py HOST:PORT HEX_BYTES"""
import socket
import sys

host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=7)
try:
    s.sendall(bytes.fromhex(sys.argv[2]))
    answer = s.recv(4096)
except OSError:
    answer = b""
s.close()
line = answer.split(b"\r\n", 1)[0].decode("latin-1")
print(line if line else "no answer")
