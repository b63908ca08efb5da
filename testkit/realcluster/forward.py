"""Loopback forwarders from the host into the cluster's network namespace.

`python -m testkit.realcluster.forward NETNS_PATH HOST_PORT:ADDR:PORT ...` binds each
127.0.0.1:HOST_PORT on the host first, then moves itself into the namespace: a socket keeps the
namespace it was made in, so the listeners stay on the host's loopback while every connection they
forward is made inside the cluster's namespace. Nothing on the host gets an address of the
cluster's.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000


def enter_netns(path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def _serve(listener: socket.socket, target: tuple[str, int]) -> None:
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection(target, timeout=10)
            upstream.settimeout(None)
        except OSError:
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def main(argv: list[str]) -> None:
    netns, *specs = argv
    routes = []
    for spec in specs:
        host_port, addr, port = spec.split(":")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(host_port)))
        listener.listen(128)
        routes.append((listener, (addr, int(port))))
    # before any thread: the threads made after this inherit the namespace
    enter_netns(netns)
    threads = [threading.Thread(target=_serve, args=route, daemon=True) for route in routes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main(sys.argv[1:])
