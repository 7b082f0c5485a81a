#!/usr/bin/env python3
"""A Smart Reminders client in Python, written from Shared/Schema/PROTOCOL.md alone (pyzmq).

1. logs a session through the session logger's api (REQ) and prints the ack;
2. logs a NoAlc check-in fire-and-forget through the intake (PUB, topic "intake");
3. follows the user's notifications on the notifier's events (SUB "notify.<user>.") for at most --wait seconds.

Exit status: 0 ok, 1 the service answered with an error, 3 it did not answer within --timeout.
"""
import argparse
import datetime as dt
import json
import sys
import time
import uuid

import zmq


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
    args = p.parse_args()
    ctx = zmq.Context()

    # 1. Request/reply: one JSON frame out, one back (REQ adds the empty delimiter ROUTER expects).
    if args.start:
        start = dt.datetime.fromisoformat(args.start.replace("Z", "+00:00"))
    else:
        start = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(minutes=args.minutes)
    end = start + dt.timedelta(minutes=args.minutes)
    request = {"v": 1, "op": "session.log", "data": {
        "id": str(uuid.uuid4()), "userId": args.user, "activity": args.activity,
        "start": start.isoformat(), "end": end.isoformat(), "source": "python-client"}}
    req = ctx.socket(zmq.REQ)
    req.setsockopt(zmq.LINGER, 0)
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
