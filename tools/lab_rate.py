#!/ usr / bin / env python3
"""A TCP transfer between two namespaces of a network lab, for measuring a shaped rate.

    lab_rate.py rx ADDR PORT            waits for one sender; prints the Mbit/s received
    lab_rate.py tx ADDR PORT SECONDS    sends for SECONDS
    lab_rate.py tx ADDR PORT --bytes N  sends N bytes

Run each side in its namespace (ip netns exec NS python3 tools/lab_rate.py ...)."""
import socket
import sys
import time

CHUNK = b"x" * (1 << 16)


def receive(addr, port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    c, _ = s.accept()
    n, first = 0, None
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        first = first or time.monotonic()
        n += len(b)
    print(f"{n * 8 / (time.monotonic() - first) / 1e6:.1f}")


def send(addr, port, seconds=None, total=None):
    s = socket.create_connection((addr, port), timeout=10)
    end = time.monotonic() + seconds if seconds is not None else None
    while (end is not None and time.monotonic() < end) or (total is not None and total > 0):
        part = CHUNK if total is None else CHUNK[:total]
        s.sendall(part)
        if total is not None:
            total -= len(part)
    s.close()


if __name__ == "__main__":
    side, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if side == "rx":
        receive(addr, port)
    elif sys.argv[4] == "--bytes":
        send(addr, port, total=int(sys.argv[5]))
    else:
        send(addr, port, seconds=float(sys.argv[4]))
