#!/usr/bin/env python3
"""Sends raw bytes to HOST:PORT and prints the status line of the answer (or "no answer").

    inspect_raw_request.py HOST:PORT HEX_BYTES"""
import socket
import sys

host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(bytes.fromhex(sys.argv[2]))
try:
    s.shutdown(socket.SHUT_WR)
    answer = s.recv(4096)
except OSError:
    answer = b""
s.close()
line = answer.split(b"\r\n", 1)[0].decode("latin-1")
print(line if line else "no answer")
