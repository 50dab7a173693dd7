#!/usr/bin/env python3
"""What it costs the sender to put a file's bytes on a loopback TCP socket three ways: `send`
from a read-only memory mapping of the file (what logd's fetch does: a vectored write of the
mapped slices, which the kernel copies once), `sendfile` from the file (Kafka's `transferTo`:
page-cache pages attached to the socket without a copy), and `splice` through a 1 MiB pipe.
A thread drains the other end; the sender thread's CPU time (user + system, which includes the
loopback's softirq delivery it runs) is reported for the same bytes, each way twice,
alternating.

Usage: benches/sendfile_vs_send.py FILE   (FILE: a large segment file, in the page cache)
"""

import fcntl
import mmap
import os
import resource
import socket
import sys
import threading

CHUNK = 1 << 20
PASSES = 3
F_SETPIPE_SZ = 1031


def thread_cpu():
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def measure(path, way):
    size = (os.path.getsize(path) // CHUNK) * CHUNK
    total = size * PASSES
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    receiver = socket.create_connection(listener.getsockname())
    sender, _ = listener.accept()

    def drain():
        buf = bytearray(CHUNK)
        got = 0
        while got < total:
            got += receiver.recv_into(buf)

    reader = threading.Thread(target=drain)
    reader.start()
    file = open(path, "rb")
    mapping = mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ)
    pipe_out, pipe_in = os.pipe()
    fcntl.fcntl(pipe_in, F_SETPIPE_SZ, CHUNK)
    start = thread_cpu()
    for _ in range(PASSES):
        for offset in range(0, size, CHUNK):
            sent = 0
            while sent < CHUNK:
                if way == "send":
                    sent += sender.send(memoryview(mapping)[offset + sent : offset + CHUNK])
                elif way == "sendfile":
                    sent += os.sendfile(sender.fileno(), file.fileno(), offset + sent, CHUNK - sent)
                else:
                    piped = os.splice(file.fileno(), pipe_in, CHUNK - sent, offset_src=offset + sent)
                    out = 0
                    while out < piped:
                        out += os.splice(pipe_out, sender.fileno(), piped - out)
                    sent += piped
    spent = thread_cpu() - start
    reader.join()
    for closing in (sender, receiver, listener, file):
        closing.close()
    os.close(pipe_in)
    os.close(pipe_out)
    return spent, total


def main():
    path = sys.argv[1]
    for way in ["send", "sendfile", "splice"] * 2:
        spent, total = measure(path, way)
        print(f"{way:8}: sender CPU {spent * 1000:4.0f} ms for {total / 1e6:,.0f} MB")


if __name__ == "__main__":
    main()
