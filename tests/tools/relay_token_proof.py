#!/usr/bin/env python3
"""The relay attack on a job with certificates, by one who holds a node's certificate and
key but not the job's token: it listens at LURE_PORT as that node, takes the token proof of
the first client that dials it (a real node or `deepcee inject` of the job), and replays it
into its own TLS session with the gate at GATE_PORT. Prints "refused" when the gate closes
that session without proving anything back, "admitted" when it answers, and exits 0 either
way once it knows; "listening" once LURE_PORT is open.

    relay_token_proof.py CERT KEY CA LURE_PORT GATE_PORT
"""
import socket
import ssl
import sys

cert, key, ca = sys.argv[1:4]
lure_port, gate_port = int(sys.argv[4]), int(sys.argv[5])


def context(purpose):
    ctx = ssl.SSLContext(purpose)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(ca)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def read_exactly(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


lure = socket.create_server(("127.0.0.1", lure_port))
print("listening", flush=True)
raw, _ = lure.accept()
raw.settimeout(10)
victim = context(ssl.PROTOCOL_TLS_SERVER).wrap_socket(raw, server_side=True)
proof = read_exactly(victim, 32)
if len(proof) != 32:
    print("no proof from the victim", flush=True)
    sys.exit(1)
gate = context(ssl.PROTOCOL_TLS_CLIENT).wrap_socket(
    socket.create_connection(("127.0.0.1", gate_port), timeout=10))
gate.sendall(proof)
try:
    answer = read_exactly(gate, 32)
except (ssl.SSLError, OSError):
    answer = b""
print("admitted" if answer else "refused", flush=True)
