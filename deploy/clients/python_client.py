#!/usr/bin/env python3
"""A Smart Reminders client in Python, written from Shared/Schema/PROTOCOL.md alone (pyzmq).

1. logs a session through the session logger's api (REQ) and prints the ack;
2. logs a NoAlc check-in fire-and-forget through the intake (PUB, topic "intake");
3. follows the user's notifications on the notifier's events (SUB "notify.<user>.") for at most --wait seconds.

With --cert (a user's secret certificate NAME.key_secret from `lht keys add-user`) it speaks CurveZMQ to
services started with --keys: its own key pair from that file, each service's public key from
--server-keys DIR (services/<executable>.key or <executable>.key there), both read with
zmq.auth.load_certificate. Without --cert it speaks plaintext (services without keys, loopback only).

Exit status: 0 ok, 1 the service answered with an error, 3 it did not answer within --timeout.
"""
import argparse
import datetime as dt
import json
import sys
import time
import uuid

import os

import zmq
import zmq.auth


def uuid7():
    """A version 7 UUID (RFC 9562): Unix time in milliseconds, then random bits. The services index records by id,
    and ids in time order add to the end of that index instead of a random page of it."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    value = value & ~(0xF << 76) | 0x7 << 76  # version 7
    value = value & ~(0x3 << 62) | 0x2 << 62  # RFC 9562 variant
    return str(uuid.UUID(int=value))


def curve(cert, server_keys):
    """A function that makes a socket a CURVE client of a service (before connect), or does nothing without --cert."""
    if not cert:
        if server_keys:
            raise ValueError("--server-keys needs --cert")
        return lambda socket, service: None
    if os.stat(cert).st_mode & 0o077:
        raise ValueError(f"secret key {cert} is accessible to group or others; run: chmod 600 {cert}")
    public, secret = zmq.auth.load_certificate(cert)
    if not secret:
        raise ValueError(f"{cert} holds no secret key")
    directory = server_keys or os.path.dirname(cert) or "."

    def server_key(service):
        for path in (os.path.join(directory, "services", service + ".key"), os.path.join(directory, service + ".key")):
            if os.path.exists(path):
                return zmq.auth.load_certificate(path)[0]
        raise ValueError(f"no public key of {service} in {directory} (services/{service}.key or {service}.key)")

    keys = {service: server_key(service) for service in ("session-logger", "notifier")}

    def secure(socket, service):
        socket.curve_publickey = public
        socket.curve_secretkey = secret
        socket.curve_serverkey = keys[service]

    return secure


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--user", required=True)
    p.add_argument("--api", default="tcp://127.0.0.1:7301", help="session logger api (ROUTER)")
    p.add_argument("--intake", default="tcp://127.0.0.1:7303", help="session logger intake (SUB)")
    p.add_argument("--notifier-events", default="tcp://127.0.0.1:7322", help="notifier events (PUB)")
    p.add_argument("--activity", default="mindfulness", choices=["mindfulness", "workout"])
    p.add_argument("--start", help="RFC 3339 start (default: --minutes before now)")
    p.add_argument("--minutes", type=int, default=10)
    p.add_argument("--noalc-day", help="YYYY-MM-DD for the NoAlc check-in (default yesterday, UTC)")
    p.add_argument("--level", default="steady", choices=["steady", "easy", "wild"])
    p.add_argument("--wait", type=float, default=10, help="seconds to wait for notifications")
    p.add_argument("--count", type=int, default=1, help="stop after this many notifications")
    p.add_argument("--timeout", type=float, default=3, help="seconds to wait for the api's reply")
    p.add_argument("--cert", default=os.environ.get("LHT_CERT"),
                   help="own secret certificate NAME.key_secret: speak CurveZMQ (env LHT_CERT)")
    p.add_argument("--server-keys", default=os.environ.get("LHT_SERVER_KEYS"),
                   help="directory with the services' public keys (default: the --cert file's directory; env LHT_SERVER_KEYS)")
    args = p.parse_args()
    try:
        secure = curve(args.cert, args.server_keys)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    ctx = zmq.Context()

    # 1. Request/reply: one JSON frame out, one back (REQ adds the empty delimiter ROUTER expects).
    if args.start:
        start = dt.datetime.fromisoformat(args.start.replace("Z", "+00:00"))
    else:
        start = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(minutes=args.minutes)
    end = start + dt.timedelta(minutes=args.minutes)
    request = {"v": 1, "op": "session.log", "data": {
        "id": uuid7(), "userId": args.user, "activity": args.activity,
        "start": start.isoformat(), "end": end.isoformat(), "source": "python-client"}}
    req = ctx.socket(zmq.REQ)
    req.setsockopt(zmq.LINGER, 0)
    secure(req, "session-logger")
    req.connect(args.api)
    req.send_string(json.dumps(request))
    if not req.poll(int(args.timeout * 1000)):
        print(f"error: {args.api} did not answer session.log within {args.timeout} s", file=sys.stderr)
        return 3
    reply = json.loads(req.recv_string())
    if not reply.get("ok"):
        e = reply.get("error", {})
        print(f"error: {e.get('code')} ({e.get('field')}): {e.get('message')}", file=sys.stderr)
        return 1
    print("session.log ack:", json.dumps(reply["data"], sort_keys=True), flush=True)

    # 2. Fire and forget: [topic "intake", request] to the intake SUB. No reply; lossy by nature,
    #    so give the connection a moment before sending (slow joiner) and linger until it is out.
    day = args.noalc_day or (dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)).isoformat()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 1000)
    secure(pub, "session-logger")
    pub.connect(args.intake)
    time.sleep(0.5)
    noalc = {"v": 1, "op": "noalc.log", "data": {"userId": args.user, "day": day, "level": args.level, "source": "python-client"}}
    pub.send_multipart([b"intake", json.dumps(noalc).encode()])
    print(f"noalc.log sent to intake: {args.level} for {day}", flush=True)

    # 3. Publish/subscribe: [topic, envelope]; the prefix "notify.<user>." selects one user's notifications.
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    prefix = f"notify.{args.user}."
    sub.setsockopt_string(zmq.SUBSCRIBE, prefix)
    secure(sub, "notifier")
    sub.connect(args.notifier_events)
    time.sleep(0.3)
    print(f"subscribed to {prefix} at {args.notifier_events} for {args.wait:g} s", flush=True)
    deadline = time.monotonic() + args.wait
    received = 0
    while received < args.count:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not sub.poll(int(remaining * 1000)):
            break
        topic, envelope = sub.recv_multipart()
        event = json.loads(envelope)
        n = event["data"]
        print(f"notification {n['notificationId']}: {n['title']} / {n['body']} "
              f"(actions: {', '.join(a['id'] for a in n['actions'])})", flush=True)
        received += 1
    if received < args.count:
        print(f"{received} notification(s) within {args.wait:g} s", flush=True)
    pub.close()
    ctx.destroy(linger=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
