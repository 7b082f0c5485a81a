"""Pipelined pyzmq DEALER clients, one process each (Python's GIL would serialise threads).

    python3 load.py ENDPOINT CLIENTS WINDOW PER_CLIENT OP [SALT]

Each client sends PER_CLIENT distinct requests (ids differ with SALT too) of OP (session.log or noalc.log) keeping WINDOW in
flight, then reads the rest of its replies. Prints `rate=<replies per second>` for all clients,
timed from when every client is connected to when the last reply arrived. `bench writes` runs it
against a raw ROUTER echo and the session logger in the same run.
"""
import datetime
import json
import multiprocessing
import sys
import time

import zmq


def frames(op, client, count, salt):
    now = datetime.datetime.now(datetime.timezone.utc)
    result = []
    for n in range(count):
        record = "%08x-0000-4000-8000-%012d" % (0x90000 + 256 * salt + client, n)
        if op == "session.log":
            end = now - datetime.timedelta(minutes=60 + n % 600)
            data = {"id": record, "userId": "py%d" % (client % 50), "activity": "mindfulness",
                    "start": (end - datetime.timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "end": end.strftime("%Y-%m-%dT%H:%M:%SZ")}
        else:
            day = (now - datetime.timedelta(days=n % 3000)).strftime("%Y-%m-%d")
            data = {"id": record, "userId": "py%d" % (client % 50), "day": day, "level": "steady"}
        result.append(json.dumps({"v": 1, "op": op, "data": data}, separators=(",", ":")).encode())
    return result


def client(endpoint, window, requests, ready, go, done):
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.RCVTIMEO, 10000)
    socket.connect(endpoint)
    ready.release()
    go.wait()
    sent = received = 0
    while received < len(requests):
        while sent < len(requests) and sent - received < window:
            socket.send_multipart([b"", requests[sent]])
            sent += 1
        socket.recv_multipart()
        received += 1
    done.put(time.monotonic())


def main():
    endpoint, clients, window, per_client, op = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    salt = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    ready, go, done = multiprocessing.Semaphore(0), multiprocessing.Event(), multiprocessing.Queue()
    workers = [multiprocessing.Process(target=client, args=(endpoint, window, frames(op, c, per_client, salt), ready, go, done))
               for c in range(clients)]
    for worker in workers:
        worker.start()
    for _ in workers:
        ready.acquire()
    time.sleep(0.2)  # connections settle before the clock starts
    start = time.monotonic()
    go.set()
    finished = max(done.get() for _ in workers)
    for worker in workers:
        worker.join()
    print("rate=%.0f" % (clients * per_client / (finished - start)))


if __name__ == "__main__":
    main()
