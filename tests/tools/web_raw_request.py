#!/usr/bin/env python3
"""Sends a raw request to HOST:PORT and prints the status line of the answer ("no answer"
when the connection ends without one within 5 s). The request is Python bytes syntax, so a
test can build huge or malformed ones:

    web_raw_request.py HOST:PORT "b'GET / HTTP/1.1\\r\\n' + b'X: ' + b'a' * 50000 + b'\\r\\n\\r\\n'"

Unlike a shutdown of the sending side, the connection stays open until the server answers."""
import socket
import sys

host, port = sys.argv[1].rsplit(":", 1)
request = eval(sys.argv[2], {"__builtins__": {}})  # a bytes expression written by the test
s = socket.create_connection((host, int(port)), timeout=5)
try:
    s.sendall(request)
except OSError:
    pass  # the server may answer and close before it has read everything
answer = b""
try:
    while b"\r\n" not in answer:
        chunk = s.recv(4096)
        if not chunk:
            break
        answer += chunk
except OSError:
    pass
s.close()
line = answer.split(b"\r\n", 1)[0].decode("latin-1")
print(line if line else "no answer")
