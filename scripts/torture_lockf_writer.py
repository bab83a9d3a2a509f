#!/usr/bin/env python3
"""A c2c-style writer for the crash torture (examples/torture.rs): appends one message per
operation to a reader's inbox exactly as c2c 0.8 does -- an exclusive POSIX `lockf` on the
`<sid>.inbox.lock` sidecar for the whole read-modify-write, `X.tmp.<pid>`, fsync, rename --
and journals the message id (fsync'd) only after the rename returned.

usage: torture_lockf_writer.py ROOT NAME OPS READERS
"""
import fcntl
import json
import os
import random
import sys
import time
import uuid


def main():
    root, name, ops, readers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    jpath = os.path.join(root, "journal", f"{name}.jsonl")
    done = 0
    if os.path.exists(jpath):
        with open(jpath) as f:
            done = sum(1 for line in f if line.rstrip().endswith("}"))
    journal = open(jpath, "a")
    for n in range(done, ops):
        sid = f"ses_r{random.randrange(readers)}"
        inbox = os.path.join(root, f"{sid}.inbox.json")
        lock = os.open(os.path.join(root, f"{sid}.inbox.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(lock, fcntl.LOCK_EX)
            try:
                with open(inbox) as f:
                    records = json.load(f)
            except FileNotFoundError:
                records = []
            mid = str(uuid.uuid4())
            records.append({"from_alias": name, "to_alias": sid[4:], "content": f"{name} op {n}",
                            "ts": time.time(), "message_id": mid})
            tmp = f"{inbox}.tmp.{os.getpid()}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, json.dumps(records).encode())
            os.fsync(fd)
            os.close(fd)
            os.rename(tmp, inbox)
            dfd = os.open(root, os.O_RDONLY)
            os.fsync(dfd)
            os.close(dfd)
        finally:
            os.close(lock)
        journal.write(json.dumps({"op": n, "sent": [mid]}) + "\n")
        journal.flush()
        os.fsync(journal.fileno())


if __name__ == "__main__":
    main()
